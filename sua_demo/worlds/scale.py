"""`sua build-scale`: docs/scale.md's study of SUA's reach against the vision tower's size. Each size is a faithful
world built exactly as the shipped one (general stage, people learned by the language model, IDK and GradDiff under
the study's train-photo rule), only the pretrained tower is narrower or wider, shallower or deeper; then the shipped
attack, blind, every control. Size M is today's tower: its trend points are the faithful worlds 0 and 1 as first
built (their record); the second axis rebuilds them here under the study's rule (`world_of`).

Weights stay in runs/faithful/scale/<size>/; each world's reports (evaluations, gates, attack reports) are copied
to checkpoints/faithful/scale/<size>/world<seed>/ as soon as the world is whole. Every step resumes."""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import torch

from sua_demo.analysis.scale_trend import GROUPS, people_table, people_trend, points, table, trend
from sua_demo.attacks import AttackConfig
from sua_demo.core.config import CHECKPOINTS, BenchConfig, GeneralConfig, TowerConfig, faithful_bench
from sua_demo.core.errors import BadValueError, UnknownNameError
from sua_demo.core.io import atomic_write_text, write_json
from sua_demo.eval.recovery import ATTACKER_FRACTION
from sua_demo.training.pretrain.tower import build_clip
from sua_demo.worlds.build import DEMO_MODELS, RECIPES
from sua_demo.worlds.faithful import (
    ATTACK_SPLITS,
    FAITHFUL,
    REPORTS,
    RUNS,
    attack_world,
    attacked_worlds,
    build_general,
    build_model,
    copy_reports,
    noise_dir,
    write_gates,
)

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
    """Where a size's world is built. Size M's trend points are the faithful worlds' record under the train-photo
    rule (`attacked_worlds`); the shipped world 0 now holds the validation rule's IDK and GradDiff, so a size-M world
    this study attacks again (docs/scale.md, the second axis) is rebuilt here under the study's rule."""
    tower_of(size)
    return plan.runs / size / f"world{seed}"


def general_of(size: str, progress: bool = True, plan: Plan = STUDY) -> Path:
    """The size's own tower, pretrained as the shipped one, and its general model: shared by the size's worlds,
    so build it before building two worlds side by side."""
    if size == "M" and plan.is_study:
        return FAITHFUL / "general"  # today's tower: the shipped general model every faithful world starts from
    general = replace(GeneralConfig(), **plan.general)
    return build_general(plan.runs / size / "general", plan.runs / size, progress, tower_of(size, plan), general,
                         plan.bench(0))  # fmt: skip


def build_size(size: str, seed: int, progress: bool = True, plan: Plan = STUDY) -> Path:
    """One world at one tower size: the size's general model (`general_of`), then vanilla, the retrain control,
    IDK and GradDiff; its gates written and its reports shipped once it is whole."""
    general, tower = general_of(size, progress, plan), tower_of(size, plan)
    out, bench_cfg = world_of(size, seed, plan), plan.bench(seed)
    if size == "M" and seed == 0 and plan.is_study:
        _share_shipped_people(out)
    for recipe in (r for r in RECIPES if r.name in STUDIED):
        build_model(recipe, general, out / "vanilla", bench_cfg, out / recipe.name, plan.unlearn, progress, tower,
                    plan.train)  # fmt: skip
    write_gates(out)
    record = plan.reports / size / f"world{seed}"
    if rebuilt_apart(out, record):
        log.warning("size %s, world %s was built again and does not evaluate as its record: the record stays until "
                    "this world's own attack is whole, then this world replaces it", size, seed)  # fmt: skip
    else:
        copy_reports(out, record)
    return out


def rebuilt_apart(world: Path, record: Path) -> bool:
    """A world built again (its runs/ were lost, docs/scale.md) whose models do not all evaluate as those its record's
    attack was run on: its reports must not stand beside that attack's, so they replace the record only whole."""
    return any(record.glob("noise/*/report.json")) and not _same_world(world, record)


def recorded_attacks(world: Path, record: Path) -> list[str]:
    """The demo models whose attack at the protocol's share the record already holds for this very world (every
    model evaluates as the record's): a world built again after its runs/ were lost is not attacked twice."""
    if not _same_world(world, record):
        return []
    return [name for name in DEMO_MODELS if (record / "noise" / name / "report.json").is_file()]


def _share_shipped_people(out: Path) -> None:
    """Size M's world 0 under the study's rule has the shipped world 0's vanilla and retrain control (issue 41's
    rules changed only IDK and GradDiff): copied, not rebuilt, and refused unless their evaluations are the record's."""
    for name in ("vanilla", "retrain"):
        if (out / name / "eval.json").is_file():
            continue
        if not _evaluates_as(FAITHFUL / name, REPORTS / "world0" / name):
            raise BadValueError(f"the shipped {name} is not the one the train-photo-rule world 0 was built with")
        shutil.copytree(FAITHFUL / name, out / name, dirs_exist_ok=True)


def vanilla_misses(folder: Path) -> list[str]:
    """The vanilla gates a built world misses (docs/scale.md: a world whose vanilla misses its gates is reported as
    such and not attacked; a model that never knew its people has nothing to hide)."""
    gates = json.loads((folder / "gates.json").read_text())["gates"] if (folder / "gates.json").is_file() else []
    return [f"{r['group']} {r['metric']} {100 * r['value']:.1f} % (gate {r['gate']})"
            for r in gates if r["model"] == "vanilla" and r["value"] is not None and not r["met"]]  # fmt: skip


def attack_size(
    size: str,
    seed: int,
    plan: Plan = STUDY,
    attacker_fraction: float = ATTACKER_FRACTION,
    only: list[str] | None = None,
) -> Path:
    """The shipped attack, unchanged and blind, on a size's built world (3 splits, every control); reports shipped.
    Refused where the world's vanilla misses its gates (the study's plan; a toy's models learn nothing).
    `attacker_fraction`: the second axis, another share of the forget people for the attacker (its own folder)."""
    attack = replace(AttackConfig(), **plan.attack)
    folder = world_of(size, seed, plan)
    missed = vanilla_misses(folder) if plan.is_study else []
    if missed:
        raise BadValueError(f"size {size}, world {seed}: its vanilla misses {'; '.join(missed)}; by docs/scale.md's "
                            "gates it is reported as such and not attacked")  # fmt: skip
    record = plan.reports / size / f"world{seed}"
    recorded = recorded_attacks(folder, record) if attacker_fraction == ATTACKER_FRACTION else []
    names = [name for name in only or DEMO_MODELS if name not in recorded]
    if recorded:
        log.info("size %s, world %s evaluates as its record: the record's attack of %s stands", size, seed, recorded)
    if not names:
        return noise_dir(folder, attacker_fraction)
    noise = attack_world(seed, list(plan.splits), names, folder, plan.bench(seed), attack, attacker_fraction)
    whole = all((noise_dir(folder) / name / "report.json").is_file() for name in DEMO_MODELS)
    if whole or not rebuilt_apart(folder, record):
        copy_reports(folder, record)
    write_trend(plan.reports, plan.reports)
    write_people(size, plan.reports)
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


# docs/scale.md's second axis: δ fitted on 4, 8 (the protocol's) and 11 of the 15 forget people, the rest unseen
PEOPLE_FRACTIONS = (0.25, ATTACKER_FRACTION, 0.75)


def same_as_record(size: str, seed: int, reports: Path = SCALE_REPORTS) -> bool:
    """Whether a size-M world rebuilt for the second axis evaluates exactly as the record's world of that seed (every
    model, every figure): then the record's attack at the protocol's share is this world's too."""
    return size == "M" and _same_world(reports / size / f"world{seed}", REPORTS / f"world{seed}")


def _same_world(world: Path, other: Path) -> bool:
    """Every model of two world folders evaluates the same (`_evaluates_as`): the same world."""
    return all(_evaluates_as(world / name, other / name) for name in STUDIED)


def _evaluates_as(model: Path, other: Path) -> bool:
    """Two model folders whose evaluations (eval.json's report, every figure) are the same: the same model."""
    found = [json.loads((m / "eval.json").read_text())["report"] for m in (model, other) if (m / "eval.json").is_file()]
    return len(found) == 2 and found[0] == found[1]


def people_reports(model: str, size: str = "M", reports: Path = SCALE_REPORTS) -> dict[str, dict[str, Any]]:
    """reports[attacker people][world] of one model, over the size's worlds attacked at another share of attacker
    people: each share's own folder, the protocol's share from the world's noise/ or, where the world is the
    record's own models (`same_as_record`), from the record."""
    out: dict[str, dict[str, Any]] = {}
    for world in sorted((reports / size).glob("world*")):
        if not any(world.glob(f"noise_fraction*/{model}/report.json")):
            continue
        seed = int(world.name.removeprefix("world"))
        for fraction in PEOPLE_FRACTIONS:
            path = noise_dir(world, fraction) / model / "report.json"
            if not path.is_file() and fraction == ATTACKER_FRACTION and same_as_record(size, seed, reports):
                path = REPORTS / world.name / "noise" / model / "report.json"
            if path.is_file():
                report = json.loads(path.read_text())
                people = str(len(report["splits"][0]["split"]["attacker_ids"]))
                out.setdefault(people, {})[f"world {seed}"] = report
    return dict(sorted(out.items(), key=lambda kv: int(kv[0])))


def attack_people(size: str, seed: int, plan: Plan = STUDY, only: list[str] | None = None) -> list[Path]:
    """The second axis on one built world: the shipped attack at each share of PEOPLE_FRACTIONS, the protocol's
    share left out where the world is the record's own models (the record's attack is its own)."""
    return [
        attack_size(size, seed, plan, fraction, only)
        for fraction in PEOPLE_FRACTIONS
        if fraction != ATTACKER_FRACTION or not same_as_record(size, seed, plan.reports)
    ]


def write_people(size: str = "M", reports: Path = SCALE_REPORTS) -> dict[str, Any] | None:
    """people.json and people.md under the size's reports: the second axis's table and slope per model and group,
    read as the trend over sizes is (docs/scale.md, Changes, ninth session). None until a share other than the
    protocol's is attacked."""
    found: dict[str, Any] = {"size": size, "unseen": {}, "models": {}}
    lines = [f"# Does SUA's reach grow with the people δ is fitted on? (tower {size})", "",
             "docs/scale.md's second axis. Generation exact match, points: the gain of δ over the clean photo, each "
             "control's gain, and δ's gain beyond the best control, mean ± sd over world × split points."]  # fmt: skip
    for model in DEMO_MODELS:
        by_people = people_reports(model, size, reports)
        if not by_people:
            continue
        unseen = {k: len(next(iter(w.values()))["splits"][0]["split"]["unseen_ids"]) for k, w in by_people.items()}
        found["unseen"] |= unseen
        found["models"][model] = {}
        for label, group in GROUPS.items():
            pts = points(by_people, group)
            t = people_trend(pts)
            found["models"][model][group] = {"points": [asdict(p) for p in pts], "trend": asdict(t)}
            lines += ["", f"## {model}: {label}", "", people_table(pts, unseen).rstrip(), "",
                      t.sentence(f"{model}, {label}")]  # fmt: skip
    if not found["models"]:
        return None
    found["unseen"] = dict(sorted(found["unseen"].items(), key=lambda kv: int(kv[0])))
    write_json(reports / size / "people.json", found)
    atomic_write_text(reports / size / "people.md", "\n".join(lines) + "\n")
    return found
