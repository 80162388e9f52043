"""'Optimise a noise now' sized for a CPU: how long it will take, and what it shows while it runs."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import torch

from sua_demo.attacks.speed import on_fresh_thread
from sua_demo.images import amplified, to_pil
from sua_demo.plots import loss_figure

# The app's default run takes about APP_SECONDS on the machine it runs on: the step time is measured once at start
# (a step costs 3 to 13 times more on one CPU than another, by its bf16 support), and the steps sized to fit.
APP_SECONDS = 20.0
STEP_RANGE = (20, 300)
PROBE_STEPS = 3
WARM_UP_STEPS = 3  # a run's first steps (kernels, caches, a model's first bf16 pass) are slower than the rest


def app_steps(seconds_per_step: float, seconds: float = APP_SECONDS) -> int:
    """Steps (a multiple of 5, within STEP_RANGE) that fit in `seconds` at this step time."""
    lo, hi = STEP_RANGE
    return int(min(hi, max(lo, 5 * round(seconds / max(seconds_per_step, 1e-3) / 5))))


@dataclass
class OptimiseView:
    figure: Any
    status: str
    preview: Any
    files: list[str] | None = None  # set on the final view: last and lowest-loss δ as safetensors + PNG


class StepTimer:
    """Seconds per attack step per model: measured by a short probe run, refined by every real run."""

    def __init__(self) -> None:
        self._seconds: dict[str, float] = {}

    def record(self, model: str, seconds: float) -> None:
        self._seconds[model] = seconds

    def seconds_per_step(self, engine: Any, sess: Any) -> float:
        if sess.name not in self._seconds:  # timed as the real run runs: a fresh thread with every core
            self._seconds[sess.name] = on_fresh_thread(self._probe, engine, sess)
        return self._seconds[sess.name]

    @staticmethod
    def _probe(engine: Any, sess: Any) -> float:
        """Seconds between step marks of one short run: its first step (kernels, caches) and the run's setup
        are left out, as they are a small part of a real run but most of a probe's."""
        marks: list[float] = []
        engine.optimise(sess, steps=1 + PROBE_STEPS, on_step=lambda *_: marks.append(time.perf_counter()))
        return (marks[-1] - marks[0]) / PROBE_STEPS


class RunClock:
    """A run's own pace: seconds a step, from the steps after its warm-up, so the time left is what this run on
    this machine, as busy as it is now, will take (a figure measured at start-up can be off by 3x on a shared CPU)."""

    def __init__(self, steps: int, warm_up: int = WARM_UP_STEPS, now: Any = time.monotonic) -> None:
        self.steps, self.warm_up, self.now = steps, warm_up, now
        self.start = now()
        self.marks: list[tuple[int, float]] = []  # (step, when it ended)

    def step(self, done: int) -> None:
        self.marks.append((done, self.now()))

    @property
    def done(self) -> int:
        return self.marks[-1][0] if self.marks else 0

    def seconds_per_step(self) -> float | None:
        """Mean step time since the warm-up ended; None while the run is still warming up."""
        warm = [m for m in self.marks if m[0] >= self.warm_up]
        if len(warm) < 2:
            return None
        (s0, t0), (s1, t1) = warm[0], warm[-1]
        return (t1 - t0) / (s1 - s0)

    def left(self) -> float | None:
        """Seconds left: the steps to go at this run's pace, less the time the current step has already run."""
        pace = self.seconds_per_step()
        if pace is None:
            return None
        since = self.now() - self.marks[-1][1]
        return max(0.0, (self.steps - self.done) * pace - since)

    def status(self, unit: str = "step") -> str:
        elapsed, left = self.now() - self.start, self.left()
        wait = "measuring the pace…" if left is None else f"about {left:.0f} s left"
        return f"{unit} {self.done}/{self.steps} · {elapsed:.0f} s so far, {wait}"


def progress_view(
    history: list[tuple[int, float]],
    steps: int,
    delta: torch.Tensor,
    eps_255: float,
    elapsed: float,
    meta: dict[str, Any] | None = None,
    clock: RunClock | None = None,
) -> OptimiseView:
    done = history[-1][0] if history else 0
    preview = to_pil(amplified(delta, eps_255 / 255), scale=max(1, 192 // delta.shape[-1]))
    if meta is None:
        status = clock.status() if clock is not None else f"step {done}/{steps} · {elapsed:.0f} s so far"
    else:
        how = "stopped early" if meta.get("stopped_early") else "done"
        loss = f", final loss {history[-1][1]:.3f}" if history else ""
        status = f"{how}: {int(meta.get('step', done))} steps in {elapsed:.0f} s{loss}; noise source set to 'optimised'"
    return OptimiseView(loss_figure(history, steps), status, preview)
