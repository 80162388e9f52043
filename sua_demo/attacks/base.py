"""Attacks, torchattacks-style: the base class owns the chores, a subclass writes its objective (and, for another
norm, its update and projection).

Chores: eval mode and frozen weights, seeding, the L-inf projection, clamping x + delta to [0, 1],
batch sampling, EOT, periodic checkpoints of delta (an interrupted run resumes) and progress; and the
speed settings (attacks/speed.py) and data parallelism over processes (attacks/parallel.py).
"""

from __future__ import annotations

import logging
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from sua_demo.attacks import parallel
from sua_demo.attacks.noise import Noise, as_saved, load_noise, save_noise
from sua_demo.attacks.speed import attack_mode, uncompile
from sua_demo.core.augment import photo_jitter
from sua_demo.core.config import CHECKPOINTS, shown_path
from sua_demo.core.errors import BadValueError, SuaError
from sua_demo.core.precision import Precision, resolve
from sua_demo.core.registry import Registry
from sua_demo.denoisers import build_denoiser
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, ExampleSampler, ImageBank

log = logging.getLogger(__name__)
StepCallback = Callable[[int, dict[str, float]], None]
# Settings a resumed run may change: they set how long and how fast it runs, not what it optimises.
RESUMABLE = ("steps", "checkpoint_every", "precision", "threads", "compile")
OPTIMIZERS = ("pgd", "momentum", "adam")


@dataclass
class AttackConfig:
    # The recipe was chosen on the attacker's validation split only (studies/attack_recipes.py, recipes.md in
    # checkpoints/noise): 300 sign steps from 2/255 down a cosine, light EOT, fitted on generation questions,
    # gave the best mean over the IDK and GradDiff models of the two stand-ins for unseen photos and unseen people.
    # Measured after the shipped noises were built: the same with optimizer="momentum", momentum=0.5 ranks
    # first by +0.6 in world 0 and +3.6 in world 1, and then gains nothing on the test groups (docs/findings.md).
    eps: float = 16 / 255  # the paper's budget; the public reference code uses 12/255
    alpha: float = 2 / 255  # PGD sign step, at the start of the schedule
    alpha_schedule: str = "cosine"  # "cosine": alpha down to alpha / 10 at the last step; or "constant"
    steps: int = 300  # 100 constant steps of 1/255 (the first release) fitted 30.0 against 38.9 on IDK validation
    batch_size: int = 32
    optimizer: str = "pgd"  # "pgd" (sign steps), "momentum" (MI-FGSM: sign of a decaying gradient sum) or "adam"
    momentum: float = 1.0  # decay of the "momentum" optimizer's gradient sum (MI-FGSM's mu)
    block: int = 4  # sua_lowfreq only: delta is constant over block x block pixel squares
    frame: int = 16  # sua_frame only: width in pixels of the border delta lives on (zero inside)
    adam_lr: float = 2 / 255
    random_start: bool = False
    loss: str = "nll"  # the answer term (attacks/sua.py): "nll", or "margin" (saturating per-token margin)
    margin: float = 2.0  # logit margin at which the "margin" loss stops pushing a token
    gate_weight: float = 0.0  # weight of -log(1 - p(a refusal's first token)) at the first answer position
    denoiser: str = "gaussian"
    beta: float = 0.0  # weight of the answer NLL on D(x + delta)
    # lambda on 1 - cos(E(x + delta), E(D(x + delta))). At 1 the detector's AUROC moved 0.01 over 6 IDK splits
    # (forget_10); at 100, the feasibility study's value, it falls from 0.75 to 0.67 at the same recovery
    # (forget_15, the shipped report).
    stealth_weight: float = 100.0
    stealth_grad: bool = True  # False: the cosine term computed under no_grad, as the public code has it
    retain_kl_weight: float = 0.0  # keep retain answers as they were without delta
    eot: bool = True  # random photo jitter before delta at every step
    eot_strength: float = 0.5  # scales the jitter's ranges (augment.photo_jitter): full jitter fitted worse
    # and no jitter transferred worse to the attacker's unseen photos
    checkpoint_every: int = 25
    seed: int = 0
    precision: str = "auto"  # "auto": bf16 autocast only where it is fast (sua_demo/core/precision.py), else fp32
    threads: int = 0  # torch intra-op threads; 0: one per core, shared among processes of one machine
    compile: bool = False  # torch.compile the towers: opt-in, it did not pay off on CPU (benchmarks/README.md)


class UniversalAttack(ABC):
    """Optimise one delta (3, S, S) in [-eps, eps] for all images of the attacker's set, x + delta in [0, 1].

    The loop (sampling, EOT, precision, checkpoints, resume, data parallelism, progress) lives here; a subclass
    writes its `objective` and, for another norm or update rule, overrides `init_delta`, `update` and `project`
    (L-inf sign steps by default). `perturb_each` runs the same objective and hooks with one delta per image.
    """

    norm = "linf"

    def __init__(self, adapter: VisionLanguageAdapter, cfg: AttackConfig) -> None:
        if not (isinstance(cfg.eps, (int, float)) and 0 < cfg.eps <= 1):
            raise BadValueError(f"eps must be in (0, 1] (pixel units; 16/255 = {16 / 255:.4f}), got {cfg.eps}")
        if cfg.optimizer not in OPTIMIZERS:
            raise BadValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {cfg.optimizer!r}")
        if cfg.alpha_schedule not in ("constant", "cosine"):
            raise BadValueError(f"alpha_schedule must be 'constant' or 'cosine', got {cfg.alpha_schedule!r}")
        for name in (
            "alpha",
            "stealth_weight",
            "beta",
            "retain_kl_weight",
            "adam_lr",
            "momentum",
            "margin",
            "gate_weight",
            "eot_strength",
        ):
            value = getattr(cfg, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise BadValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if not (
            isinstance(cfg.steps, int) and cfg.steps >= 0 and isinstance(cfg.batch_size, int) and cfg.batch_size > 0
        ):
            raise BadValueError(f"steps must be >= 0 and batch_size >= 1, got {cfg.steps!r} and {cfg.batch_size!r}")
        if cfg.alpha == 0 and cfg.optimizer != "adam" and cfg.steps > 0:
            raise BadValueError("alpha is 0: sign steps of size 0 never move delta; give a step size (e.g. 1/255)")
        self.adapter = adapter
        self.cfg = cfg
        self.denoiser = build_denoiser(cfg.denoiser).to(adapter.device)  # the loss runs it beside the model
        self._adam: torch.optim.Optimizer | None = None
        self._velocity: torch.Tensor | None = None  # the "momentum" optimizer's gradient sum; like Adam's moments,
        # it is not saved in checkpoints, so a resumed run starts it afresh
        self._delta: torch.Tensor | None = None
        self.best: Noise | None = None  # the delta at the lowest smoothed loss of the last run
        self._best_so_far: tuple[float, int, torch.Tensor, dict[str, Any]] | None = None

    @abstractmethod
    def objective(
        self, x: torch.Tensor, delta: torch.Tensor, chunk: list[Example], retain: list[Example] | None, bank: ImageBank
    ) -> tuple[torch.Tensor, dict[str, float]]:
        """Scalar loss to minimise, plus figures to log. `delta` is (3, S, S), or (N, 3, S, S) per image."""

    # -- the hooks: where delta starts, how a step moves it, and the set it stays in ------------------------------
    def init_delta(self, shape: tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
        if self.cfg.random_start:
            return (torch.rand(shape, generator=generator) * 2 - 1) * self.cfg.eps
        return torch.zeros(shape)

    def step_size(self, step: int) -> float:
        cfg = self.cfg
        if cfg.alpha_schedule == "cosine" and cfg.steps > 1:
            t = step / (cfg.steps - 1)
            return cfg.alpha * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))
        return cfg.alpha

    def update(self, delta: torch.Tensor, grad: torch.Tensor, step: int) -> None:
        """One descent step on delta, in place: the L-inf steepest step (sign), or Adam."""
        if self.cfg.optimizer == "adam":
            if self._adam is None:
                self._adam = torch.optim.Adam([delta], lr=self.cfg.adam_lr)
            delta.grad = grad
            self._adam.step()
        elif self.cfg.optimizer == "momentum":
            # MI-FGSM (Dong et al., 2018): each gradient scaled to unit mean magnitude (per image where delta is
            # per image), summed with decay; the sign of the sum moves less with each batch's draw than one
            # gradient's sign does.
            dims = tuple(range(1, grad.dim())) if grad.dim() == 4 else tuple(range(grad.dim()))
            g = grad / grad.abs().mean(dim=dims, keepdim=True).clamp(min=1e-12)
            self._velocity = g if self._velocity is None else self.cfg.momentum * self._velocity + g
            delta -= self.step_size(step) * self._velocity.sign()
        else:
            delta -= self.step_size(step) * grad.sign()

    def project(self, delta: torch.Tensor) -> None:
        """Back into the budget, in place."""
        delta.clamp_(-self.cfg.eps, self.cfg.eps)

    def current_delta(self) -> torch.Tensor:
        """A copy of the delta being optimised (for live previews and early stops); zeros before a run."""
        if self._delta is None:
            size = self.adapter.image_size
            return torch.zeros(3, size, size)
        return self._delta.detach().cpu().clone()

    def noise_eps(self, delta: torch.Tensor) -> float:
        """The L-inf bound a saved noise declares (and load_noise checks)."""
        return self.cfg.eps

    # -- the loops -------------------------------------------------------------------------------------------
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
        chosen = resolve(cfg.precision, device, self.adapter.dtype)
        meta = {**(meta or {}), **chosen.as_meta()}
        with attack_mode(self.adapter, device, self._half(chosen), cfg.threads, cfg.compile):
            return self.optimise_delta(bank, examples, retain, checkpoint, callback, progress, meta, chosen.dtype)

    def perturb_each(
        self, x: torch.Tensor, chunk: list[Example], bank: ImageBank, steps: int | None = None
    ) -> torch.Tensor:
        """(N, 3, S, S) x + delta_i with one delta per image (no EOT): the same objective and hooks, the bound on
        what the budget can do to a seen image. Each row's loss depends on its own delta only."""
        cfg = self.cfg
        device = self.adapter.device
        chosen = resolve(cfg.precision, device, self.adapter.dtype)
        x = x.to(device)
        self._adam = self._velocity = None
        delta = self.init_delta(tuple(x.shape), torch.Generator().manual_seed(cfg.seed)).to(device)
        delta.requires_grad_(True)
        with attack_mode(self.adapter, device, self._half(chosen), cfg.threads, cfg.compile):
            for step in range(cfg.steps if steps is None else steps):
                grad, _ = self._grad((x, delta, chunk, None, bank), chosen.dtype)
                with torch.no_grad():
                    self.update(delta, grad, step)
                    self.project(delta)
        self._adam = self._velocity = None
        return (x + delta.detach()).clamp(0, 1)

    def optimise_delta(
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
        """The heart of the attack: projected gradient steps on one δ shared by every image, on batches drawn from
        `examples` (and `retain`), resumed from `checkpoint` and saved to it as it goes; the last δ is returned,
        the lowest smoothed-loss one kept as `self.best`. `run` picks the precision and calls this."""
        cfg, device = self.cfg, self.adapter.device
        main = parallel.world()[0] == 0
        gen = torch.Generator().manual_seed(cfg.seed)
        source = self.adapter.source  # a model folder as reports name it (checkout-relative), a hub id as it is
        model = shown_path(source) if Path(source).exists() else source
        info = {"model": model, "attack": type(self).__name__, **(meta or {}), "config": asdict(cfg)}
        delta, start = self._starting_delta(gen, info, checkpoint, main)
        delta = delta.to(device).requires_grad_(True)
        parallel.broadcast_(delta)
        self._adam, self._velocity, self._delta = None, None, delta
        self._best_so_far = None
        stats: dict[str, float] = {}
        smooth, best_loss, best_step, best = None, math.inf, start, delta.detach().cpu().clone()
        t0 = time.time()
        if start < cfg.steps:  # a drawn noise (no steps) needs no examples
            sampler = ExampleSampler(examples, cfg.batch_size, cfg.seed + start)
            retain_sampler = ExampleSampler(retain, cfg.batch_size, cfg.seed + 1 + start) if retain else None
        bar = tqdm(
            range(start, cfg.steps),
            desc=type(self).__name__,
            disable=not (progress and main),
            initial=start,
            total=cfg.steps,
        )
        for step in bar:
            stepped = self._step(step, sampler(), retain_sampler, bank, delta, gen, dtype)
            if stepped is None:
                continue  # text-only questions carry no image to perturb
            stats = stepped
            smooth = stats["loss"] if smooth is None else 0.9 * smooth + 0.1 * stats["loss"]
            if smooth < best_loss:  # batches and jitter vary, so "best" is judged on the smoothed loss
                best_loss, best_step, best = smooth, step + 1, delta.detach().cpu().clone()
                self._best_so_far = (best_loss, best_step, best, {**info, **stats})
            bar.set_postfix(loss=f"{stats['loss']:.3f}")
            if main and checkpoint is not None and (step + 1) % cfg.checkpoint_every == 0:
                save_noise(self._noise(delta, {**info, "step": step + 1, **stats}), checkpoint)
            if callback is not None:  # after the checkpoint: a callback that ends the run keeps this step
                callback(step + 1, stats)
        meta_out = {**info, "step": cfg.steps, "seconds": round(time.time() - t0, 1), **stats}
        noise = self._noise(delta, meta_out)
        self.best = self._noise(best, {**meta_out, "step": best_step, "smoothed_loss": best_loss, "kept": "best"})
        if main and checkpoint is not None and start >= cfg.steps:
            return load_noise(checkpoint, self.adapter.image_size)  # a finished run, read back with its own record
        if main and checkpoint is not None:
            save_noise(noise, checkpoint)
        return noise

    def _starting_delta(
        self, gen: torch.Generator, info: dict[str, Any], checkpoint: str | Path | None, main: bool
    ) -> tuple[torch.Tensor, int]:
        """δ and its step to start from: the hook's first draw, or the checkpoint of the same settings (rank 0
        reads it, every rank follows)."""
        size_px = self.adapter.image_size
        delta = self.init_delta((3, size_px, size_px), gen)
        resumed = None
        if main and checkpoint is not None and Path(checkpoint).exists():
            saved = load_noise(checkpoint, size_px)
            _check_resumable(saved.meta, info, checkpoint)
            resumed = int(saved.meta.get("step", 0))
            delta = saved.delta.clone()
            log.info("resuming from %s at step %d", checkpoint, resumed)
        return delta, parallel.broadcast_object(resumed) or 0

    def _step(
        self,
        step: int,
        chunk: list[Example],
        retain_sampler: ExampleSampler | None,
        bank: ImageBank,
        delta: torch.Tensor,
        gen: torch.Generator,
        dtype: torch.dtype | None,
    ) -> dict[str, float] | None:
        """One step on one batch (the same on every rank, each taking its shard): its stats, None for a batch
        with no image."""
        rank, size = parallel.world()
        x = bank.get(chunk)
        if x is None:
            return None
        x = x.to(self.adapter.device)
        if self.cfg.eot:  # drawn for the whole batch, so the draws do not depend on world size
            x = photo_jitter(x, gen, strength=self.cfg.eot_strength)
        part = parallel.shard(len(chunk), rank, size)
        ret = retain_sampler() if retain_sampler else None
        ret = ret[parallel.shard(len(ret), rank, size)] if ret else None
        grad, stats = self._grad((x[part], delta, chunk[part], ret, bank), dtype)
        grad, stats = parallel.average(grad, stats, len(chunk[part]))
        with torch.no_grad():
            self.update(delta, grad, step)
            self.project(delta)
        return stats

    def _half(self, chosen: Precision) -> torch.dtype | None:
        """The half dtype the step computes in (autocast's, or the weights' own), None in fp32: attack_mode picks
        its CPU kernels by it."""
        weights = self.adapter.dtype
        return chosen.dtype or (weights if weights in (torch.float16, torch.bfloat16) else None)

    def best_so_far(self) -> Noise | None:
        """The lowest-loss delta of the run in progress (or just cut short by its callback), None before a step."""
        if self._best_so_far is None:
            return None
        loss, step, delta, meta = self._best_so_far
        return self._noise(delta, {**meta, "step": step, "smoothed_loss": loss, "kept": "best"})

    def _noise(self, delta: torch.Tensor, meta: dict[str, Any]) -> Noise:
        d = delta.detach().cpu().clone()
        return Noise(d, self.noise_eps(d), {"norm": self.norm, **meta})

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
    if _same_model(saved.get("model"), run.get("model")):
        saved = {**saved, "model": run.get("model")}
    pairs = [(k, saved.get(k), run[k]) for k in run if k != "config" and k.removesuffix("_reason") not in RESUMABLE]
    settings = saved["config"]
    pairs += [(k, settings[k], v) for k, v in run["config"].items() if k not in RESUMABLE and k in settings]

    def shown(k: str, v: Any) -> str:  # budgets as the CLI takes them, in 1/255
        return f"{v * 255:g}/255" if k in ("eps", "alpha", "adam_lr") and isinstance(v, (int, float)) else repr(v)

    changed = [f"{k}={shown(k, was)} (now {shown(k, now)})" for k, was, now in pairs if was != now]
    if changed:
        raise SuaError(f"{path} comes from another run: {', '.join(changed)}; delete it or choose another checkpoint")
    done, asked = int(saved.get("step", 0)), int(run["config"]["steps"])
    if done > asked:
        raise SuaError(f"{path} already holds {done} steps, more than the {asked} asked for; ask for >= {done} steps")


def _same_model(saved: Any, now: Any) -> bool:
    """The model a checkpoint was written for, named from another checkout: an absolute path whose last parts are
    this run's checkout-relative one (a fit committed in one clone, resumed in another, or recorded before records
    named paths relative to the checkout)."""
    if not isinstance(saved, str) or not isinstance(now, str) or not (CHECKPOINTS.parent / now).exists():
        return False  # `now` is not a path inside this checkout
    tail = Path(now).parts
    return Path(saved).is_absolute() and Path(saved).parts[-len(tail) :] == tail


ATTACKS: Registry[UniversalAttack] = Registry("attack")
