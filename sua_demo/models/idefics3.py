"""Idefics3 and SmolVLM adapter.

Resolution: by default these processors split a photo into a grid of tiles plus a global view, so the
number of image tokens depends on the photo's size. A universal noise needs one shape, so the attack
switches splitting off (`do_image_splitting=False`) and keeps only the global view: the processor
resizes the photo's longest edge to `size["longest_edge"]`, then to the square side
`max_image_size["longest_edge"]` (364 px for Idefics3-8B, 384/512 px for SmolVLM), both with its own
resampling, and the prompt holds one `<fake_token_around_image><global-img><image>...` block. We call
the processor itself for that resize, so `prepare_images` matches it exactly; normalisation happens in
torch so gradients reach the pixels.
"""

from __future__ import annotations

from functools import cached_property

import torch
from PIL import Image

from sua_demo.models.base import ADAPTERS, VisionLanguageAdapter

FAKE_TOKEN, GLOBAL_TOKEN = "<fake_token_around_image>", "<global-img>"  # both processors' defaults


@ADAPTERS.register("idefics3")
class Idefics3Adapter(VisionLanguageAdapter):
    vision_attr = "vision_model"
    model_types = ("idefics3", "smolvlm")

    @cached_property
    def image_size(self) -> int:
        return int(self.processor.image_processor.max_image_size["longest_edge"])

    def prepare_images(self, images: list[Image.Image]) -> torch.Tensor:
        rgb = [[im.convert("RGB")] for im in images]  # one image per sample, not one sample of N images
        out = self.processor.image_processor(rgb, do_normalize=False, do_image_splitting=False, return_tensors="pt")
        return out["pixel_values"][:, 0].float().clamp(0, 1)

    def pixel_values(self, x: torch.Tensor) -> torch.Tensor:
        """(N, 3, S, S) -> (N, 1, 3, S, S): one image (the global view) per prompt."""
        mean, std = self._mean_std
        dtype = next(self.model.parameters()).dtype
        x = (x.to(self.device).float() - mean.to(self.device)) / std.to(self.device)
        return x.unsqueeze(1).to(dtype)

    @cached_property
    def _n_image_tokens(self) -> int:
        """image_seq_len = (image_size / patch_size)^2 / scale_factor^2, from the model (a processor may lack it)."""
        cfg = self.model.config
        vision = cfg.vision_config
        return int((vision.image_size // vision.patch_size) ** 2 // cfg.scale_factor**2)

    def image_token_block(self) -> str:
        p, tok = self.processor, self.processor.image_token
        fake = getattr(p, "fake_image_token", FAKE_TOKEN)
        glob = getattr(p, "global_image_token", getattr(p, "global_image_tag", GLOBAL_TOKEN))
        return f"{fake}{glob}{tok * self._n_image_tokens}{fake}"

    def image_features(self, pixel_values: torch.Tensor) -> torch.Tensor:
        feats = self.model.get_image_features(pixel_values=pixel_values).pooler_output
        return torch.stack(list(feats))
