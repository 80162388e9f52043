"""Qwen2-VL and Qwen2.5-VL adapter.

Resolution: these models take any image size (the processor rescales each photo to a multiple of
patch_size * merge_size, 28 px, between min_pixels and max_pixels). A universal noise needs ONE
shape, so the attack fixes a square side: `resolution` (448 px: 16 x 16 merged tokens = 256 image
tokens per photo, close to the processor's own size for a portrait photo and cheap to batch), rounded
down to a multiple of 28 and shrunk to fit max_pixels (tiny test configs get their small size this
way). Photos are resized to that square with PIL bicubic, the resampling the processor uses; on a
square photo of that side the processor's own resize is the identity, so our `pixel_values` equal the
processor's. `pixel_values` reproduces the processor's patch flattening in torch (merge-size order,
each frame repeated temporal_patch_size times), so gradients reach the pixels.
"""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np
import torch
from PIL import Image
from transformers.modeling_outputs import BaseModelOutputWithPooling

from sua_demo.models.base import ADAPTERS, VisionLanguageAdapter


@ADAPTERS.register("qwen2_vl")
class Qwen2VLAdapter(VisionLanguageAdapter):
    vision_attr = "visual"
    model_types = ("qwen2_vl", "qwen2_5_vl")
    resolution = 448  # the attack's square side before fitting it to the processor's limits (see above)
    takes_embeddings = False  # its forward builds M-RoPE positions from the image grid (lm_forward)

    @cached_property
    def _geometry(self) -> tuple[int, int, int]:
        """(patch_size, merge_size, temporal_patch_size) as the processor flattens them."""
        ip = self.processor.image_processor
        return int(ip.patch_size), int(ip.merge_size), int(ip.temporal_patch_size)

    @cached_property
    def image_size(self) -> int:
        patch, merge, _ = self._geometry
        factor = patch * merge
        size = self.processor.image_processor.size
        side = min(self.resolution, math.isqrt(int(size["longest_edge"])))
        side = max(factor, side // factor * factor)
        if side * side < int(size["shortest_edge"]):
            side = math.ceil(math.sqrt(int(size["shortest_edge"])) / factor) * factor
        return side

    @cached_property
    def _grid(self) -> tuple[int, int, int]:
        side = self.image_size // self._geometry[0]
        return 1, side, side

    def prepare_images(self, images: list[Image.Image]) -> torch.Tensor:
        side = self.image_size
        arrays = [np.asarray(im.convert("RGB").resize((side, side), Image.BICUBIC)) for im in images]
        return torch.from_numpy(np.stack(arrays)).permute(0, 3, 1, 2).float() / 255

    def pixel_values(self, x: torch.Tensor) -> torch.Tensor:
        """(N, 3, S, S) -> (N * grid_h * grid_w, 3 * temporal * patch * patch), the processor's layout."""
        patch, merge, temporal = self._geometry
        mean, std = self._mean_std
        x = (x.to(self.device).float() - mean.to(self.device)) / std.to(self.device)
        n, c = x.shape[:2]
        g = self.image_size // patch // merge
        x = x.reshape(n, c, g, merge, patch, g, merge, patch).permute(0, 2, 5, 3, 6, 1, 4, 7)
        x = x.unsqueeze(6).expand(*x.shape[:6], temporal, patch, patch)
        dtype = next(self.model.parameters()).dtype
        return x.reshape(n * g * g * merge * merge, c * temporal * patch * patch).to(dtype)

    def grid_thw(self, n: int) -> torch.Tensor:
        return torch.tensor([self._grid] * n, dtype=torch.long, device=self.device)

    def image_token_block(self) -> str:
        _, merge, _ = self._geometry
        t, h, w = self._grid
        return self.processor.image_token * (t * h * w // merge**2)

    def image_features(self, pixel_values: torch.Tensor) -> torch.Tensor:
        t, h, w = self._grid
        n = pixel_values.shape[0] // (t * h * w)
        feats = self.model.get_image_features(pixel_values=pixel_values, image_grid_thw=self.grid_thw(n)).pooler_output
        return torch.stack(list(feats))

    def lm_forward(
        self, batch: dict[str, torch.Tensor], features: torch.Tensor | None, logits_to_keep: int | torch.Tensor
    ) -> torch.Tensor:
        """The model's own forward with precomputed image features: it builds the 3-D (M-RoPE) positions
        from the image grid, which scattering features into `inputs_embeds` alone would lose."""
        ids = batch["input_ids"]
        if features is None:
            return self.model(
                input_ids=ids, attention_mask=batch["attention_mask"], logits_to_keep=logits_to_keep
            ).logits
        return self.model(
            input_ids=ids,
            attention_mask=batch["attention_mask"],
            image_grid_thw=self.grid_thw(features.shape[0]),
            mm_token_type_ids=(ids == self.image_token_id).int(),
            mm_encoder_outputs={"image": BaseModelOutputWithPooling(pooler_output=tuple(features))},
            logits_to_keep=logits_to_keep,
        ).logits

    def image_inputs(self, input_ids: torch.Tensor, images: torch.Tensor) -> dict[str, torch.Tensor]:
        return {
            "pixel_values": self.pixel_values(images),
            "image_grid_thw": self.grid_thw(images.shape[0]),
            "mm_token_type_ids": (input_ids == self.image_token_id).int(),
        }
