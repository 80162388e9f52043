"""Per-image PGD: one delta per image (not universal). The upper bound of what eps can do to a seen image,
and the baseline that shows how much universality costs. It is the SUA objective's answer term with one
delta per row, through the same hooks (`UniversalAttack.perturb_each`), without EOT or the stealth term."""

from __future__ import annotations

from dataclasses import replace

import torch
from tqdm.auto import tqdm

from sua_demo.attacks.base import ATTACKS, AttackConfig
from sua_demo.core.errors import BadValueError
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, ImageBank, batches


def per_image_pgd(
    adapter: VisionLanguageAdapter,
    bank: ImageBank,
    examples: list[Example],
    cfg: AttackConfig,
    progress: bool = True,
    attack: str = "sua",
) -> torch.Tensor:
    """(N, 3, S, S) perturbed images in the order of `examples`, one PGD run per example (its own question
    and answer). Batches group examples by task, so rows are put back where their examples came from."""
    runner = ATTACKS.get(attack)(adapter, replace(cfg, eot=False, stealth_weight=0.0, beta=0.0, retain_kl_weight=0.0))
    row = {id(e): i for i, e in enumerate(examples)}
    out: list[torch.Tensor | None] = [None] * len(examples)
    for chunk in tqdm(batches(examples, cfg.batch_size), desc="per-image PGD", disable=not progress):
        x = bank.get(chunk)
        if x is None:
            raise BadValueError("per-image PGD needs image examples")
        for e, adv in zip(chunk, runner.perturb_each(x, chunk, bank).cpu(), strict=True):
            out[row[id(e)]] = adv
    return torch.stack(out)  # type: ignore[arg-type]
