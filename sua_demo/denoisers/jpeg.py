"""JPEG re-encoding: a classic input purifier. Not differentiable, so the backward pass is straight-through."""

from __future__ import annotations

import io

import numpy as np
import torch
from PIL import Image

from sua_demo.denoisers.base import DENOISERS, Denoiser, straight_through


@DENOISERS.register("jpeg")
class JPEG(Denoiser):
    def __init__(self, quality: int = 75) -> None:
        super().__init__()
        if not 1 <= quality <= 95:
            raise ValueError("JPEG quality must be in 1..95")
        self.quality = quality

    def _encode(self, img: torch.Tensor) -> torch.Tensor:
        arr = (img.detach().float().clamp(0, 1).permute(1, 2, 0).cpu().numpy() * 255).round().astype(np.uint8)
        buf = io.BytesIO()
        Image.fromarray(arr).save(buf, format="JPEG", quality=self.quality)
        out = np.asarray(Image.open(buf).convert("RGB"), dtype=np.float32) / 255
        return torch.from_numpy(out).permute(2, 0, 1)

    def denoise(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.stack([self._encode(i) for i in x]).to(x.device, x.dtype)
        return straight_through(x, y)
