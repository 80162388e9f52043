"""Stealth: how visible delta is in pixels, and whether a denoiser-based detector notices it in embeddings."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from skimage.metrics import structural_similarity
from sklearn.metrics import roc_auc_score

from sua_demo.denoisers.base import Denoiser
from sua_demo.models.base import VisionLanguageAdapter


def pixel_metrics(clean: torch.Tensor, noisy: torch.Tensor) -> dict[str, float]:
    """Mean over images of L-inf, L2, PSNR (dB) and SSIM of noisy against clean, (N, 3, H, W) in [0, 1]."""
    diff = (noisy - clean).flatten(1)
    mse = diff.pow(2).mean(1).clamp(min=1e-12)
    ssim = [
        structural_similarity(c.permute(1, 2, 0).numpy(), n.permute(1, 2, 0).numpy(), channel_axis=2, data_range=1.0)
        for c, n in zip(clean.double(), noisy.double(), strict=True)
    ]
    return {
        "linf": float(diff.abs().max(1).values.mean()),
        "l2": float(diff.norm(dim=1).mean()),
        "psnr": float((10 * torch.log10(1 / mse)).mean()),
        "ssim": float(np.mean(ssim)),
    }


@torch.inference_mode()
def denoise_shift(adapter: VisionLanguageAdapter, denoiser: Denoiser, x: torch.Tensor) -> torch.Tensor:
    """(N,) detector score 1 - cos(E(x), E(D(x))): how far the embedding moves when the input is denoised."""
    emb = adapter.image_embeddings(torch.cat([x, denoiser(x)])).float()
    n = x.shape[0]
    return 1 - F.cosine_similarity(emb[:n], emb[n:], dim=-1)


@torch.inference_mode()
def embedding_cosines(
    adapter: VisionLanguageAdapter, denoiser: Denoiser, clean: torch.Tensor, noisy: torch.Tensor
) -> dict[str, float]:
    emb = adapter.image_embeddings(torch.cat([clean, noisy, denoiser(noisy)])).float()
    c, n, d = emb.chunk(3)
    return {
        "cos_noisy_denoised": float(F.cosine_similarity(n, d, dim=-1).mean()),
        "cos_noisy_clean": float(F.cosine_similarity(n, c, dim=-1).mean()),
    }


def detector_auroc(clean_scores: torch.Tensor, attacked_scores: torch.Tensor) -> float:
    """AUROC of flagging attacked inputs by their score; 0.5 means the detector cannot tell them apart."""
    y = np.r_[np.zeros(len(clean_scores)), np.ones(len(attacked_scores))]
    s = np.r_[clean_scores.cpu().numpy(), attacked_scores.cpu().numpy()]  # a GPU's scores come back to count
    return float(roc_auc_score(y, s))
