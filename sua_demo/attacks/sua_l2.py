"""SUA under an L2 budget: the same objective, another norm. It overrides only the three hooks.

The budget is the root-mean-square of delta: ||delta||_2 <= eps * sqrt(D), D = 3 * S * S pixel values, so at
eps = 16/255 the ball has the L-inf ball's corners on its surface but lets delta spend that energy where the
gradient points. A step moves by alpha * sqrt(D) along the normalised gradient (each image's own, for a delta
per image). The saved noise declares its largest |value| as its L-inf eps, which load_noise checks.
"""

from __future__ import annotations

import torch

from sua_demo.attacks.base import ATTACKS, AttackConfig
from sua_demo.attacks.sua import SUA
from sua_demo.core.errors import BadValueError
from sua_demo.models.base import VisionLanguageAdapter


def _size(t: torch.Tensor) -> int:
    """D: the pixel values of one delta (the last three dimensions)."""
    return t.shape[-3] * t.shape[-2] * t.shape[-1]


def _norms(t: torch.Tensor) -> torch.Tensor:
    """The L2 norm of each delta, (1, 1, 1) for one delta or (N, 1, 1, 1) for one per image."""
    return t.flatten(-3).norm(dim=-1)[..., None, None, None]


@ATTACKS.register("sua_l2")
class SUAL2(SUA):
    norm = "l2"

    def __init__(self, adapter: VisionLanguageAdapter, cfg: AttackConfig) -> None:
        if cfg.optimizer != "pgd":  # its step is the normalised gradient; the others are sign steps of the L-inf ball
            raise BadValueError(f"sua_l2 steps along the normalised gradient; optimizer {cfg.optimizer!r} is for the "
                                "L-inf attacks (use optimizer 'pgd' here)")  # fmt: skip
        super().__init__(adapter, cfg)

    def init_delta(self, shape: tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
        if not self.cfg.random_start:
            return torch.zeros(shape)
        delta = torch.randn(shape, generator=generator)
        return delta / _norms(delta) * 0.5 * self.cfg.eps * (shape[-3] * shape[-2] * shape[-1]) ** 0.5

    def update(self, delta: torch.Tensor, grad: torch.Tensor, step: int) -> None:
        delta -= self.step_size(step) * _size(delta) ** 0.5 * grad / _norms(grad).clamp(min=1e-12)

    def project(self, delta: torch.Tensor) -> None:
        radius = self.cfg.eps * _size(delta) ** 0.5
        delta *= (radius / _norms(delta).clamp(min=1e-12)).clamp(max=1.0)
        delta.clamp_(-1.0, 1.0)

    def noise_eps(self, delta: torch.Tensor) -> float:
        return max(float(delta.abs().max()), 1e-6)
