"""'Optimise a noise now' sized for a CPU: how long it will take, and what it shows while it runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from sua_demo.engine import amplified, to_pil
from sua_demo.ui.shared.clock import RunClock
from sua_demo.ui.shared.plots import loss_figure

# The app's default run takes about APP_SECONDS on the machine it runs on: the step time is measured once at start
# (a step costs 3 to 13 times more on one CPU than another, by its bf16 support), and the steps sized to fit.
APP_SECONDS = 20.0
STEP_RANGE = (20, 300)


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
    done: int = 0  # steps done, of `total`: what an MCP client's progress notifications count
    total: int = 0


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
        status = f"{how}: {int(meta.get('step', done))} steps in {elapsed:.0f} s{loss}"
    return OptimiseView(loss_figure(history, steps), status, preview, done=done, total=steps)
