"""`sua build-faithful` / `make faithful`: the faithful world (docs/world.md), built in resumable steps.

1. the shared general model, once for every world: the tower pretrained on the population (pretrain/tower.py),
   rounded to fp16 as it ships, then the general stage over it (pretrain/general.py);
2. per bench seed: the shipped recipes (build.RECIPES, the demo models under SHIPPED_RULES) from the general model,
   the language model only.
Each step resumes from its checkpoint when the same command runs again, and a finished model folder is skipped."""

from __future__ import annotations

import json
import logging
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from sua_demo.attacks import AttackConfig
from sua_demo.audit import run_audit
from sua_demo.core.checkpoint import round_to_fp16, save_model_dir
from sua_demo.core.config import (
    CHECKPOINTS,
    BenchConfig,
    GeneralConfig,
    TowerConfig,
    TrainConfig,
    faithful_bench,
    faithful_model,
    shipped_world,
    shown_path,
)
from sua_demo.core.errors import MissingFileError, UnknownNameError
from sua_demo.core.io import atomic_write_text, write_json
from sua_demo.core.machine import describe
from sua_demo.dataset import build_bench
from sua_demo.eval.gates import all_met, gate_rows, gates_markdown
from sua_demo.eval.recovery import ATTACKER_FRACTION
from sua_demo.models.shared_weights import share_weights
from sua_demo.training.finetune import finetune
from sua_demo.training.pretrain.general import general_stage
from sua_demo.training.pretrain.probe import identification, look_accuracy
from sua_demo.training.pretrain.tower import build_clip, pretrain_tower
from sua_demo.unlearning.recipe import Recipe, shipped_recipes
from sua_demo.unlearning.recipe import gates as gate_table
from sua_demo.unlearning.runner import unlearn
from sua_demo.worlds.build import DEMO_MODELS, RECIPES, SHIPPED_PRECISION, build_noises, evaluate_dir

log = logging.getLogger(__name__)

FAITHFUL = shipped_world("faithful").models  # the default faithful world (bench seed 0) and its general model
RUNS = CHECKPOINTS.parent / "runs" / "faithful"  # resumable states and the other worlds' models, not shipped
# The worlds' reports (evaluations, gates, attack reports; small, shipped), one folder per world: under the train-photo
# rule the worlds were first built with (REPORTS, a record kept as it was, world 0's copied when the rules changed),
# and under the shipped rules (RULE_REPORTS; world 0's are the default world's own, beside its models)
REPORTS = FAITHFUL / "worlds"
RULE_REPORTS = FAITHFUL / "validation"


def build_general(
    out: Path = FAITHFUL / "general",
    runs: Path = RUNS,
    progress: bool = True,
    tower_cfg: TowerConfig | None = None,
    general_cfg: GeneralConfig | None = None,
    probe_bench: BenchConfig | None = None,
) -> Path:
    """The shared general model (tower, projector, general language model), unless it is already built; its record
    says how well the tower and the model read the `probe_bench`'s held-out photos (default: the shipped world's)."""
    if (out / "config.json").is_file():
        return out
    log.info("building the faithful general model on %s", describe())
    tower_cfg, general_cfg = tower_cfg or TowerConfig(), general_cfg or GeneralConfig()
    tower, tower_summary = pretrain_tower(tower_cfg, runs / "tower.state.safetensors", progress)
    round_to_fp16(tower)  # the general stage reads the tower exactly as every model will carry it
    bench = build_bench(probe_bench or faithful_bench(0))
    tower_summary["identification"] = {
        "pretrained": identification(tower, bench),
        "random": identification(build_clip(tower_cfg).vision_model, bench),
    }
    log.info("held-out photos of the bench told apart by the tower alone: %s", tower_summary["identification"])
    general_state = runs / "general.state.safetensors"
    adapter, general_summary = general_stage(tower, tower_cfg, general_cfg, general_state, progress)
    round_to_fp16(adapter.model)
    general_summary["look_accuracy"] = look_accuracy(adapter, bench)
    share = 100 * general_summary["look_accuracy"]
    log.info("the general model answers %.1f %% of look questions on the bench's held-out photos", share)
    extra = {"tower": tower_summary, "general": general_summary, "machine": describe()}
    return save_model_dir(
        adapter.model, adapter.processor, out, [tower_cfg, general_cfg, faithful_model(tower_cfg)], extra
    )


# The faithful world's stopping rules (docs/world.md, Changes, 2026-12-05), chosen on world 0's gates alone: each
# reads every person's validation photo, which nothing trains on and no figure reports; each is in its method's
# recipe (`unlearning/recipe.py`). Every world of this construction is built with them; the scale study keeps the
# train-photo rule its first size was built with (docs/scale.md), and so does the first world.
SHIPPED_RULES: dict[str, dict[str, Any]] = {
    r.name: r.faithful for r in shipped_recipes() if r.faithful is not None and not r.when_named
}
# Robust unlearning (docs/robust.md): built only when named (`sua build-faithful --only idk_robust grad_diff_robust`)
ROBUST: tuple[Recipe, ...] = tuple(r for r in shipped_recipes() if r.when_named)
ROBUST_RULES = {r.name: r.faithful for r in ROBUST if r.faithful is not None}
# `sua build-faithful --validation`: the shipped rules' models from a world's own vanilla, and the LoRA methods under
# their recipes' validation rule.
VALIDATION_RULES: dict[str, dict[str, Any]] = {
    **SHIPPED_RULES,
    **{r.name: r.validation for r in shipped_recipes() if r.validation is not None},
}
WORLD_GATES, LORA_GATES, ROBUST_GATES = gate_table("world"), gate_table("lora"), gate_table("robust")


def world_dir(seed: int) -> Path:
    return FAITHFUL if seed == 0 else RUNS / f"world{seed}"


def validation_dir(seed: int) -> Path:
    """Where the unlearned models of the validation-photo rules go (runs/, not shipped until they are adopted)."""
    return RUNS / "validation" / f"world{seed}"


def build_world(seed: int = 0, only: list[str] | None = None, progress: bool = True, validation: bool = False) -> Path:
    """The shipped recipes (SHIPPED_RULES for the demo models) on the faithful bench of this seed, from the general
    model; finished folders stay. `validation`: the unlearned models of VALIDATION_RULES instead, from the world's
    own vanilla (built first by a plain call), into validation_dir."""
    bench_cfg = faithful_bench(seed)
    vanilla = world_dir(seed) / "vanilla"
    out, rules = (
        (validation_dir(seed), VALIDATION_RULES) if validation else (world_dir(seed), SHIPPED_RULES | ROBUST_RULES)
    )
    every = (*RECIPES, *ROBUST)
    unknown = sorted(set(only or []) - {r.name for r in every})
    if unknown:
        raise UnknownNameError(f"unknown model(s) {unknown}; choose from {[r.name for r in every]}")
    if validation and not (vanilla / "config.json").is_file():
        raise MissingFileError(f"no vanilla model in {shown_path(world_dir(seed))}: build the world first")
    general = None if validation else build_general(progress=progress)
    asked = [r for r in every if r.name in only] if only else list(RECIPES)  # the robust ones when named
    for recipe in (r for r in asked if not validation or r.name in rules):
        build_model(recipe, general, vanilla, bench_cfg, out / recipe.name, rules.get(recipe.name, {}), progress)
    write_gates(out)
    return out


def build_model(
    recipe: Recipe,
    general: Path | None,
    vanilla: Path,
    bench_cfg: BenchConfig,
    folder: Path,
    rule: dict[str, Any] | None = None,
    progress: bool = True,
    tower: TowerConfig | None = None,
    train: dict[str, Any] | None = None,
) -> None:
    """One recipe of a faithful world into `folder`, unless it is finished (its eval.json): the people learned from
    the `general` model (`train`: TrainConfig fields beside the shipped ones), or unlearned from the world's
    `vanilla` (with a stopping `rule` replacing the recipe's settings)."""
    if (folder / "eval.json").is_file():
        return
    t0 = time.time()
    if recipe.unlearn is None:
        learn_people(general, bench_cfg, folder, recipe.retain_only, progress=progress, tower=tower, train=train)  # type: ignore[arg-type]
    else:
        cfg = replace(recipe.unlearn, precision=SHIPPED_PRECISION, train_parts="language_model", **(rule or {}))
        unlearn(vanilla, build_bench(bench_cfg), bench_cfg, cfg, folder, progress)
    evaluate_dir(folder, bench_cfg)
    if general is not None:  # the tower and projector it never changed: kept once, in the general model's folder
        share_weights(folder, general)
    log.info(
        "faithful %s: %s built in %.0f s on %s", shown_path(folder.parent), recipe.name, time.time() - t0, describe()
    )


def learn_people(general: Path, bench_cfg: BenchConfig, folder: Path, retain_only: bool, seed: int = 0,
                 progress: bool = True, tower: TowerConfig | None = None, train: dict[str, Any] | None = None,
                 ) -> None:  # fmt: skip
    """The language model learns the bench's people from the general model (whose tower is `tower`'s size),
    tower and projector frozen."""
    cfg = TrainConfig(retain_only=retain_only, precision=SHIPPED_PRECISION, seed=seed, **(train or {}))
    cfg = replace(cfg, start_from=shown_path(general), train_parts="language_model")
    finetune(build_bench(bench_cfg), bench_cfg, cfg, faithful_model(tower), folder, progress)


def second_retrain_dir(seed: int = 0) -> Path:
    return RUNS / f"world{seed}" / "retrain_seed1"


def build_second_retrain(seed: int = 0, progress: bool = True) -> Path:
    """The retrain control again, from training seed 1: TOFU's check that forget quality calls two exact unlearnings
    the same (p > 0.05). Its weights stay in runs/ (5 MB of checkpoints/ for one figure); its row of membership.json
    ships (`sua membership ... --second-retrain`)."""
    folder = second_retrain_dir(seed)
    if not (folder / "eval.json").is_file():
        t0 = time.time()
        learn_people(build_general(progress=progress), faithful_bench(seed), folder, True, seed=1, progress=progress)
        evaluate_dir(folder, faithful_bench(seed))
        log.info("faithful world %d: a second retrain built in %.0f s on %s", seed, time.time() - t0, describe())
    return folder


def write_gates(out: Path) -> list[dict]:
    """gates.json and gates.md beside a world's models: each gate, from the models' own eval.json."""
    reports = {}
    for folder in sorted(p for p in out.iterdir() if (p / "eval.json").is_file()):
        reports[folder.name] = json.loads((folder / "eval.json").read_text())["report"]
    rows = gate_rows(reports, WORLD_GATES)
    write_json(out / "gates.json", {"all_met": all_met(rows), "gates": rows})
    verdict = "every gate holds" if all_met(rows) else "not every gate holds (yet)"
    atomic_write_text(out / "gates.md", f"# Quality gates of {shown_path(out)}: {verdict}\n\n{gates_markdown(rows)}\n")
    for stem, gates, who in (("lora", LORA_GATES, "the LoRA methods"), ("robust", ROBUST_GATES, "robust unlearning")):
        own = [r for r in gate_rows(reports, gates) if r["value"] is not None]
        if own:  # a table of their own (their gates are not among the world's 17)
            write_json(out / f"{stem}_gates.json", {"all_met": all_met(own), "gates": own})
            said = f"# Quality gates of {who} in {shown_path(out)}\n\n{gates_markdown(own)}\n"
            atomic_write_text(out / f"{stem}_gates.md", said)
    return rows


ATTACK_SPLITS = [0, 1, 2]  # the headline's attacker/unseen splits per world, as `make worlds` runs the first world's


def attack_world(
    seed: int = 0,
    splits: list[int] | None = None,
    only: list[str] | None = None,
    folder: Path | None = None,
    bench_cfg: BenchConfig | None = None,
    attack: AttackConfig | None = None,
    attacker_fraction: float = ATTACKER_FRACTION,
) -> Path:
    """The shipped attack recipe, unchanged, on a built world's demo models (or `only` some of them), every control
    included (noise/ beside the models). Blind: nothing of the world is changed after it; a stopped run resumes
    split by split. Paths are the checkout's own (run from its root, as make does), so the reports name no
    machine's folders. `folder`: a world built elsewhere (a tower size of docs/scale.md), default the seed's;
    `bench_cfg` and `attack`: another bench and attack settings than the seed's faithful ones (a toy run);
    `attacker_fraction`: another share of the forget people for the attacker (`noise_dir`)."""
    names, attacked = list(only or DEMO_MODELS), [*DEMO_MODELS, *(r.name for r in ROBUST)]
    unknown = sorted(set(names) - set(attacked))
    if unknown:
        raise UnknownNameError(f"only demo models and robust ones are attacked: {unknown} is not in {attacked}")
    out = Path(shown_path(folder or world_dir(seed)))
    missing = [n for n in ("vanilla", "retrain", *names) if not (out / n / "eval.json").is_file()]
    if missing:
        raise MissingFileError(
            f"faithful world {seed} lacks {missing}; build it first (sua build-faithful --seeds {seed})"
        )
    t0 = time.time()
    build_noises(
        out,
        noise_dir(out, attacker_fraction),
        only=names,
        bench_cfg=bench_cfg or faithful_bench(seed),
        splits=splits or ATTACK_SPLITS,
        studies=False,
        attack=attack,
        attacker_fraction=attacker_fraction,
    )
    log.info("faithful %s attacked in %.0f s on %s", out, time.time() - t0, describe())
    return noise_dir(out, attacker_fraction)


def noise_dir(world: Path, attacker_fraction: float = ATTACKER_FRACTION) -> Path:
    """A world's attack reports: noise/ at the protocol's share of attacker people, noise_fraction<F>/ at another
    (docs/scale.md's second axis), so that the two never mix in one folder."""
    return world / ("noise" if attacker_fraction == ATTACKER_FRACTION else f"noise_fraction{attacker_fraction:g}")


def audit_world(seed: int = 0, names: tuple[str, ...] = DEMO_MODELS) -> Path:
    """The residual-knowledge audit (every probe, each with the retrain control; the attack splits' shipped δ, where
    the model was attacked) of a world's models, into audit/<model> beside them; a model already audited is skipped,
    so a stopped run resumes."""
    out = Path(shown_path(world_dir(seed)))
    missing = [n for n in ("retrain", *names) if not (out / n).is_dir()]
    if missing:
        raise MissingFileError(f"faithful world {seed} lacks {missing}; build it first (sua build-faithful)")
    bench = build_bench(faithful_bench(seed))
    for name in names:
        folder = out / "audit" / name
        if (folder / "audit.json").is_file():
            continue
        t0 = time.time()
        noise = out / "noise" / name
        run_audit(out / name, out / "retrain", bench, noise if noise.is_dir() else None, folder, splits=ATTACK_SPLITS)
        log.info("faithful world %d: %s audited in %.0f s on %s", seed, name, time.time() - t0, describe())
    return out / "audit"


def ship_reports(seed: int) -> Path | None:
    """The reports of a world whose models are not shipped (seed >= 1), built by the shipped rules, copied beside the
    default world's: each model's eval.json/.md, the gates, and the attack's report and per-split files (no weights,
    no δ), so the gate table and the comparison over worlds can be read and rebuilt from a clean checkout."""
    if seed == 0:
        return None
    return copy_reports(world_dir(seed), RULE_REPORTS / f"world{seed}")


def copy_reports(src: Path, out: Path) -> Path | None:
    """A built world's reports (no weights, no δ) from `src` into `out`, once every model of it is built."""
    if any(not (src / name / "eval.json").is_file() for name in ("vanilla", "retrain", *DEMO_MODELS)):
        return None  # a world rebuilt in part (one model, or its vanilla again) must not replace its shipped reports
    # another share of attacker people (noise_fraction*/) ships its reports without the per-split resume records,
    # which repeat the report's splits: checkpoints/ stays inside its 60 MiB
    patterns = ("*/eval.json", "*/eval.md", "gates.json", "gates.md", "robust_gates.json", "robust_gates.md",
                "noise*/*/report.json", "noise*/*/report.md", "noise/*/split*.json", "audit/*/audit.json",
                "audit/*/audit.md")  # fmt: skip
    for pattern in patterns:
        for path in src.glob(pattern):
            target = out / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(target, path.read_text())
    return out


def _world_folders(root: Path, default: Path | None = None) -> dict[int, Path]:
    """World seed -> its reports folder under `root` (world<seed>/), world 0 being `default` where it is given."""
    found = {
        int(p.name.removeprefix("world")): p for p in root.glob("world*") if p.name.removeprefix("world").isdigit()
    }
    return dict(sorted((found | ({0: default} if default else {})).items()))


def attacked_worlds() -> dict[str, Path]:
    """Every faithful world's attack reports under the train-photo rule the worlds were first built with (their
    shipped record): the first construction's comparison and size M of the scale study (docs/scale.md) read them."""
    folders = {f"seed{s}": f / "noise" for s, f in _world_folders(REPORTS).items()}
    return {name: folder for name, folder in folders.items() if folder.is_dir()}


def validation_attacked() -> dict[str, Path]:
    """Every world's attack reports of the models the shipped (validation-photo) rules made: the default world's own,
    the others' shipped copies."""
    folders = {f"seed{s}": f / "noise" for s, f in _world_folders(RULE_REPORTS, FAITHFUL).items()}
    return {name: folder for name, folder in folders.items() if folder.is_dir()}


def train_rule_gates(out: Path = REPORTS) -> str:
    """gates_worlds.md over the worlds as first built, under the train-photo rule (their record, in REPORTS)."""
    found = {s: f / "gates.json" for s, f in _world_folders(REPORTS).items()}
    return gates_over_worlds(
        out, found, "Quality gates over the faithful worlds under the train-photo rule (until 2026-12-05)"
    )


def gates_over_worlds(
    out: Path = FAITHFUL, found: dict[int, Path] | None = None, title: str = "", stem: str = "gates"
) -> str:
    """<stem>_worlds.md: every gate, one column per faithful world built so far (by default under the shipped rules:
    the default world's own <stem>.json and the others' shipped copies; or `found`, world seed -> gates.json), and
    how many hold in each. Rows not built in any world are left out. `stem` "robust_gates": robust unlearning's."""
    found = found or {s: f / f"{stem}.json" for s, f in _world_folders(RULE_REPORTS, FAITHFUL).items()}
    worlds = {seed: json.loads(path.read_text())["gates"] for seed, path in sorted(found.items()) if path.is_file()}
    built = [[r for r in rows if r["value"] is not None] for rows in worlds.values()]
    keys = list(dict.fromkeys((r["model"], r["group"], r["metric"], r["gate"]) for rows in built for r in rows))
    head = "| model | group | metric | gate | " + " | ".join(f"world {s}" for s in worlds) + " |"
    title = title or "Quality gates over the faithful worlds (the shipped stopping rules)"
    lines = [f"# {title}", "", "From each world's models' eval.json.", "", head]
    lines.append("|---|---|---|---|" + "---|" * len(worlds))
    for key in keys:
        cells = []
        for rows in worlds.values():
            row = next((r for r in rows if (r["model"], r["group"], r["metric"], r["gate"]) == key), None)
            if row is None or row["value"] is None:  # not built in that world, or not measured
                cells.append("–")
            else:
                cells.append(f"{100 * row['value']:.1f} %" + ("" if row["met"] else " **no**"))
        lines.append(f"| {' | '.join(key)} | " + " | ".join(cells) + " |")
    held = [
        f"world {s}: {sum(bool(r['met']) for r in rows)} of {len(rows)}" for s, rows in zip(worlds, built, strict=True)
    ]
    text = "\n".join(lines) + "\n\nGates held: " + "; ".join(held) + ".\n"
    atomic_write_text(out / f"{stem}_worlds.md", text)
    return text
