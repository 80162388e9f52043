"""What robust unlearning costs (issue 58, docs/robust.md): seconds per unlearning step of each robust method against
its plain method, the shipped recipe and rule of each, from the default world's vanilla, on this CPU.

    .venv/bin/python benchmarks/robust_cost.py [--steps 12] [--rounds 2] [--threads 1] [--out FILE.json]

Plain and robust runs alternate (plain, robust, plain, robust, ...) so a machine that slows down part-way slows
both; each run's first step (start-up) is left out, and the stopping rule's probes never run inside the timed
steps. The whole-run cost follows from these and the steps each shipped model took (its `sua_config.json`), printed
beside it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import replace
from pathlib import Path

import torch

from sua_demo.core.config import faithful_bench
from sua_demo.core.io import write_json
from sua_demo.core.machine import describe
from sua_demo.dataset import build_bench
from sua_demo.models.examples import ImageBank
from sua_demo.models.loading import load_adapter
from sua_demo.unlearning.runner import check_groups, unlearn_adapter
from sua_demo.worlds.build import RECIPES, SHIPPED_PRECISION
from sua_demo.worlds.faithful import FAITHFUL, SHIPPED_RULES


def step_times(method: str, steps: int) -> list[float]:
    """Seconds of each of `steps` unlearning steps of `method` (its shipped recipe and rule) from world 0's vanilla,
    the first (start-up) step left out."""
    plain = method.removesuffix("_robust")
    recipe = next(r for r in RECIPES if r.name == plain)  # a robust recipe is its plain one with another method
    cfg = replace(recipe.unlearn, method=method, precision=SHIPPED_PRECISION, train_parts="language_model",
                  **SHIPPED_RULES[plain])  # fmt: skip
    cfg = replace(cfg, max_steps=steps + 1, eval_every=10**9)
    bench_cfg = faithful_bench(0)
    bench = build_bench(bench_cfg)
    adapter = load_adapter(FAITHFUL / "vanilla")
    marks: list[float] = []
    probe_only = {name: ids[:1] for name, ids in check_groups(bench).items()}  # the rule's start probe, kept short
    unlearn_adapter(adapter, bench, ImageBank(bench, adapter), cfg, None, probe_only, progress=False,
                    on_step=lambda step, _: marks.append(time.perf_counter()))  # fmt: skip
    return [b - a for a, b in zip(marks, marks[1:], strict=False)]


def shipped_steps(name: str) -> int | None:
    meta = FAITHFUL / name / "sua_config.json"
    return json.loads(meta.read_text()).get("steps") if meta.is_file() else None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    print(describe())
    found: dict[str, dict] = {}
    for plain in SHIPPED_RULES:
        times: dict[str, list[float]] = {plain: [], f"{plain}_robust": []}
        for _ in range(args.rounds):
            for method in times:
                times[method] += step_times(method, args.steps)
        median = {m: statistics.median(t) for m, t in times.items()}
        ratio = median[f"{plain}_robust"] / median[plain]
        steps = {m: shipped_steps(m) for m in times}
        found[plain] = {"median_s_per_step": median, "ratio": ratio, "shipped_steps": steps, "n": len(times[plain])}
        print(f"{plain}: {median[plain]:.2f} s a step, {plain}_robust {median[f'{plain}_robust']:.2f} s: "
              f"{ratio:.2f}x ({len(times[plain])} steps each); steps the shipped models took: {steps}")  # fmt: skip
    if args.out:
        write_json(args.out, {"cpu": describe(), "threads": args.threads, "methods": found})


if __name__ == "__main__":
    main()
