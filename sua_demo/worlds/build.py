"""`sua build-all` / `make checkpoints`: rebuild every shipped tiny checkpoint from scratch.

Order matters: vanilla first (every unlearned model starts from it), then the retrain control,
then each unlearning recipe. Every folder gets its config (sua_config.json) and its evaluation
(eval.json + eval.md), measured on the reloaded files, i.e. exactly what a user loads.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path

from sua_demo.attacks import AttackConfig
from sua_demo.core import shipped
from sua_demo.core.config import BenchConfig, TinyModelConfig, TrainConfig
from sua_demo.core.errors import MissingFileError, UnknownNameError
from sua_demo.core.io import atomic_write_text, write_json
from sua_demo.dataset import build_bench
from sua_demo.eval.evaluate import evaluate, markdown_table
from sua_demo.eval.protocol import ProtocolConfig, run_protocol
from sua_demo.eval.recovery import ATTACKER_FRACTION
from sua_demo.models.loading import load_adapter
from sua_demo.training.finetune import finetune
from sua_demo.unlearning.recipe import Recipe, shipped_recipes
from sua_demo.unlearning.recipe import recipe as recipe_of
from sua_demo.unlearning.runner import unlearn

log = logging.getLogger(__name__)


# Every shipped artefact is computed in fp32, whatever this machine's "auto" would pick: bf16 and fp32 give
# different files, fp32 is fast on every CPU (bf16 is emulated, and 13-19x slower, on CPUs without native bf16),
# so `make checkpoints` and `make noises` rebuild the same recipe anywhere.
SHIPPED_PRECISION = "fp32"

# The controls, then every unlearned model by its recipe (each method's file, `unlearning/recipe.py`); the two demo
# models are full-parameter GradDiff and IDK (docs/world.md), the others LoRA adapters on the language model.
CONTROLS: tuple[Recipe, ...] = (Recipe("vanilla", needs=()), Recipe("retrain", retain_only=True, needs=()))
RECIPES: tuple[Recipe, ...] = (*CONTROLS, *(r for r in shipped_recipes() if not r.when_named))


def _order(only: list[str] | None) -> list[Recipe]:
    by_name = {r.name: r for r in RECIPES}
    unknown = sorted(set(only or []) - set(by_name))
    if unknown:
        raise UnknownNameError(f"unknown checkpoint(s) {unknown}; choose from {sorted(by_name)}")
    return [r for r in RECIPES if not only or r.name in only]


def evaluate_dir(folder: Path, bench_cfg: BenchConfig) -> dict:
    """Evaluate a saved folder as a user would load it, and write eval.json + eval.md beside it."""
    bench = build_bench(bench_cfg)
    report = evaluate(load_adapter(folder), bench, progress=False)
    write_json(folder / "eval.json", {"model": folder.name, "report": report})
    atomic_write_text(folder / "eval.md", f"# {folder.name}\n\n{markdown_table(report)}")
    return report


# Pretrained noises: one per shipped unlearned model, each with its recovery report (docs/findings.md), on the
# splits its recipe names.
NOISE_MODELS = shipped.UNLEARNED
ROBUST = shipped.ROBUST  # attacked only when named (docs/robust.md)
DEMO_MODELS = shipped.DEMO  # they also get the stealth ablation, per-image PGD and the studies below
BUDGETS = (2.0, 4.0, 8.0, 12.0, 16.0, 24.0, 32.0)  # eps (/255) of the budget curves
PURIFIERS = ("gaussian", "median", "jpeg", "dncnn", "ddpm")


def noise_protocol(
    name: str,
    splits: list[int] | None = None,
    studies: bool = True,
    attack: AttackConfig | None = None,
    attacker_fraction: float = ATTACKER_FRACTION,
) -> ProtocolConfig:
    """The shipped protocol for one model: the attack recipe in fp32 (or `attack`, in fp32), its splits, and for the
    demo models the stealth ablation, per-image PGD, budget curves, purification and the public code's settings."""
    demo = name in DEMO_MODELS and studies
    return ProtocolConfig(
        attack=replace(attack or AttackConfig(), precision=SHIPPED_PRECISION),
        splits=splits if splits is not None else list(recipe_of(name).noise_splits),
        attacker_fraction=attacker_fraction,
        extras=demo,
        budgets=BUDGETS if demo else (),
        purifiers=PURIFIERS if demo else (),
        reference=demo,
    )


def write_examples(models_dir: Path, folder: Path, bench_cfg: BenchConfig, noise_split: int = 0) -> list[dict]:
    """examples.json: the app's guided examples for one split's noise (the shipped one is split 0), measured on the
    saved files."""
    from sua_demo.analysis.examples import guided_examples
    from sua_demo.attacks import ATTACKS, load_noise
    from sua_demo.eval.recovery import attack_split
    from sua_demo.models.examples import ImageBank

    bench = build_bench(bench_cfg)
    noise = load_noise(folder / f"delta_split{noise_split}.safetensors")
    unl, ret = load_adapter(models_dir / folder.name), load_adapter(models_dir / "retrain")
    rand = ATTACKS.get("random")(unl, AttackConfig(eps=noise.eps)).run(ImageBank(bench, unl), [], progress=False)
    split = attack_split(bench, seed=int(noise.meta["split_seed"]))
    found = guided_examples(bench, split, (unl, ImageBank(bench, unl)), noise, rand, (ret, ImageBank(bench, ret)))
    write_json(folder / "examples.json", {"noise": f"delta_split{noise_split}.safetensors", "examples": found})
    return found


def build_noises(
    models_dir: Path,
    out: Path,
    only: list[str] | None = None,
    bench_cfg: BenchConfig | None = None,
    splits: list[int] | None = None,
    studies: bool = True,
    attack: AttackConfig | None = None,
    attacker_fraction: float = ATTACKER_FRACTION,
) -> None:
    """`sua build-noises`: run the recovery protocol per model; split 0's delta is the shipped noise (`attack`:
    other attack settings than the shipped recipe's, a toy run's; `attacker_fraction`: another share of the forget
    people for the attacker, docs/scale.md's second axis, whose runs write no guided examples: the app shows the
    protocol's split)."""
    bench_cfg = bench_cfg or BenchConfig()
    bench = build_bench(bench_cfg)
    for name in only or NOISE_MODELS:
        if name not in (*NOISE_MODELS, *ROBUST):  # robust unlearning's models (docs/robust.md) only when named
            raise UnknownNameError(f"no noise recipe for {name!r}; choose from {[*NOISE_MODELS, *ROBUST]}")
        t0 = time.time()
        folder = out / name
        # no wipe: a stopped build resumes (finished splits are read back, a noise resumes from its last checkpoint);
        # a file from other settings is refused by name, so a rebuild with new settings starts from an empty folder
        cfg = noise_protocol(name, splits, studies, attack, attacker_fraction)
        run_protocol(models_dir / name, models_dir / "retrain", bench, cfg, folder, vanilla=models_dir / "vanilla")
        if attacker_fraction == ATTACKER_FRACTION:
            write_examples(models_dir, folder, bench_cfg, noise_split=0 if 0 in cfg.splits else min(cfg.splits))
        log.info("noise for %s built in %.0f s", name, time.time() - t0)


def build_all(out: Path, only: list[str] | None = None, bench_cfg: BenchConfig | None = None) -> None:
    bench_cfg = bench_cfg or BenchConfig()
    bench = build_bench(bench_cfg)
    for recipe in _order(only):
        t0 = time.time()
        folder = out / recipe.name
        for need in recipe.needs:
            if not (out / need / "config.json").exists():
                raise MissingFileError(
                    f"{recipe.name} starts from {out / need}; build it first (sua build-all --only {need})"
                )
        if recipe.unlearn is None:
            cfg = TrainConfig(retain_only=recipe.retain_only, precision=SHIPPED_PRECISION)
            finetune(bench, bench_cfg, cfg, TinyModelConfig(), folder)
        else:
            unlearn(out / "vanilla", bench, bench_cfg, replace(recipe.unlearn, precision=SHIPPED_PRECISION), folder)
        report = evaluate_dir(folder, bench_cfg)
        log.info("%s built in %.0f s\n%s", recipe.name, time.time() - t0, markdown_table(report))
