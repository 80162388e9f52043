"""Per-image PGD: one delta per image (not universal). The upper bound of what eps can do to a seen image,
and the baseline that shows how much universality costs."""

from __future__ import annotations

import torch
from tqdm.auto import tqdm

from sua_demo.attacks.base import AttackConfig
from sua_demo.data import Example, ImageBank, batches
from sua_demo.models.base import VisionLanguageAdapter


def per_image_pgd(
    adapter: VisionLanguageAdapter, bank: ImageBank, examples: list[Example], cfg: AttackConfig, progress: bool = True
) -> torch.Tensor:
    """(N, 3, S, S) perturbed images in the order of `examples`, one PGD-sign run per example (its own question
    and answer). Batches group examples by task, so rows are put back where their examples came from."""
    adapter.model.eval()
    adapter.model.requires_grad_(False)
    row = {id(e): i for i, e in enumerate(examples)}
    out: list[torch.Tensor | None] = [None] * len(examples)
    for chunk in tqdm(batches(examples, cfg.batch_size), desc="per-image PGD", disable=not progress):
        x = bank.get(chunk)
        if x is None:
            raise ValueError("per-image PGD needs image examples")
        q, a = [e.item.question for e in chunk], [e.item.answer for e in chunk]
        delta = torch.zeros_like(x, requires_grad=True)
        for _ in range(cfg.steps):
            loss = adapter.answer_nll((x + delta).clamp(0, 1), q, a).sum()
            (grad,) = torch.autograd.grad(loss, delta)
            with torch.no_grad():
                delta -= cfg.alpha * grad.sign()
                delta.clamp_(-cfg.eps, cfg.eps)
        for e, adv in zip(chunk, (x + delta.detach()).clamp(0, 1), strict=True):
            out[row[id(e)]] = adv
    return torch.stack(out)  # type: ignore[arg-type]
