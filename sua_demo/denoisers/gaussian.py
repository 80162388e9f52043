"""Gaussian blur: the simplest purifier; small adversarial noise is high-frequency and blurs away."""

from __future__ import annotations

import torch

from sua_demo.denoisers.base import DENOISERS, Denoiser


@DENOISERS.register("gaussian")
class GaussianBlur(Denoiser):
    """Separable blur with reflect padding, written as two (S, S) matrix products: B_h @ x @ B_w^T.

    Same result as two depthwise convolutions over a reflect-padded image (tests check it), but the
    attack differentiates through it at every step, and CPU depthwise-conv backward was slower than the
    whole vision tower; a product with a small banded matrix costs next to nothing.
    """

    def __init__(self, sigma: float = 1.0, kernel_size: int = 5) -> None:
        super().__init__()
        if sigma <= 0 or kernel_size % 2 == 0:
            raise ValueError("sigma must be > 0 and kernel_size odd")
        r = torch.arange(kernel_size, dtype=torch.float32) - kernel_size // 2
        k = torch.exp(-(r**2) / (2 * sigma**2))
        self.register_buffer("kernel", k / k.sum())
        self.pad = kernel_size // 2

    def blur_matrix(self, n: int) -> torch.Tensor:
        """(n, n) matrix B with (B @ v)[i] = sum_j k[j] * v[reflect(i + j - pad)]."""
        if n <= self.pad:
            raise ValueError(f"images must be larger than {self.pad} px per side to blur, got {n}")
        src = torch.arange(n).view(n, 1) + torch.arange(len(self.kernel)).view(1, -1) - self.pad
        src = src.abs()  # reflect at the start: -1 -> 1
        src = torch.where(src >= n, 2 * (n - 1) - src, src)  # and at the end: n -> n - 2
        rows = torch.arange(n).view(n, 1).expand_as(src)
        out = torch.zeros(n, n, dtype=self.kernel.dtype, device=self.kernel.device)
        return out.index_put_((rows, src), self.kernel.expand_as(src), accumulate=True)

    def denoise(self, x: torch.Tensor) -> torch.Tensor:
        h, w = x.shape[-2:]
        bh = self.blur_matrix(h).to(x.dtype)
        bw = bh if w == h else self.blur_matrix(w).to(x.dtype)
        return bh @ x @ bw.T
