"""Random-noise baseline: uniform noise of the same eps. If it 'recovers' answers, the metric is noise-sensitive,
not the model leaky."""

from __future__ import annotations

from dataclasses import replace

import torch

from sua_demo.attacks.base import ATTACKS, AttackConfig, UniversalAttack
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, ImageBank


@ATTACKS.register("random")
class RandomNoise(UniversalAttack):
    """delta ~ U(-eps, eps) per pixel, drawn from the seed: the start of a random-start attack, with no steps."""

    def __init__(self, adapter: VisionLanguageAdapter, cfg: AttackConfig) -> None:
        super().__init__(adapter, replace(cfg, steps=0, random_start=True))

    def objective(
        self, x: torch.Tensor, delta: torch.Tensor, chunk: list[Example], retain: list[Example] | None, bank: ImageBank
    ) -> tuple[torch.Tensor, dict[str, float]]:
        raise TypeError("random noise is drawn, not optimised")
