"""LLaVA-NeXT adapter (llava-hf/llava-v1.6-*), with one fixed "anyres" grid.

LLaVA-NeXT picks, per photo, a grid of tiles from `image_grid_pinpoints` by its aspect ratio and size, so the
number of image tokens moves from photo to photo. A universal noise needs one shape, so the attack fixes the
grid to a single tile at the vision tower's own resolution (`image_grid_pinpoints = [[S, S]]`, S = 336 for
v1.6), on both the processor and the model config: a square photo of side S is then seen twice, as the
global view and as its one tile, with the newline tokens LLaVA-NeXT adds to each row of the tile. No weight
depends on the pinpoints; the released models simply never see their other grids here. Prompt ids come from
the processor, which counts those tokens.
"""

from __future__ import annotations

from typing import Any

import torch
from PIL import Image

from sua_demo.models.base import ADAPTERS
from sua_demo.models.llava import LlavaAdapter


@ADAPTERS.register("llava_next")
class LlavaNextAdapter(LlavaAdapter):
    model_types = ("llava_next",)

    def __init__(self, model: Any, processor: Any, source: str = "") -> None:
        super().__init__(model, processor, source)
        grid = [[self.image_size, self.image_size]]  # one tile: the fixed grid the attack works on
        processor.image_processor.image_grid_pinpoints = grid
        model.config.image_grid_pinpoints = grid

    def prepare_images(self, images: list[Image.Image]) -> torch.Tensor:
        side = self.image_size
        rgb = [im.convert("RGB").resize((side, side), Image.BICUBIC) for im in images]
        out = self.processor.image_processor(rgb, do_normalize=False, return_tensors="pt")
        return out["pixel_values"][:, 0].float().clamp(0, 1)  # the global view; the one tile is the same

    def pixel_values(self, x: torch.Tensor) -> torch.Tensor:
        """(N, 3, S, S) -> (N, 2, 3, S, S): the global view and the grid's one tile."""
        one = super().pixel_values(x)
        return torch.stack([one, one], dim=1)

    def _sizes(self, n: int) -> torch.Tensor:
        return torch.tensor([[self.image_size, self.image_size]] * n, device=self.device)

    def _prompt_ids(self, question: str, with_image: bool) -> tuple[int, ...]:
        if not with_image:
            return super()._prompt_ids(question, with_image)
        blank = Image.new("RGB", (self.image_size, self.image_size))
        out = self.processor(text=[self.prompt_text(question, with_image=True)], images=[blank])
        return tuple(int(i) for i in out["input_ids"][0])

    def image_features(self, pixel_values: torch.Tensor) -> torch.Tensor:
        cfg = self.model.config
        feats = self.model.get_image_features(
            pixel_values=pixel_values,
            image_sizes=self._sizes(pixel_values.shape[0]),
            vision_feature_layer=cfg.vision_feature_layer,
            vision_feature_select_strategy=cfg.vision_feature_select_strategy,
        ).pooler_output  # one (tokens, D) tensor per photo; with one grid they all have the same length
        return (
            torch.stack(list(feats))
            if isinstance(feats, (list, tuple))
            else feats.reshape(pixel_values.shape[0], -1, feats.shape[-1])
        )

    def image_inputs(self, input_ids: torch.Tensor, images: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"pixel_values": self.pixel_values(images), "image_sizes": self._sizes(images.shape[0])}
