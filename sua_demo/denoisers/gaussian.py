"""Gaussian blur: the simplest purifier; small adversarial noise is high-frequency and blurs away."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from sua_demo.denoisers.base import DENOISERS, Denoiser


@DENOISERS.register("gaussian")
class GaussianBlur(Denoiser):
    def __init__(self, sigma: float = 1.0, kernel_size: int = 5) -> None:
        super().__init__()
        if sigma <= 0 or kernel_size % 2 == 0:
            raise ValueError("sigma must be > 0 and kernel_size odd")
        r = torch.arange(kernel_size, dtype=torch.float32) - kernel_size // 2
        k = torch.exp(-(r**2) / (2 * sigma**2))
        self.register_buffer("kernel", (k / k.sum()).view(1, 1, 1, -1))
        self.pad = kernel_size // 2

    def denoise(self, x: torch.Tensor) -> torch.Tensor:
        k = self.kernel.to(x.dtype).expand(3, 1, 1, -1)
        x = F.conv2d(F.pad(x, (self.pad, self.pad, 0, 0), mode="reflect"), k, groups=3)
        return F.conv2d(F.pad(x, (0, 0, self.pad, self.pad), mode="reflect"), k.transpose(2, 3), groups=3)
