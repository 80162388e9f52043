"""Photo jitter: random shift, scale, small rotation and brightness, as a new photo of the same person would be.
Training uses it as augmentation; the attack as its expectation over transformation (EOT)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def photo_jitter(
    x: torch.Tensor,
    generator: torch.Generator,
    shift: float = 0.06,
    scale: float = 0.08,
    degrees: float = 8.0,
    brightness: float = 0.15,
    strength: float = 1.0,
) -> torch.Tensor:
    """(N, 3, H, W) in [0, 1] -> randomly jittered copies, one random transform per image; `strength` scales
    every range at once (0.5: half the shift, scale, angle and brightness change)."""
    n = x.shape[0]
    shift, scale, degrees, brightness = (v * strength for v in (shift, scale, degrees, brightness))

    def u(lo: float, hi: float) -> torch.Tensor:
        return lo + (hi - lo) * torch.rand(n, generator=generator)

    angle = u(-degrees, degrees) * math.pi / 180
    s = u(1 - scale, 1 + scale)
    cos, sin = torch.cos(angle) / s, torch.sin(angle) / s
    theta = torch.stack(
        [torch.stack([cos, -sin, u(-shift, shift) * 2], 1), torch.stack([sin, cos, u(-shift, shift) * 2], 1)], 1
    ).to(x.device, x.dtype)
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    out = F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)
    return (out * u(1 - brightness, 1 + brightness).to(x.device, x.dtype).view(n, 1, 1, 1)).clamp(0, 1)
