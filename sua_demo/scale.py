"""`sua build-scale`: docs/scale.md's study of SUA's reach against the vision tower's size. Each size is a faithful
world built exactly as the shipped one (general stage, people learned by the language model, IDK and GradDiff with
the shipped rules), only the pretrained tower is narrower or wider, shallower or deeper; then the shipped attack,
blind, every control. Size M is today's tower: its worlds are the faithful worlds 0 and 1 that already ship.

Weights stay in runs/faithful/scale/<size>/; each world's reports (evaluations, gates, attack reports) are copied
to checkpoints/faithful/scale/<size>/world<seed>/ as soon as the world is whole. Every step resumes."""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from sua_demo.analysis.scale_trend import GROUPS, points, table, trend
from sua_demo.build import DEMO_MODELS, RECIPES
from sua_demo.config import CHECKPOINTS, TowerConfig, faithful_bench
from sua_demo.errors import UnknownNameError
from sua_demo.faithful import (
    FAITHFUL,
    RUNS,
    attack_world,
    attacked_worlds,
    build_general,
    build_model,
    copy_reports,
    world_dir,
    write_gates,
)
from sua_demo.io import atomic_write_text, write_json
from sua_demo.pretrain.tower import build_clip

log = logging.getLogger(__name__)

# docs/scale.md, "Axes": width x depth around today's tower, 32-wide heads; everything else of the tower's
# pretraining (population, loss, batch, rate, steps) as TowerConfig ships it.
SIZES: dict[str, TowerConfig] = {
    "S": replace(TowerConfig(), hidden=64, layers=2, heads=2),
    "M": TowerConfig(),
    "L": replace(TowerConfig(), hidden=256, layers=8, heads=8),
}
STUDIED = ("vanilla", "retrain", *DEMO_MODELS)  # what each size builds: the controls and the attacked methods
SCALE_RUNS = RUNS / "scale"
SCALE_REPORTS = FAITHFUL / "scale"


def tower_of(size: str) -> TowerConfig:
    if size not in SIZES:
        raise UnknownNameError(f"unknown tower size {size!r}; choose from {list(SIZES)}")
    return SIZES[size]


def world_of(size: str, seed: int) -> Path:
    """Where a size's world is built: size M's are the shipped faithful worlds (docs/scale.md)."""
    tower_of(size)
    return world_dir(seed) if size == "M" else SCALE_RUNS / size / f"world{seed}"


def general_of(size: str, progress: bool = True) -> Path:
    """The size's own tower, pretrained as the shipped one, and its general model: shared by the size's worlds,
    so build it before building two worlds side by side."""
    if size == "M":
        raise UnknownNameError("size M is today's tower: its worlds are built by `sua build-faithful`")
    return build_general(SCALE_RUNS / size / "general", SCALE_RUNS / size, progress, tower_cfg=tower_of(size))


def build_size(size: str, seed: int, progress: bool = True) -> Path:
    """One world at one tower size: the size's general model (`general_of`), then vanilla, the retrain control,
    IDK and GradDiff; its gates written and its reports shipped once it is whole."""
    general, tower = general_of(size, progress), tower_of(size)
    out, bench_cfg = world_of(size, seed), faithful_bench(seed)
    for recipe in (r for r in RECIPES if r.name in STUDIED):
        build_model(recipe, general, out / "vanilla", bench_cfg, out / recipe.name, None, progress, tower)
    write_gates(out)
    copy_reports(out, SCALE_REPORTS / size / f"world{seed}")
    return out


def attack_size(size: str, seed: int) -> Path:
    """The shipped attack, unchanged and blind, on a size's built world (3 splits, every control); reports shipped."""
    noise = attack_world(seed, folder=world_of(size, seed))
    if size != "M":
        copy_reports(world_of(size, seed), SCALE_REPORTS / size / f"world{seed}")
    write_trend()
    return noise


# the offsets ceiling (studies/offsets.py on world 0's IDK, --lr 0.2): size M's shipped run, the others' own
OFFSETS = {"M": CHECKPOINTS / "studies" / "offsets" / "offsets_faithful.json"}
CEILINGS = {"pixels": "offset_input", "image tokens": "offset_output"}  # any pixel pattern; any image tokens


def ceilings(model: str = "idk") -> dict[str, dict[str, list[float]]]:
    """ceilings[size][site]: per split, the offset's gain over the clean photo on unseen people's held-out photos
    (group c), in points, for every size whose offsets study has run."""
    out = {}
    for size in SIZES:
        path = OFFSETS.get(size, SCALE_REPORTS / size / "offsets.json")
        run = json.loads(path.read_text()).get(model) if path.is_file() else None
        if run:
            splits = run["splits"].values()
            out[size] = {site: [r[key]["c"]["gen_em"] - r["clean"]["c"]["gen_em"] for r in splits]
                         for site, key in CEILINGS.items()}  # fmt: skip
    return out


@cache
def tower_parameters(size: str) -> int:
    """The vision tower's parameters at this size, as pretraining builds it (the caption tower is thrown away)."""
    return sum(p.numel() for p in build_clip(tower_of(size)).vision_model.parameters())


def attack_reports(model: str, seeds: tuple[int, ...] = (0, 1)) -> dict[str, dict[str, Any]]:
    """reports[size][world] of one attacked model: size M's from the shipped faithful worlds, the others' from
    their shipped copies under SCALE_REPORTS; a world not attacked yet is left out."""
    out: dict[str, dict[str, Any]] = {}
    shipped = attacked_worlds()  # size M: the faithful worlds' own attack reports
    for size in SIZES:
        found = {}
        for seed in seeds:
            folder = shipped.get(f"seed{seed}") if size == "M" else SCALE_REPORTS / size / f"world{seed}" / "noise"
            path = folder / model / "report.json" if folder is not None else None
            if path is not None and path.is_file():
                found[f"world {seed}"] = json.loads(path.read_text())
        if found:
            out[size] = found
    return out


def write_trend(out: Path = SCALE_REPORTS) -> dict[str, Any]:
    """trend.json and trend.md: per attacked model and group, the table per size and the slope with its interval
    (docs/scale.md, "How the trend is read"), over every size attacked so far."""
    params = {size: float(tower_parameters(size)) for size in SIZES}
    found: dict[str, Any] = {"parameters": params, "models": {}}
    lines = ["# Does SUA's reach grow with the vision tower?", "", "docs/scale.md's reading, over every size "
             "attacked so far. Generation exact match, points: the gain of δ over the clean photo, each control's "
             "gain, and δ's gain beyond the best control, mean ± sd over world × split points."]  # fmt: skip
    for model in DEMO_MODELS:
        reports = attack_reports(model)
        found["models"][model] = {}
        for label, group in GROUPS.items():
            pts = points(reports, group)
            t = trend(pts, params) if pts else None
            found["models"][model][group] = {"points": [asdict(p) for p in pts], "trend": t and asdict(t)}
            lines += ["", f"## {model}: {label}", "", table(pts, params).rstrip()]
            if t is not None:
                lines += ["", t.sentence(f"{model}, {label}")]
    found["ceilings"] = ceilings()
    lines += ["", "## The ceilings on IDK: unseen people, held-out photos", "",
              "An offset with no budget, fitted like δ, at the tower's input (any pixel pattern) and at its output "
              "(any image tokens), world 0, per split (studies/offsets.py):", "",
              "| tower | " + " | ".join(CEILINGS) + " |", "|---|" + "---|" * len(CEILINGS)]  # fmt: skip
    for size, sites in found["ceilings"].items():
        lines.append(f"| {size} | " + " | ".join(f"{np.mean(v):+.1f} ± {np.std(v):.1f}" for v in sites.values()) + " |")
    write_json(out / "trend.json", found)
    atomic_write_text(out / "trend.md", "\n".join(lines) + "\n")
    return found
