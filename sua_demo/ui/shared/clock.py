"""Honest waits: the time left from a job's own measured pace on this machine, as busy as it is now.

A figure measured at start-up can be off by 3x on a shared CPU (a second server on the same cores), and a job's
first steps (kernels, caches, a model's first bf16 pass) run slower than the rest, so both clocks leave a warm-up
out and re-estimate at every mark.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from sua_demo.engine.threads import heavy

WARM_UP_STEPS = 3
PROBE_STEPS = 3  # steps a probe times after its warm-up
OVERDUE = 0.25  # a part that runs past its estimate is given this share of the time it has run so far, again
LEAST = 1.0  # seconds: a clock with work left never reads less (it read "about 0 s left" in a last half second)


def current_left(predicted: float, since: float) -> float:
    """Seconds left of the part under way: its estimate less the time it has run; once it runs past its estimate,
    a share of the time it has run so far (and never under a second), so a clock never sits on 0 s with work left."""
    left = max(predicted - since, OVERDUE * since)
    return left if since < predicted else max(left, 1.0)


class RunClock:
    """A run's own pace: seconds a step, from the steps after its warm-up, so the time left is what this run on
    this machine, as busy as it is now, will take (a figure measured at start-up can be off by 3x on a shared CPU)."""

    def __init__(
        self, steps: int, warm_up: int = WARM_UP_STEPS, now: Callable[[], float] = time.monotonic, every: int = 1
    ) -> None:
        # every: a run that does extra work every few steps (unlearning checks its rule every 5) is paced over whole
        # cycles of them, else the steps between two checks read faster than the run goes (estimates 48 % short)
        self.steps, self.warm_up, self.now, self.every = steps, warm_up, now, every
        self.start = now()
        self.marks: list[tuple[int, float]] = []  # (step, when it ended)

    def step(self, done: int) -> None:
        self.marks.append((done, self.now()))

    @property
    def done(self) -> int:
        return self.marks[-1][0] if self.marks else 0

    def seconds_per_step(self) -> float | None:
        """Mean step time since the warm-up ended; None while the run is still warming up."""
        warm = [m for m in self.marks if m[0] >= self.warm_up and m[0] % self.every == 0]
        if len(warm) < 2:
            return None
        (s0, t0), (s1, t1) = warm[0], warm[-1]
        return (t1 - t0) / (s1 - s0)

    def left(self) -> float | None:
        """Seconds left: the steps to go at this run's pace, less the time the current step has already run."""
        pace = self.seconds_per_step()
        if pace is None:
            return None
        if self.done >= self.steps:
            return 0.0
        since = self.now() - self.marks[-1][1]
        return max((self.steps - self.done - 1) * pace + current_left(pace, since), LEAST)

    def status(self, unit: str = "step") -> str:
        """Where the run is; once its last step is marked, "finishing" (saving, the last figures), not "0 s left"."""
        elapsed, left = self.now() - self.start, self.left()
        wait = "measuring the pace…" if left is None else f"about {left:.0f} s left"
        wait = "finishing…" if self.done >= self.steps else wait
        return f"{unit} {self.done}/{self.steps} · {elapsed:.0f} s so far, {wait}"


class WorkClock:
    """The pace of a job made of unequal parts (the live audit: asking takes a tenth of a second, relearning 50
    steps fourteen): each part declares its `work` (AuditMethod.work: passes of the model) and its time is fitted
    as a + b * work over the parts done after the first (which loads and warms up) and after the first with work
    (its first backward passes warm up). The time left waits until a part with work is fitted: before that nothing
    measured says what a step costs."""

    def __init__(self, work: list[int], now: Callable[[], float] = time.monotonic) -> None:
        self.work, self.now = work, now
        self.start = now()
        self.ends: list[float] = []

    def step(self, done: int) -> None:
        while len(self.ends) < done:
            self.ends.append(self.now())

    @property
    def done(self) -> int:
        return len(self.ends)

    def left(self) -> float | None:
        # left out of the fit: the first part (it loads and warms up) and the first part with work (its first
        # backward passes warm up: the live audit's relearn5 took 0.20 s a pass of work, every later part 0.10-0.11)
        first_work = next((i for i, w in enumerate(self.work) if w > 0), 0)
        kept = [i for i in range(1, self.done) if i != first_work]
        times = np.diff([self.start, *self.ends])[kept]
        work = np.array(self.work, dtype=float)[kept]
        rest = np.array(self.work[self.done :], dtype=float)
        if not len(rest):
            return 0.0
        if not len(times) or (rest.max() > 0 and work.max(initial=0) == 0):
            return None
        if work.min() == work.max():
            a, b = float(times.mean()), float(times.mean() / max(work.max(), 1))
            a, b = (a, 0.0) if work.max() == 0 else (0.0, b)
        else:
            b, a = np.polyfit(work, times, 1)
            a, b = max(float(a), 0.0), max(float(b), 0.0)
        since = self.now() - (self.ends[-1] if self.ends else self.start)
        part = a + b * rest  # each part still to do; the first of them is under way
        return max(float(part[1:].sum()) + current_left(float(part[0]), since), LEAST)

    def status(self, unit: str = "part") -> str:
        elapsed, left = self.now() - self.start, self.left()
        wait = "measuring the pace…" if left is None else f"about {left:.0f} s left"
        wait = "finishing…" if self.done >= len(self.work) else wait
        return f"{unit} {self.done}/{len(self.work)} · {elapsed:.0f} s so far, {wait}"


class StepTimer:
    """Seconds per attack step per model: measured by a short probe run, refined by every real run."""

    def __init__(self) -> None:
        self._seconds: dict[str, float] = {}

    def record(self, model: str, seconds: float) -> None:
        self._seconds[model] = seconds

    def seconds_per_step(self, engine: Any, sess: Any) -> float:
        if sess.name not in self._seconds:  # timed as the real run runs: in the line of heavy jobs
            self._seconds[sess.name] = heavy(self._probe, engine, sess, kind="probe")
        return self._seconds[sess.name]

    @staticmethod
    def _probe(engine: Any, sess: Any) -> float:
        """Seconds a step of one short run, timed as a real run's clock times it (RunClock): the warm-up steps
        (kernels, caches, the first passes) and the run's setup are left out. A probe that kept its second and
        third steps read the pace of a warming run, and sized Optimise 2 to 4.6 times too long (issue 42)."""
        marks: list[float] = []
        steps = WARM_UP_STEPS + PROBE_STEPS
        engine.optimise(sess, steps=steps, on_step=lambda *_: marks.append(time.perf_counter()))
        return (marks[-1] - marks[WARM_UP_STEPS - 1]) / PROBE_STEPS
