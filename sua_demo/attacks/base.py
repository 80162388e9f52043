"""Attacks, torchattacks-style: the base class owns the chores, a subclass writes only its objective.

Chores: eval mode and frozen weights, seeding, the L-inf projection, clamping x + delta to [0, 1],
batch sampling, EOT, periodic checkpoints of delta (an interrupted run resumes) and progress.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from sua_demo.attacks.eot import photo_jitter
from sua_demo.attacks.noise import Noise, load_noise, save_noise
from sua_demo.data import Example, ExampleSampler, ImageBank
from sua_demo.denoisers import build_denoiser
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.registry import Registry

log = logging.getLogger(__name__)
StepCallback = Callable[[int, dict[str, float]], None]


@dataclass
class AttackConfig:
    eps: float = 16 / 255  # the paper's budget; the public reference code uses 12/255
    alpha: float = 1 / 255  # PGD sign step
    steps: int = 100
    batch_size: int = 32
    optimizer: str = "pgd"  # "pgd" (sign steps) or "adam" (fits the attacker's own images best)
    adam_lr: float = 2 / 255
    random_start: bool = False
    denoiser: str = "gaussian"
    beta: float = 0.0  # weight of the answer NLL on D(x + delta)
    stealth_weight: float = 1.0  # lambda: 1 - cos(E(x + delta), E(D(x + delta)))
    retain_kl_weight: float = 0.0  # keep retain answers as they were without delta
    eot: bool = True  # random photo jitter before delta at every step
    checkpoint_every: int = 25
    seed: int = 0


class UniversalAttack(ABC):
    """Optimise one delta (3, S, S) for all images of the attacker's set."""

    def __init__(self, adapter: VisionLanguageAdapter, cfg: AttackConfig) -> None:
        if not 0 < cfg.eps <= 1:
            raise ValueError(f"eps must be in (0, 1], got {cfg.eps}")
        if cfg.optimizer not in ("pgd", "adam"):
            raise ValueError(f"optimizer must be 'pgd' or 'adam', got {cfg.optimizer!r}")
        self.adapter = adapter
        self.cfg = cfg
        self.denoiser = build_denoiser(cfg.denoiser)

    @abstractmethod
    def objective(
        self, x: torch.Tensor, delta: torch.Tensor, chunk: list[Example], retain: list[Example] | None, bank: ImageBank
    ) -> tuple[torch.Tensor, dict[str, float]]:
        """Scalar loss to minimise, plus figures to log."""

    def run(
        self,
        bank: ImageBank,
        examples: list[Example],
        retain: list[Example] | None = None,
        checkpoint: str | Path | None = None,
        callback: StepCallback | None = None,
        progress: bool = True,
        meta: dict[str, Any] | None = None,
    ) -> Noise:
        cfg = self.cfg
        model = self.adapter.model
        model.eval()
        model.requires_grad_(False)
        size = self.adapter.image_size
        gen = torch.Generator().manual_seed(cfg.seed)
        delta = torch.zeros(3, size, size)
        if cfg.random_start:
            delta = (torch.rand(3, size, size, generator=gen) * 2 - 1) * cfg.eps
        start = 0
        if checkpoint is not None and Path(checkpoint).exists():
            saved = load_noise(checkpoint, size)
            delta, start = saved.delta.clone(), int(saved.meta.get("step", 0))
            log.info("resuming from %s at step %d", checkpoint, start)
        delta.requires_grad_(True)
        opt = torch.optim.Adam([delta], lr=cfg.adam_lr) if cfg.optimizer == "adam" else None
        sampler = ExampleSampler(examples, cfg.batch_size, cfg.seed + start)
        retain_sampler = ExampleSampler(retain, cfg.batch_size, cfg.seed + 1 + start) if retain else None
        info = {"model": self.adapter.source, **(meta or {}), "config": asdict(cfg)}
        stats: dict[str, float] = {}
        t0 = time.time()
        bar = tqdm(
            range(start, cfg.steps), desc=type(self).__name__, disable=not progress, initial=start, total=cfg.steps
        )
        for step in bar:
            chunk = sampler()
            x = bank.get(chunk)
            if x is None:
                continue  # text-only questions carry no image to perturb
            if cfg.eot:
                x = photo_jitter(x, gen)
            loss, stats = self.objective(x, delta, chunk, retain_sampler() if retain_sampler else None, bank)
            if opt is not None:
                opt.zero_grad()
                loss.backward()
                opt.step()
            else:
                (grad,) = torch.autograd.grad(loss, delta)
                with torch.no_grad():
                    delta -= cfg.alpha * grad.sign()
            with torch.no_grad():
                delta.clamp_(-cfg.eps, cfg.eps)
            stats = {"loss": float(loss.detach()), **stats}
            bar.set_postfix(loss=f"{stats['loss']:.3f}")
            if callback is not None:
                callback(step + 1, stats)
            if checkpoint is not None and (step + 1) % cfg.checkpoint_every == 0:
                save_noise(Noise(delta.detach().clone(), cfg.eps, {**info, "step": step + 1, **stats}), checkpoint)
        meta_out = {**info, "step": cfg.steps, "seconds": round(time.time() - t0, 1), **stats}
        noise = Noise(delta.detach().clone(), cfg.eps, meta_out)
        if checkpoint is not None:
            save_noise(noise, checkpoint)
        return noise


ATTACKS: Registry[UniversalAttack] = Registry("attack")
