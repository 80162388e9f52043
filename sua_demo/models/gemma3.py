"""Gemma 3 adapter (google/gemma-3-4b-it and up).

Resolution: the processor resizes every photo to its fixed square (896 px for the released models) without
cropping, and pan-and-scan is off by default, so one photo is always `mm_tokens_per_image` (256) image tokens
between `<start_of_image>` and `<end_of_image>`; `prepare_images` is the processor itself without the
normalisation. Gemma 3 lets image tokens attend to each other both ways: its forward needs `token_type_ids`
(1 on image tokens) for that mask, so the one-pass forward and `generate` pass them as the processor would.
The placeholder in the prompt text is the begin-of-image token, which the processor expands; the prompt ids
come from the processor itself.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import torch
from PIL import Image

from sua_demo.models.base import ADAPTERS, VisionLanguageAdapter


@ADAPTERS.register("gemma3")
class Gemma3Adapter(VisionLanguageAdapter):
    model_types = ("gemma3",)
    takes_embeddings = False  # its forward also needs the token types (lm_forward)

    @cached_property
    def image_size(self) -> int:
        return int(self.processor.image_processor.size["height"])

    @property
    def image_token_id(self) -> int:
        return int(self.model.config.image_token_id)

    def prepare_images(self, images: list[Image.Image]) -> torch.Tensor:
        rgb = [im.convert("RGB") for im in images]
        out = self.processor.image_processor(rgb, do_normalize=False, do_pan_and_scan=False, return_tensors="pt")
        return out["pixel_values"].float().clamp(0, 1)

    def pixel_values(self, x: torch.Tensor) -> torch.Tensor:
        mean, std = self._mean_std
        dtype = next(self.model.parameters()).dtype
        x = x.to(self.device)
        return ((x - mean.to(x.device)) / std.to(x.device)).to(dtype)

    def _prompt_ids(self, question: str, with_image: bool) -> tuple[int, ...]:
        if not with_image:
            return super()._prompt_ids(question, with_image)
        blank = Image.new("RGB", (self.image_size, self.image_size))
        text = self.prompt_text(question, with_image=True)
        out = self.processor(text=[text], images=[[blank]], add_special_tokens=False)
        return tuple(int(i) for i in out["input_ids"][0])

    def image_token_block(self) -> str:  # unused: the prompt ids come from the processor
        return self.processor.full_image_sequence

    def image_features(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self.model.get_image_features(pixel_values=pixel_values).pooler_output

    def _types(self, input_ids: torch.Tensor) -> torch.Tensor:
        return (input_ids == self.image_token_id).long()

    def lm_forward(
        self, batch: dict[str, torch.Tensor], features: torch.Tensor | None, logits_to_keep: int | torch.Tensor
    ) -> torch.Tensor:
        """The forward with the token types Gemma 3's bidirectional image attention needs."""
        ids = batch["input_ids"]
        return self.model(
            inputs_embeds=self.embed_inputs(ids, features),
            attention_mask=batch["attention_mask"],
            token_type_ids=self._types(ids),
            logits_to_keep=logits_to_keep,
        ).logits

    def image_inputs(self, input_ids: torch.Tensor, images: torch.Tensor) -> dict[str, Any]:
        return {"pixel_values": self.pixel_values(images), "token_type_ids": self._types(input_ids)}
