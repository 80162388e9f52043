"""Median filter: removes impulse-like noise; differentiable almost everywhere (gradient to the median pixel)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from sua_demo.denoisers.base import DENOISERS, Denoiser


@DENOISERS.register("median")
class MedianFilter(Denoiser):
    def __init__(self, kernel_size: int = 3) -> None:
        super().__init__()
        if kernel_size % 2 == 0 or kernel_size < 3:
            raise ValueError("kernel_size must be odd and >= 3")
        self.k = kernel_size

    def denoise(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        p = self.k // 2
        patches = F.unfold(F.pad(x, (p, p, p, p), mode="reflect"), self.k)  # (N, C*k*k, H*W)
        patches = patches.view(n, c, self.k * self.k, h * w)
        return patches.median(dim=2).values.view(n, c, h, w)
