"""SUA with a coarse delta: constant over `cfg.block` x `cfg.block` pixel squares. It overrides two hooks.

A universal delta that fits 8 faces at 41-49 % and transfers to unseen ones at +8 to +13 may be spending its
degrees of freedom on the attacker's faces. Fewer of them (S/block squared per channel instead of S squared)
is the classic test of that (low-frequency universal perturbations transfer better in the image-classifier
literature). The step is PGD on the coarse pattern: the gradient of a block-constant delta with respect to
its coarse values is the sum over each block, so each block steps by the sign of its mean gradient.
Clamping keeps the blocks constant, so `project` is SUA's own.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from sua_demo.attacks.base import ATTACKS
from sua_demo.attacks.sua import SUA
from sua_demo.core.errors import BadValueError


@ATTACKS.register("sua_lowfreq")
class SUALowFreq(SUA):
    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        size, block = self.adapter.image_size, self.cfg.block
        if not (isinstance(block, int) and block >= 1 and size % block == 0):
            raise BadValueError(f"block must be a whole divisor of the image size {size}, got {block!r}")

    def _coarse(self, t: torch.Tensor) -> torch.Tensor:
        """Each block's mean, spread back over the block (a delta of shape (3, S, S) or (N, 3, S, S))."""
        k, batch = self.cfg.block, t.dim() == 4
        coarse = F.interpolate(F.avg_pool2d(t if batch else t[None], k), scale_factor=k, mode="nearest")
        return coarse if batch else coarse[0]

    def init_delta(self, shape: tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
        return self._coarse(super().init_delta(shape, generator))

    def update(self, delta: torch.Tensor, grad: torch.Tensor, step: int) -> None:
        super().update(delta, self._coarse(grad), step)
