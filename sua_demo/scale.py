"""`sua build-scale`: docs/scale.md's study of SUA's reach against the vision tower's size. Each size is a faithful
world built exactly as the shipped one (general stage, people learned by the language model, IDK and GradDiff with
the shipped rules), only the pretrained tower is narrower or wider, shallower or deeper; then the shipped attack,
blind, every control. Size M is today's tower: its worlds are the faithful worlds 0 and 1 that already ship.

Weights stay in runs/faithful/scale/<size>/; each world's reports (evaluations, gates, attack reports) are copied
to checkpoints/faithful/scale/<size>/world<seed>/ as soon as the world is whole. Every step resumes."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import torch

from sua_demo.analysis.scale_trend import GROUPS, points, table, trend
from sua_demo.attacks import AttackConfig
from sua_demo.build import DEMO_MODELS, RECIPES
from sua_demo.config import CHECKPOINTS, BenchConfig, GeneralConfig, TowerConfig, faithful_bench
from sua_demo.errors import BadValueError, UnknownNameError
from sua_demo.faithful import (
    ATTACK_SPLITS,
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
    # the next sizes up, for a GPU (benchmarks/gpu_scale.sh): CLIP ViT-B's width and depth, then twice its width
    "XL": replace(TowerConfig(), hidden=512, layers=12, heads=16),
    "XXL": replace(TowerConfig(), hidden=1024, layers=12, heads=32),
}
CPU_SIZES = ("S", "M", "L")  # the trend's slope; XL and XXL (a GPU's) are shown beside it, apart (docs/scale.md)
STUDIED = ("vanilla", "retrain", *DEMO_MODELS)  # what each size builds: the controls and the attacked methods
SCALE_RUNS = RUNS / "scale"
SCALE_REPORTS = FAITHFUL / "scale"


@dataclass(frozen=True)
class Plan:
    """How much of each stage a run of the study does, and where it writes. The study's plan runs every recipe as
    it ships; the toy plan runs every stage of the same code in seconds (a few people, a few steps, one split), so
    that benchmarks/gpu_scale.sh is tested on a CPU before any GPU runs it."""

    runs: Path = SCALE_RUNS  # weights and resumable states
    reports: Path = SCALE_REPORTS  # evaluations, gates and attack reports, per size and world
    bench: Callable[[int], BenchConfig] = faithful_bench
    tower: dict[str, Any] = field(default_factory=dict)  # TowerConfig fields beside the size's width and depth
    general: dict[str, Any] = field(default_factory=dict)  # GeneralConfig fields
    train: dict[str, Any] = field(default_factory=dict)  # TrainConfig fields of vanilla and the retrain control
    unlearn: dict[str, Any] = field(default_factory=dict)  # UnlearnConfig fields of IDK and GradDiff
    attack: dict[str, Any] = field(default_factory=dict)  # AttackConfig fields of δ and its controls
    splits: tuple[int, ...] = tuple(ATTACK_SPLITS)

    @property
    def is_study(self) -> bool:
        """The study's recipes, wherever it writes."""
        return replace(self, runs=STUDY.runs, reports=STUDY.reports) == STUDY


def toy_bench(seed: int) -> BenchConfig:
    """The faithful bench's kind of photos for a few people: enough for every group the attack reads."""
    return replace(faithful_bench(seed), n_people=10, photos_per_person=3, train_photos=2, forget_fraction=0.4,
                   holdout_people=1)  # fmt: skip


STUDY = Plan()
PLANS = {
    "study": STUDY,
    "toy": Plan(
        bench=toy_bench,
        tower={"people": 12, "photos": 2, "steps": 2, "batch_size": 8, "checkpoint_every": 2},
        general={"steps": 2, "batch_size": 4, "checkpoint_every": 2},
        train={"epochs": 1, "look_warmup_steps": 2, "batch_size": 8},
        unlearn={"max_steps": 2, "eval_every": 1, "batch_size": 4},
        attack={"steps": 2},
        splits=(0,),
    ),
}


def plan_of(name: str, out: str | Path | None = None) -> Plan:
    """A named plan; `out` moves its weights and reports under one folder (out/runs, out/reports)."""
    if name not in PLANS:
        raise UnknownNameError(f"unknown plan {name!r}; choose from {list(PLANS)}")
    plan = PLANS[name]
    return replace(plan, runs=Path(out) / "runs", reports=Path(out) / "reports") if out else plan


def tower_of(size: str, plan: Plan = STUDY) -> TowerConfig:
    if size not in SIZES:
        raise UnknownNameError(f"unknown tower size {size!r}; choose from {list(SIZES)}")
    return replace(SIZES[size], **plan.tower)


def world_of(size: str, seed: int, plan: Plan = STUDY) -> Path:
    """Where a size's world is built: in the study, size M's are the shipped faithful worlds (docs/scale.md)."""
    tower_of(size)
    return world_dir(seed) if size == "M" and plan.is_study else plan.runs / size / f"world{seed}"


def general_of(size: str, progress: bool = True, plan: Plan = STUDY) -> Path:
    """The size's own tower, pretrained as the shipped one, and its general model: shared by the size's worlds,
    so build it before building two worlds side by side."""
    if size == "M" and plan.is_study:
        raise UnknownNameError("size M is today's tower: its worlds are built by `sua build-faithful`")
    general = replace(GeneralConfig(), **plan.general)
    return build_general(plan.runs / size / "general", plan.runs / size, progress, tower_of(size, plan), general,
                         plan.bench(0))  # fmt: skip


def build_size(size: str, seed: int, progress: bool = True, plan: Plan = STUDY) -> Path:
    """One world at one tower size: the size's general model (`general_of`), then vanilla, the retrain control,
    IDK and GradDiff; its gates written and its reports shipped once it is whole."""
    general, tower = general_of(size, progress, plan), tower_of(size, plan)
    out, bench_cfg = world_of(size, seed, plan), plan.bench(seed)
    for recipe in (r for r in RECIPES if r.name in STUDIED):
        build_model(recipe, general, out / "vanilla", bench_cfg, out / recipe.name, plan.unlearn, progress, tower,
                    plan.train)  # fmt: skip
    write_gates(out)
    copy_reports(out, plan.reports / size / f"world{seed}")
    return out


def vanilla_misses(folder: Path) -> list[str]:
    """The vanilla gates a built world misses (docs/scale.md: a world whose vanilla misses its gates is reported as
    such and not attacked; a model that never knew its people has nothing to hide)."""
    gates = json.loads((folder / "gates.json").read_text())["gates"] if (folder / "gates.json").is_file() else []
    return [f"{r['group']} {r['metric']} {100 * r['value']:.1f} % (gate {r['gate']})"
            for r in gates if r["model"] == "vanilla" and r["value"] is not None and not r["met"]]  # fmt: skip


def attack_size(size: str, seed: int, plan: Plan = STUDY) -> Path:
    """The shipped attack, unchanged and blind, on a size's built world (3 splits, every control); reports shipped.
    Refused where the world's vanilla misses its gates (the study's plan; a toy's models learn nothing)."""
    attack = replace(AttackConfig(), **plan.attack)
    folder = world_of(size, seed, plan)
    missed = vanilla_misses(folder) if plan.is_study else []
    if missed:
        raise BadValueError(f"size {size}, world {seed}: its vanilla misses {'; '.join(missed)}; by docs/scale.md's "
                            "gates it is reported as such and not attacked")  # fmt: skip
    noise = attack_world(seed, list(plan.splits), folder=folder, bench_cfg=plan.bench(seed), attack=attack)
    if folder != world_dir(seed):
        copy_reports(folder, plan.reports / size / f"world{seed}")
    write_trend(plan.reports, plan.reports)
    return noise


# the offsets ceiling (studies/offsets.py on world 0's IDK, --lr 0.2): size M's shipped run, the others' own
OFFSETS = {"M": CHECKPOINTS / "studies" / "offsets" / "offsets_faithful.json"}
CEILINGS = {"pixels": "offset_input", "image tokens": "offset_output"}  # any pixel pattern; any image tokens


def ceilings(model: str = "idk", reports: Path = SCALE_REPORTS) -> dict[str, dict[str, list[float]]]:
    """ceilings[size][site]: per split, the offset's gain over the clean photo on unseen people's held-out photos
    (group c), in points, for every size whose offsets study has run."""
    out = {}
    for size in SIZES:
        path = OFFSETS.get(size, reports / size / "offsets.json")
        run = json.loads(path.read_text()).get(model) if path.is_file() else None
        if run and len(run["splits"]) == len(run["split_seeds"]):  # a run under way: not yet
            splits = run["splits"].values()
            out[size] = {site: [r[key]["c"]["gen_em"] - r["clean"]["c"]["gen_em"] for r in splits]
                         for site, key in CEILINGS.items()}  # fmt: skip
    return out


@cache
def tower_parameters(size: str) -> int:
    """The vision tower's parameters at this size, as pretraining builds it (the caption tower is thrown away)."""
    with torch.device("meta"):  # counted, never allocated: XXL's tower is 600 MB in fp32
        return sum(p.numel() for p in build_clip(tower_of(size)).vision_model.parameters())


WORLDS_PER_SIZE = 2  # docs/scale.md: worlds 0 and 1; a world refused for its vanilla's gates gives way to the next


def attack_reports(model: str, reports: Path = SCALE_REPORTS) -> dict[str, dict[str, Any]]:
    """reports[size][world] of one attacked model, from the first WORLDS_PER_SIZE worlds attacked at each size (by
    bench seed: 0 and 1, or 0 and 2 where world 1's vanilla missed its gates and was not attacked): size M's from
    the shipped faithful worlds, the others' from their shipped copies under `reports`."""
    out: dict[str, dict[str, Any]] = {}
    shipped = attacked_worlds()  # size M: the faithful worlds' own attack reports
    for size in SIZES:
        found = {}
        for seed in range(10):
            folder = shipped.get(f"seed{seed}") if size == "M" else reports / size / f"world{seed}" / "noise"
            path = folder / model / "report.json" if folder is not None else None
            if path is not None and path.is_file() and len(found) < WORLDS_PER_SIZE:
                found[f"world {seed}"] = json.loads(path.read_text())
        if found:
            out[size] = found
    return out


def write_trend(out: Path = SCALE_REPORTS, reports: Path = SCALE_REPORTS) -> dict[str, Any]:
    """trend.json and trend.md: per attacked model and group, the table per size and the slope with its interval
    (docs/scale.md, "How the trend is read"), over every size attacked so far."""
    by_model = {model: attack_reports(model, reports=reports) for model in DEMO_MODELS}
    attacked = {size for by_size in by_model.values() for size in by_size}
    params = {s: float(tower_parameters(s)) for s in SIZES if s in CPU_SIZES or s in attacked}  # in size order
    found: dict[str, Any] = {"parameters": params, "models": {}}
    lines = ["# Does SUA's reach grow with the vision tower?", "", "docs/scale.md's reading, over every size "
             "attacked so far. Generation exact match, points: the gain of δ over the clean photo, each control's "
             "gain, and δ's gain beyond the best control, mean ± sd over world × split points."]  # fmt: skip
    for model in DEMO_MODELS:
        found["models"][model] = {}
        for label, group in GROUPS.items():
            pts = points(by_model[model], group)
            on_cpu = [p for p in pts if p.size in CPU_SIZES]
            t = trend(on_cpu, {s: params[s] for s in CPU_SIZES}) if on_cpu else None
            found["models"][model][group] = {"points": [asdict(p) for p in pts], "trend": t and asdict(t)}
            lines += ["", f"## {model}: {label}", "", table(pts, params).rstrip()]
            if t is not None:
                lines += ["", t.sentence(f"{model}, {label}")]
    found["ceilings"] = ceilings(reports=reports)
    lines += ["", "## The ceilings on IDK: unseen people, held-out photos", "",
              "An offset with no budget, fitted like δ, at the tower's input (any pixel pattern) and at its output "
              "(any image tokens), world 0, per split (studies/offsets.py):", "",
              "| tower | " + " | ".join(CEILINGS) + " |", "|---|" + "---|" * len(CEILINGS)]  # fmt: skip
    for size, sites in found["ceilings"].items():
        lines.append(f"| {size} | " + " | ".join(f"{np.mean(v):+.1f} ± {np.std(v):.1f}" for v in sites.values()) + " |")
    write_json(out / "trend.json", found)
    atomic_write_text(out / "trend.md", "\n".join(lines) + "\n")
    return found
