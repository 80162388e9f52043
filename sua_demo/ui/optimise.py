"""'Optimise a noise now' sized for a CPU: how long it will take, and what it shows while it runs."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import torch

from sua_demo.images import amplified, to_pil
from sua_demo.plots import loss_figure

# The app's default run: about 20 s on 2 cores at the shipped recipe's batch and step cost (bench/app_latency.py
# measures it; the estimate shown before a run uses this machine's own measured step time).
APP_STEPS = 60
PROBE_STEPS = 2


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
        if sess.name not in self._seconds:
            t0 = time.perf_counter()
            engine.optimise(sess, steps=PROBE_STEPS)
            self._seconds[sess.name] = (time.perf_counter() - t0) / PROBE_STEPS
        return self._seconds[sess.name]


def progress_view(
    history: list[tuple[int, float]],
    steps: int,
    delta: torch.Tensor,
    eps_255: float,
    elapsed: float,
    meta: dict[str, Any] | None = None,
) -> OptimiseView:
    done = history[-1][0] if history else 0
    preview = to_pil(amplified(delta, eps_255 / 255), scale=max(1, 192 // delta.shape[-1]))
    if meta is None:
        left = elapsed / max(done, 1) * (steps - done)
        status = f"step {done}/{steps} · {elapsed:.0f} s so far, about {left:.0f} s left"
    else:
        how = "stopped early" if meta.get("stopped_early") else "done"
        loss = f", final loss {history[-1][1]:.3f}" if history else ""
        status = f"{how}: {int(meta.get('step', done))} steps in {elapsed:.0f} s{loss}; noise source set to 'optimised'"
    return OptimiseView(loss_figure(history, steps), status, preview)
