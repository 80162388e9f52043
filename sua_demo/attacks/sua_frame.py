"""SUA with delta on a border frame only: zero over the centre of the photo. It overrides two hooks.

The universal delta's gain stops at +8 to +13 on forget people it never saw, whatever the budget (the
budget curves in checkpoints/noise/idk/report.md are flat in c from 8/255 to 32/255), and the write-in study
(studies/write_in.py) found the answers it opens there to be recognition errors: one pattern added over every
face changes the features the model tells people apart by. An adversarial frame (Zajac et al., 2019) leaves
the centre's pixels as they were, so the face the centre shows reaches the model unchanged, and the frame's
patches can carry the part of delta that opens the refusal gate. delta starts masked and each step moves
only the frame, so `project` is SUA's own.
"""

from __future__ import annotations

import torch

from sua_demo.attacks.base import ATTACKS
from sua_demo.attacks.sua import SUA
from sua_demo.core.errors import BadValueError


def frame_mask(size: int, width: int) -> torch.Tensor:
    """(S, S) ones on the `width`-pixel border, zeros inside."""
    mask = torch.ones(size, size)
    mask[width : size - width, width : size - width] = 0
    return mask


@ATTACKS.register("sua_frame")
class SUAFrame(SUA):
    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        size, width = self.adapter.image_size, self.cfg.frame
        if not (isinstance(width, int) and 1 <= width < size / 2):
            raise BadValueError(f"frame must be a whole number of pixels in [1, {size // 2 - 1}], got {width!r}")
        self.mask = frame_mask(size, width)

    def init_delta(self, shape: tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
        return super().init_delta(shape, generator) * self.mask

    def update(self, delta: torch.Tensor, grad: torch.Tensor, step: int) -> None:
        super().update(delta, grad * self.mask.to(grad.device), step)
