"""Denoisers map (N, 3, H, W) images in [0, 1] to the same shape in [0, 1].

The attack differentiates through them. A denoiser that cannot be differentiated (JPEG) uses a
straight-through estimate (BPDA): the forward pass is the real denoiser, the backward pass is the
identity, so the gradient still reaches delta.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch

from sua_demo.core.registry import Registry


class Denoiser(torch.nn.Module, ABC):
    @abstractmethod
    def denoise(self, x: torch.Tensor) -> torch.Tensor:
        """The denoiser itself."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.ndim != 4 or x.shape[1] != 3:
            raise ValueError(f"denoisers take (N, 3, H, W) images, got shape {tuple(x.shape)}")
        return self.denoise(x).clamp(0, 1)


class StraightThrough(torch.autograd.Function):
    """y = f(x) forward, dy/dx = I backward."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        return y

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None]:  # type: ignore[override]
        return grad, None


def straight_through(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return StraightThrough.apply(x, y.detach())


DENOISERS: Registry[Denoiser] = Registry("denoiser")
