"""Random-noise baseline: uniform noise of the same eps. If it 'recovers' answers, the metric is noise-sensitive,
not the model leaky."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from sua_demo.attacks.base import ATTACKS, UniversalAttack
from sua_demo.attacks.noise import Noise
from sua_demo.data import Example, ImageBank


@ATTACKS.register("random")
class RandomNoise(UniversalAttack):
    def objective(self, x, delta, chunk, retain, bank):  # type: ignore[no-untyped-def]
        raise TypeError("random noise is drawn, not optimised")

    def run(
        self,
        bank: ImageBank,
        examples: list[Example],
        retain: list[Example] | None = None,
        checkpoint: str | Path | None = None,
        callback: Any = None,
        progress: bool = True,
        meta: dict[str, Any] | None = None,
    ) -> Noise:
        gen = torch.Generator().manual_seed(self.cfg.seed)
        size = self.adapter.image_size
        delta = (torch.rand(3, size, size, generator=gen) * 2 - 1) * self.cfg.eps
        return Noise(delta, self.cfg.eps, {"model": self.adapter.source, **(meta or {}), "config": asdict(self.cfg)})
