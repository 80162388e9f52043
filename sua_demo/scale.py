"""`sua build-scale`: docs/scale.md's study of SUA's reach against the vision tower's size. Each size is a faithful
world built exactly as the shipped one (general stage, people learned by the language model, IDK and GradDiff with
the shipped rules), only the pretrained tower is narrower or wider, shallower or deeper; then the shipped attack,
blind, every control. Size M is today's tower: its worlds are the faithful worlds 0 and 1 that already ship.

Weights stay in runs/faithful/scale/<size>/; each world's reports (evaluations, gates, attack reports) are copied
to checkpoints/faithful/scale/<size>/world<seed>/ as soon as the world is whole. Every step resumes."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

from sua_demo.build import DEMO_MODELS, RECIPES
from sua_demo.config import TowerConfig, faithful_bench
from sua_demo.errors import UnknownNameError
from sua_demo.faithful import (
    FAITHFUL,
    RUNS,
    attack_world,
    build_general,
    build_model,
    copy_reports,
    world_dir,
    write_gates,
)

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
    return noise
