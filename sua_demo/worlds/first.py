"""`sua build-worlds` / `make worlds`: do the claims hold in other worlds (bench seeds), not only the shipped one?

Each world is built with the shipped recipes exactly (the same people count, forget split and photos, fixed
before any attack result was seen; only the seed that draws faces, names and facts changes), its demo
models are attacked over 3 attacker/unseen splits, and the summary sets the spread between worlds beside
the spread between splits. The shipped world (checkpoints/noise/*/report.json) is one of them.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from sua_demo.core.config import BenchConfig
from sua_demo.core.io import atomic_write_text, write_json
from sua_demo.eval.recovery import GROUPS
from sua_demo.eval.report import LABELS
from sua_demo.worlds.build import DEMO_MODELS, build_all, build_noises

log = logging.getLogger(__name__)
WORLD_SPLITS = [0, 1, 2]
# (name, label, model, condition, baseline condition or None, metric): one figure per split, in points
KEYS = (
    ("clean", "clean", "unlearned", "clean", None, "gen_em"),
    ("sua", "with δ", "unlearned", "sua", None, "gen_em"),
    ("gain_sua", "gain", "unlearned", "sua", "clean", "gen_em"),
    ("gain_random", "random-noise gain", "unlearned", "random", "clean", "gen_em"),
    ("gain_same_delta", "same δ on retrain", "retrain", "sua", "clean", "gen_em"),
    ("gain_own_delta", "δ optimised on retrain", "retrain", "sua_on_retrain", "clean", "gen_em"),
    ("refusal_clean", "refusal clean", "unlearned", "clean", None, "gen_refusal"),
    ("refusal_sua", "refusal with δ", "unlearned", "sua", None, "gen_refusal"),
)


def build_world(seed: int, root: Path) -> Path:
    """Models and noises of one world under root/seed{S}; parts already built are kept."""
    world = root / f"seed{seed}"
    models = world / "tiny-llava"
    bench_cfg = replace(BenchConfig(), seed=seed)
    missing = [n for n in ("vanilla", "retrain", *DEMO_MODELS) if not (models / n / "eval.json").is_file()]
    if missing:
        build_all(models, only=missing, bench_cfg=bench_cfg)
    todo = [n for n in DEMO_MODELS if not (world / "noise" / n / "report.json").is_file()]
    if todo:
        build_noises(models, world / "noise", only=todo, bench_cfg=bench_cfg, splits=WORLD_SPLITS, studies=False)
    return world / "noise"


def _per_split(report: dict[str, Any], key: tuple, group: str) -> list[float]:
    """One figure per split, in points, recomputed from the splits (the summary holds only their mean)."""
    _, _, model, cond, base, metric = key
    out = []
    for s in report["splits"]:
        value = s[model][cond][group][metric] - (s[model][base][group][metric] if base else 0.0)
        out.append(100 * value)
    return out


def summarise_worlds(reports: dict[str, dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """reports[world][model] -> per model, key and group: each world's mean, the mean over worlds, the sd
    between worlds (of their means) and the sd between splits (within a world, averaged over worlds)."""
    models = sorted({m for r in reports.values() for m in r})
    out: dict[str, Any] = {"worlds": list(reports), "models": {}}
    for model in models:
        rows: dict[str, Any] = {}
        for key in KEYS:
            for g in GROUPS:
                per_world = {w: _per_split(r[model], key, g) for w, r in reports.items() if model in r}
                means = [float(np.mean(v)) for v in per_world.values()]
                rows[f"{g}/{key[0]}"] = {
                    "per_world": {w: float(np.mean(v)) for w, v in per_world.items()},
                    "mean": float(np.mean(means)),
                    "sd_worlds": float(np.std(means)),
                    "sd_splits": float(np.mean([np.std(v) for v in per_world.values()])),
                    "splits": {w: len(v) for w, v in per_world.items()},
                }
        out["models"][model] = rows
    return out


def markdown(summary: dict[str, Any]) -> str:
    lines = [
        "# Across worlds",
        "",
        f"Worlds (bench seeds): {', '.join(summary['worlds'])}. Generation exact match, points: the mean over worlds "
        "of each world's mean over its splits; sd between worlds | mean sd between splits.",
    ]
    for model, rows in summary["models"].items():
        lines += ["", f"## {model}", "", "| group | " + " | ".join(k[1] for k in KEYS) + " |"]
        lines.append("|---|" + "---|" * len(KEYS))
        for g in GROUPS:
            cells = []
            for key in KEYS:
                r = rows[f"{g}/{key[0]}"]
                cells.append(f"{r['mean']:.1f} ({r['sd_worlds']:.1f} \\| {r['sd_splits']:.1f})")
            lines.append(f"| {LABELS[g]} | " + " | ".join(cells) + " |")
        lines += ["", "Per world, gain with δ on unseen people's held-out photos (c) and retain accuracy:", ""]
        lines += ["| world | c gain | same δ on retrain (c) | retain clean | retain with δ |", "|---|---|---|---|---|"]
        c, ret = rows["c_unseen_heldout/gain_sua"], rows["c_unseen_heldout/gain_same_delta"]
        rc, rs = rows["retain_heldout/clean"], rows["retain_heldout/sua"]
        for w in summary["worlds"]:
            if w in c["per_world"]:
                lines.append(
                    f"| {w} | {c['per_world'][w]:+.1f} | {ret['per_world'][w]:+.1f} | {rc['per_world'][w]:.1f} "
                    f"| {rs['per_world'][w]:.1f} |"
                )
    return "\n".join(lines) + "\n"


def build_worlds(seeds: list[int], root: Path, shipped_noise: Path, out: Path) -> dict[str, Any]:
    """Build every world not yet built, then write out/worlds.json and worlds.md over them and the shipped one."""
    reports: dict[str, dict[str, Any]] = {}
    shipped = {m: json.loads((shipped_noise / m / "report.json").read_text()) for m in DEMO_MODELS}
    reports[f"seed{BenchConfig.seed} (shipped)"] = shipped
    for seed in seeds:
        noise = build_world(seed, root)
        reports[f"seed{seed}"] = {m: json.loads((noise / m / "report.json").read_text()) for m in DEMO_MODELS}
    summary = summarise_worlds(reports)
    write_json(out / "worlds.json", summary)
    atomic_write_text(out / "worlds.md", markdown(summary))
    log.info("wrote %s", out / "worlds.md")
    return summary


# (label, key) of the first-against-faithful table: the gain with δ and every control, in points
COMPARED = (
    ("gain with δ", "gain_sua"),
    ("random noise", "gain_random"),
    ("same δ on retrain", "gain_same_delta"),
    ("δ fitted on retrain", "gain_own_delta"),
)


def world_reports(noise_dirs: dict[str, Path]) -> dict[str, dict[str, Any]]:
    """reports[world][model] of every demo model each noise folder has finished."""
    out: dict[str, dict[str, Any]] = {}
    for world, folder in noise_dirs.items():
        found = {
            m: json.loads((folder / m / "report.json").read_text())
            for m in DEMO_MODELS
            if (folder / m / "report.json").is_file()
        }
        if found:
            out[world] = found
    return out


def compare_markdown(
    first: dict[str, Any],
    faithful: dict[str, Any],
    names: tuple[str, str] = ("first world", "faithful world"),
    level: int = 1,
) -> str:
    """Two summaries side by side (the first world beside the faithful one, or one world's two recipes), per demo
    model both have and group: the mean gain over worlds (and splits) of δ and of each control, with the worlds
    each mean is over."""
    lines = [
        f"{'#' * level} The {names[0]} against the {names[1]}",
        "",
        f"{names[0].capitalize()}: {', '.join(first['worlds'])}. {names[1].capitalize()}: "
        f"{', '.join(faithful['worlds'])}. Generation exact match gains over clean, in points, mean over worlds of "
        f"each world's mean over its splits: **{names[0]} | {names[1]}**.",
    ]
    for model in sorted(set(first["models"]) & set(faithful["models"])):
        a, b = first["models"][model], faithful["models"][model]
        lines += [
            "",
            f"{'#' * (level + 1)} {model}",
            "",
            "| group | clean | " + " | ".join(c for c, _ in COMPARED) + " |",
        ]
        lines.append("|---|---|" + "---|" * len(COMPARED))
        for g in GROUPS:
            clean = f"{a[f'{g}/clean']['mean']:.1f} \\| {b[f'{g}/clean']['mean']:.1f}"
            cells = [f"{a[f'{g}/{k}']['mean']:+.1f} \\| **{b[f'{g}/{k}']['mean']:+.1f}**" for _, k in COMPARED]
            lines.append(f"| {LABELS[g]} | {clean} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def compare_worlds(
    first_summary: Path, noise_dirs: dict[str, Path], out: Path, new_rule: dict[str, Path] | None = None
) -> dict[str, Any]:
    """compare.json / compare.md: the faithful worlds' summary (every finished world) beside the first world's;
    with `new_rule` (each world's noise folder of the models the validation-photo rules made), the train-photo
    rule's models (`noise_dirs`, as the worlds were first built) beside the new rule's, over the worlds each has."""
    first = json.loads(first_summary.read_text())
    faithful = summarise_worlds(world_reports(noise_dirs))
    names = ("first world", "faithful world" + (", train-photo rule" if new_rule else ""))
    found, text = {"first": first, "faithful": faithful}, compare_markdown(first, faithful, names)
    if new_rule:  # the first world's rule reads train photos too: the construction is compared under one rule
        found["new_rule"] = summarise_worlds(world_reports(new_rule))
        names = ("train-photo stopping rule (as first built)", "validation-photo rules (shipped)")
        text += "\n" + compare_markdown(faithful, found["new_rule"], names, level=2)
    write_json(out / "compare.json", found)
    atomic_write_text(out / "compare.md", text)
    return faithful
