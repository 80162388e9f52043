"""LLaVA-family adapter: the tiny embedded default and llava-hf/llava-1.5-* alike."""

from __future__ import annotations

from functools import cached_property

import torch
from PIL import Image

from sua_demo.models.base import ADAPTERS, VisionLanguageAdapter


@ADAPTERS.register("llava")
class LlavaAdapter(VisionLanguageAdapter):
    model_types = ("llava",)

    @cached_property
    def image_size(self) -> int:
        crop = self.processor.image_processor.crop_size
        return int(crop["height"])

    def prepare_images(self, images: list[Image.Image]) -> torch.Tensor:
        rgb = [im.convert("RGB") for im in images]
        out = self.processor.image_processor(rgb, do_normalize=False, return_tensors="pt")
        return out["pixel_values"].float().clamp(0, 1)

    def pixel_values(self, x: torch.Tensor) -> torch.Tensor:
        mean, std = self._mean_std
        dtype = next(self.model.parameters()).dtype
        x = x.to(self.device)  # an attack may keep delta and the image bank on the CPU
        return ((x - mean.to(x.device)) / std.to(x.device)).to(dtype)

    @cached_property
    def _n_image_tokens(self) -> int:
        blank = Image.new("RGB", (self.image_size, self.image_size))
        text = self.prompt_text("x", with_image=True)
        ids = self.processor(text=[text], images=[blank], return_tensors="pt")["input_ids"][0]
        return int((ids == self.model.config.image_token_id).sum())

    def image_token_block(self) -> str:
        return self.processor.image_token * self._n_image_tokens

    def unread_vision_layers(self) -> list[torch.nn.Module]:
        """CLIP's layers after the one the projector reads (`vision_feature_layer`, -2 in LLaVA-1.5: one of its 24
        layers; one of the faithful tower's 4). Hidden state i is the output of layer i (0: the embeddings)."""
        chosen = self.model.config.vision_feature_layer
        chosen = [chosen] if isinstance(chosen, int) else list(chosen)
        tower = self.vision_tower
        encoder = getattr(getattr(tower, "vision_model", tower), "encoder", None)  # CLIP, either wrapping
        layers = getattr(encoder, "layers", None)
        if not isinstance(layers, torch.nn.ModuleList) or not all(isinstance(i, int) for i in chosen):
            return []
        return list(layers)[max(i % (len(layers) + 1) for i in chosen) :]

    def image_features(self, pixel_values: torch.Tensor) -> torch.Tensor:
        feats = self.model.get_image_features(pixel_values=pixel_values).pooler_output
        return torch.stack(list(feats)) if isinstance(feats, (list, tuple)) else feats
