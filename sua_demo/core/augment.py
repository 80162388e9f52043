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


def light_jitter(x: torch.Tensor, generator: torch.Generator, strength: float = 0.35) -> torch.Tensor:
    """(N, 3, H, W) in [0, 1] -> each image under a light from a random side and of a random colour: brightness
    ramps linearly across it by up to `strength` towards the lit side (and as much away on the other), and the lit
    side turns warmer or cooler. A standard colour-and-light augmentation, of the kind a new photo of a person
    shows (the faithful bench's photos vary so, dataset/faces.py); photo_jitter draws framing and brightness only."""
    n, _, h, w = x.shape

    def u(lo: float, hi: float) -> torch.Tensor:
        return (lo + (hi - lo) * torch.rand(n, generator=generator)).to(x.device, x.dtype).view(n, 1, 1)

    angle, power, warmth = u(-math.pi, math.pi), u(0.0, strength), u(-1.0, 1.0)
    across = (torch.arange(w, device=x.device, dtype=x.dtype) + 0.5) / w * 2 - 1
    down = (torch.arange(h, device=x.device, dtype=x.dtype) + 0.5) / h * 2 - 1
    ramp = (torch.cos(angle) * across.view(1, 1, w) + torch.sin(angle) * down.view(1, h, 1)) / math.sqrt(2)
    tint = 0.08 * warmth * (1 + ramp) / 2
    channels = torch.tensor([1.0, 0.0, -1.0], device=x.device, dtype=x.dtype).view(1, 3, 1, 1)
    return (x * (1 + power * ramp).unsqueeze(1) * (1 + tint.unsqueeze(1) * channels)).clamp(0, 1)
