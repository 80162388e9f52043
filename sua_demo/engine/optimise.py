"""The engine's Optimise: a universal SUA noise fitted now, stoppable, streamed step by step."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import torch

from sua_demo.attacks import ATTACKS, AttackConfig, Noise
from sua_demo.core.shipped import public_name
from sua_demo.engine.checks import MAX_STEPS, check_denoiser, finite
from sua_demo.engine.model_cache import LoadedModel
from sua_demo.engine.models import Models
from sua_demo.engine.threads import Waiting, heavy_stream
from sua_demo.eval.recovery import attack_split, attacker_examples, split_meta


class Optimising(Models):
    """Optimise a noise on the protocol's attacker split, in the line of heavy jobs (threads.py)."""

    def optimise(
        self,
        sess: LoadedModel,
        eps_255: float = AttackConfig.eps * 255,
        steps: int = AttackConfig.steps,
        denoiser: str = AttackConfig.denoiser,
        stealth_weight: float = AttackConfig.stealth_weight,
        on_step: Callable[[int, dict[str, float], torch.Tensor], None] | None = None,
        stop: threading.Event | None = None,
        seed: int = 0,
        base: AttackConfig | None = None,
    ) -> tuple[Noise, Noise | None]:
        """A universal SUA noise on the protocol's attacker split `seed`: (last, lowest-loss) deltas. `stop`
        ends it early with the delta so far: a cancelled run still returns what it had."""
        eps_255 = finite("eps", eps_255, 0, 64, open_low=True)
        steps = int(finite("steps", steps, 1, MAX_STEPS))
        stealth_weight = finite("stealth weight", stealth_weight, 0, 1e4)
        split = attack_split(self.bench, seed=seed)
        cfg = replace(
            base or AttackConfig(),
            eps=eps_255 / 255,
            steps=steps,
            denoiser=check_denoiser(denoiser),
            stealth_weight=stealth_weight,
            seed=seed,
        )
        meta = {**split_meta(split), "planned_steps": cfg.steps}  # a run stopped early names what it was asked
        attack = ATTACKS.get("sua")(sess.adapter, cfg)

        def step(i: int, stats: dict[str, float]) -> None:
            if on_step is not None:
                on_step(i, stats, attack.current_delta())
            if stop is not None and stop.is_set():
                raise _Stopped(i)

        examples = attacker_examples(self.bench, split)
        with sess.attack_lock:  # the attack switches kernels on the shared model; one attack at a time
            try:
                noise = attack.run(sess.bank, examples, callback=step, progress=False, meta=meta)
            except _Stopped as stopped:
                noise = Noise(attack.current_delta(), cfg.eps, {**meta, "step": stopped.step, "stopped_early": True})
                best = attack.best_so_far()
            else:
                best = attack.best
        for n in (noise, best):
            if n is not None:
                n.meta["model"] = public_name(sess.name)  # never a server path
        return noise, best

    def optimise_stream(
        self,
        sess: LoadedModel,
        stop: threading.Event,
        tick: float | None = None,
        expected: float | None = None,
        **kwargs: Any,
    ) -> Iterator[Waiting | tuple[int, float, torch.Tensor] | tuple[Noise, Noise | None] | None]:
        """`optimise` in the line of heavy jobs (threads.py): a `Waiting` every `tick` seconds while it waits (its
        place, and its wait from `expected`, the seconds the caller expects each run to take), then (step, loss,
        delta) as they come, then (last, best); with `tick`, None after every `tick` seconds without a step (so a
        page's clock moves on slow steps too). `stop` set while it waits leaves the line (`LeftTheLine`). Closing
        the generator (a page that went away) sets `stop`, so the worker ends after its current step."""

        def run(emit: Callable[[tuple[int, float, torch.Tensor]], None]) -> tuple[Noise, Noise | None]:
            def on_step(i: int, stats: dict[str, float], delta: torch.Tensor) -> None:
                emit((i, stats["loss"], delta))

            return self.optimise(sess, on_step=on_step, stop=stop, **kwargs)

        try:
            noises = yield from heavy_stream(run, "optimise", tick, stop, expected)
        finally:
            stop.set()
        yield noises


class _Stopped(Exception):
    """Raised from the step callback to end an optimisation early."""

    def __init__(self, step: int) -> None:
        super().__init__(step)
        self.step = step
