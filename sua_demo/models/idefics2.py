"""Idefics2 adapter (HuggingFaceM4/idefics2-8b, and MLLMU-Bench's released Idefics2 models).

Resolution: the processor scales a photo so its shortest edge is `size["shortest_edge"]` (378 px for idefics2-8b),
keeping the aspect ratio. A universal noise needs one shape, so the attack works on squares of that side: a
square photo is then left at that size, so `prepare_images` matches the processor exactly. Image splitting
(off in idefics2-8b's processor) stays off. The perceiver resampler turns each photo into `image_seq_len`
(64) tokens between two `<fake_token_around_image>` markers; the prompt ids come from the processor itself.
"""

from __future__ import annotations

from functools import cached_property

import torch
from PIL import Image

from sua_demo.models.base import ADAPTERS
from sua_demo.models.idefics3 import Idefics3Adapter


@ADAPTERS.register("idefics2")
class Idefics2Adapter(Idefics3Adapter):
    model_types = ("idefics2",)

    @cached_property
    def image_size(self) -> int:
        return int(self.processor.image_processor.size["shortest_edge"])

    def prepare_images(self, images: list[Image.Image]) -> torch.Tensor:
        side = self.image_size
        rgb = [[im.convert("RGB").resize((side, side), Image.BICUBIC)] for im in images]
        out = self.processor.image_processor(rgb, do_normalize=False, do_image_splitting=False, return_tensors="pt")
        return out["pixel_values"][:, 0].float().clamp(0, 1)

    @cached_property
    def _n_image_tokens(self) -> int:
        return int(self.model.config.perceiver_config.resampler_n_latents)

    def _prompt_ids(self, question: str, with_image: bool) -> tuple[int, ...]:
        """The processor's own ids (it also decides the spacing after the closing marker)."""
        if not with_image:
            return super()._prompt_ids(question, with_image)
        blank = Image.new("RGB", (self.image_size, self.image_size))
        text = self.prompt_text(question, with_image=True)
        out = self.processor(text=[text], images=[[blank]], do_image_splitting=False, add_special_tokens=False)
        return tuple(int(i) for i in out["input_ids"][0])

    def image_token_block(self) -> str:
        fake = self.processor.fake_image_token
        return f"{fake}{self.processor.image_token * self._n_image_tokens}{fake}"
