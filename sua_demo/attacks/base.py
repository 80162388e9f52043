"""Attacks, torchattacks-style: the base class owns the chores, a subclass writes only its objective.

Chores: eval mode and frozen weights, seeding, the L-inf projection, clamping x + delta to [0, 1],
batch sampling, EOT, periodic checkpoints of delta (an interrupted run resumes) and progress; and the
speed settings (attacks/speed.py) and data parallelism over processes (attacks/parallel.py).
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from sua_demo.attacks import parallel
from sua_demo.attacks.eot import photo_jitter
from sua_demo.attacks.noise import Noise, as_saved, load_noise, save_noise
from sua_demo.attacks.speed import attack_mode, uncompile
from sua_demo.data import Example, ExampleSampler, ImageBank
from sua_demo.denoisers import build_denoiser
from sua_demo.errors import SuaError
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.precision import resolve
from sua_demo.registry import Registry

log = logging.getLogger(__name__)
StepCallback = Callable[[int, dict[str, float]], None]
# Settings a resumed run may change: they set how long and how fast it runs, not what it optimises.
RESUMABLE = ("steps", "checkpoint_every", "precision", "threads", "compile")


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
    # lambda on 1 - cos(E(x + delta), E(D(x + delta))). At 1 the detector's AUROC moved 0.01 over 6 IDK splits
    # (forget_10); at 100, the feasibility study's value, it falls from 0.75 to 0.67 at the same recovery
    # (forget_15, the shipped report).
    stealth_weight: float = 100.0
    retain_kl_weight: float = 0.0  # keep retain answers as they were without delta
    eot: bool = True  # random photo jitter before delta at every step
    checkpoint_every: int = 25
    seed: int = 0
    precision: str = "auto"  # "auto": bf16 autocast only where it is fast (sua_demo/precision.py), else fp32
    threads: int = 0  # torch intra-op threads; 0: one per core, shared among processes of one machine
    compile: bool = False  # torch.compile the towers: opt-in, it did not pay off on CPU (bench/README.md)


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
        """Optimise delta; under a launcher with N processes each takes 1/N of every batch (same result)."""
        cfg = self.cfg
        device = self.adapter.device
        chosen = resolve(cfg.precision, device)
        meta = {**(meta or {}), **chosen.as_meta()}
        with attack_mode(self.adapter.model, device, chosen.dtype, cfg.threads, cfg.compile):
            return self._loop(bank, examples, retain, checkpoint, callback, progress, meta, chosen.dtype)

    def _loop(
        self,
        bank: ImageBank,
        examples: list[Example],
        retain: list[Example] | None,
        checkpoint: str | Path | None,
        callback: StepCallback | None,
        progress: bool,
        meta: dict[str, Any] | None,
        dtype: torch.dtype | None,
    ) -> Noise:
        cfg, device = self.cfg, self.adapter.device
        rank, size = parallel.world()
        main = rank == 0
        self.denoiser.to(device)
        size_px = self.adapter.image_size
        gen = torch.Generator().manual_seed(cfg.seed)
        delta = torch.zeros(3, size_px, size_px)
        if cfg.random_start:
            delta = (torch.rand(3, size_px, size_px, generator=gen) * 2 - 1) * cfg.eps
        start = 0
        info = {"model": self.adapter.source, "attack": type(self).__name__, **(meta or {}), "config": asdict(cfg)}
        if checkpoint is not None and Path(checkpoint).exists():
            saved = load_noise(checkpoint, size_px)
            _check_resumable(saved.meta, info, checkpoint)
            delta, start = saved.delta.clone(), int(saved.meta.get("step", 0))
            log.info("resuming from %s at step %d", checkpoint, start)
        delta = delta.to(device).requires_grad_(True)
        parallel.broadcast_(delta)
        opt = torch.optim.Adam([delta], lr=cfg.adam_lr) if cfg.optimizer == "adam" else None
        sampler = ExampleSampler(examples, cfg.batch_size, cfg.seed + start)
        retain_sampler = ExampleSampler(retain, cfg.batch_size, cfg.seed + 1 + start) if retain else None
        stats: dict[str, float] = {}
        t0 = time.time()
        bar = tqdm(
            range(start, cfg.steps),
            desc=type(self).__name__,
            disable=not (progress and main),
            initial=start,
            total=cfg.steps,
        )
        for step in bar:
            chunk = sampler()  # the same batch on every rank (same seed); each rank takes its shard
            x = bank.get(chunk)
            if x is None:
                continue  # text-only questions carry no image to perturb
            x = x.to(device)
            if cfg.eot:
                x = photo_jitter(x, gen)  # drawn for the whole batch, so the draws do not depend on world size
            part = parallel.shard(len(chunk), rank, size)
            ret = retain_sampler() if retain_sampler else None
            ret = ret[parallel.shard(len(ret), rank, size)] if ret else None
            grad, stats = self._grad((x[part], delta, chunk[part], ret, bank), dtype)
            grad, stats = parallel.average(grad, stats, len(chunk[part]))
            if opt is not None:
                delta.grad = grad
                opt.step()
            else:
                with torch.no_grad():
                    delta -= cfg.alpha * grad.sign()
            with torch.no_grad():
                delta.clamp_(-cfg.eps, cfg.eps)
            bar.set_postfix(loss=f"{stats['loss']:.3f}")
            if main and checkpoint is not None and (step + 1) % cfg.checkpoint_every == 0:
                save_noise(Noise(delta.detach().cpu(), cfg.eps, {**info, "step": step + 1, **stats}), checkpoint)
            if callback is not None:  # after the checkpoint: a callback that ends the run keeps this step
                callback(step + 1, stats)
        meta_out = {**info, "step": cfg.steps, "seconds": round(time.time() - t0, 1), **stats}
        noise = Noise(delta.detach().cpu().clone(), cfg.eps, meta_out)
        if main and checkpoint is not None:
            save_noise(noise, checkpoint)
        return noise

    def _grad(self, args: tuple, dtype: torch.dtype | None) -> tuple[torch.Tensor, dict[str, float]]:
        """d loss / d delta and the step's figures, the forward under autocast when dtype is set."""
        delta = args[1]
        try:
            with torch.autocast(delta.device.type, dtype=dtype or torch.bfloat16, enabled=dtype is not None):
                loss, stats = self.objective(*args)
            (grad,) = torch.autograd.grad(loss, delta)
        except Exception as err:  # torch.compile fails at its first call where it cannot work: go eager
            if not self.cfg.compile:
                raise
            log.warning("torch.compile failed (%s: %s); running without it", type(err).__name__, err)
            uncompile([m for m in self.adapter.model.modules() if getattr(m, "_compiled_call_impl", None)])
            self.cfg = replace(self.cfg, compile=False)
            return self._grad(args, dtype)  # a real error in the objective raises again, uncompiled
        return grad, {"loss": float(loss.detach()), **stats}


def _check_resumable(saved: dict[str, Any], run: dict[str, Any], path: str | Path) -> None:
    """A checkpoint resumes only the run that wrote it: the same model, attack, people and settings, and no
    more steps than asked for. Anything else would mix two attacks, or hand back a finished delta as if it had
    been optimised for this run (e.g. one whose "unseen" people were the attacker's in another split)."""
    if not isinstance(saved.get("config"), dict):
        return  # a noise file from elsewhere records no run: resuming from it is the user's call
    run = as_saved(run)
    pairs = [(k, saved.get(k), run[k]) for k in run if k != "config" and k.removesuffix("_reason") not in RESUMABLE]
    settings = saved["config"]
    pairs += [(k, settings[k], v) for k, v in run["config"].items() if k not in RESUMABLE and k in settings]
    changed = [f"{k}={was!r} (now {now!r})" for k, was, now in pairs if was != now]
    if changed:
        raise SuaError(f"{path} comes from another run: {', '.join(changed)}; delete it or choose another checkpoint")
    done, asked = int(saved.get("step", 0)), int(run["config"]["steps"])
    if done > asked:
        raise SuaError(f"{path} already holds {done} steps, more than the {asked} asked for; ask for >= {done} steps")


ATTACKS: Registry[UniversalAttack] = Registry("attack")
