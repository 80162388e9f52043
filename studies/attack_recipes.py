"""Which universal-attack recipe? Compared on the attacker's side only (sua_demo/eval/validation.py).

For each variant and attacker split, delta is fitted on the first 3 train photos of 6 of the 8 attacker people
and scored (generation exact match) on those photos, on the same people's other 2 train photos (stand-in for
b), and on the 2 attacker people held back (stand-in for c). Groups b and c themselves are never read.

  HF_HUB_OFFLINE=1 .venv/bin/python studies/attack_recipes.py --model checkpoints/tiny-llava/idk \\
      --splits 0 1 2 --variants shipped gen_only --out runs/recipes_idk.json
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from sua_demo.analysis.recipes import recipe_table
from sua_demo.attacks import AttackConfig
from sua_demo.core.config import BenchConfig
from sua_demo.dataset import build_bench
from sua_demo.eval.recovery import RETAIN_PEOPLE, TASKS, attack_split
from sua_demo.eval.validation import VAL_GROUPS, validate
from sua_demo.models import load_adapter
from sua_demo.models.examples import ImageBank, image_examples

BASE = AttackConfig(precision="fp32")
GEN: tuple[str, ...] = ("gen",)
# name -> (config, tasks delta is fitted on); the attack is "sua" but for those in OTHER_ATTACK
VARIANTS: dict[str, tuple[AttackConfig, tuple[str, ...]]] = {
    "shipped": (BASE, TASKS),
    "gen_only": (BASE, GEN),
    "steps300_cosine": (replace(BASE, steps=300, alpha=2 / 255, alpha_schedule="cosine"), TASKS),
    "gen_steps300_cosine": (replace(BASE, steps=300, alpha=2 / 255, alpha_schedule="cosine"), GEN),
    "margin": (replace(BASE, loss="margin"), TASKS),
    "gen_margin": (replace(BASE, loss="margin"), GEN),
    "gen_margin_steps300_cosine": (
        replace(BASE, loss="margin", steps=300, alpha=2 / 255, alpha_schedule="cosine"),
        GEN,
    ),
    "gen_margin_steps300_cosine_b64": (
        replace(BASE, loss="margin", steps=300, alpha=2 / 255, alpha_schedule="cosine", batch_size=64),
        GEN,
    ),
    "gen_stealth10": (replace(BASE, stealth_weight=10.0), GEN),
    "gen_stealth0": (replace(BASE, stealth_weight=0.0), GEN),
    "gen_adam": (replace(BASE, optimizer="adam"), GEN),
    "gen_no_eot": (replace(BASE, eot=False), GEN),
    "gen_random_start": (replace(BASE, random_start=True), GEN),
    "gen_gate1": (replace(BASE, gate_weight=1.0), GEN),
    "gen_gate1_steps300_cosine": (
        replace(BASE, gate_weight=1.0, steps=300, alpha=2 / 255, alpha_schedule="cosine"),
        GEN,
    ),
    "gen_gate3_margin_steps300_cosine": (
        replace(BASE, gate_weight=3.0, loss="margin", steps=300, alpha=2 / 255, alpha_schedule="cosine"),
        GEN,
    ),
    "gen_no_eot_steps300_cosine": (replace(BASE, eot=False, steps=300, alpha=2 / 255, alpha_schedule="cosine"), GEN),
    "gen_eot_half_steps300_cosine": (
        replace(BASE, eot_strength=0.5, steps=300, alpha=2 / 255, alpha_schedule="cosine"),
        GEN,
    ),
    "gen_eot_quarter_steps300_cosine": (
        replace(BASE, eot_strength=0.25, steps=300, alpha=2 / 255, alpha_schedule="cosine"),
        GEN,
    ),
    "gen_no_eot_margin_steps300_cosine": (
        replace(BASE, eot=False, loss="margin", steps=300, alpha=2 / 255, alpha_schedule="cosine"),
        GEN,
    ),
    "gen_no_eot_steps600_cosine": (replace(BASE, eot=False, steps=600, alpha=2 / 255, alpha_schedule="cosine"), GEN),
    "gen_eot_half_steps1000_cosine": (
        replace(BASE, eot_strength=0.5, steps=1000, alpha=2 / 255, alpha_schedule="cosine"),
        GEN,
    ),
    "gen_eot_half_margin_steps300_cosine": (
        replace(BASE, eot_strength=0.5, loss="margin", steps=300, alpha=2 / 255, alpha_schedule="cosine"),
        GEN,
    ),
    "gen_eot_half_b96_steps300_cosine": (
        replace(BASE, eot_strength=0.5, batch_size=96, steps=300, alpha=2 / 255, alpha_schedule="cosine"),
        GEN,
    ),
    "gen_eot_half_alpha4_steps300_cosine": (
        replace(BASE, eot_strength=0.5, steps=300, alpha=4 / 255, alpha_schedule="cosine"),
        GEN,
    ),
    # MI-FGSM on top of the chosen recipe (BASE is it: AttackConfig's defaults), mu 1 as in the paper and 0.5
    "gen_eot_half_steps300_cosine_momentum": (replace(BASE, optimizer="momentum"), GEN),
    "gen_eot_half_steps300_cosine_momentum05": (replace(BASE, optimizer="momentum", momentum=0.5), GEN),
    # a coarse delta (sua_lowfreq): constant over 4x4 or 8x8 pixel squares of the 64-pixel image
    "gen_eot_half_steps300_cosine_block4": (replace(BASE, block=4), GEN),
    "gen_eot_half_steps300_cosine_block8": (replace(BASE, block=8), GEN),
    # keep retain people's answers as they were (KL to the clean answers on their train photos): a delta that
    # may not damage recognition on people the model still knows may keep more of it on people it hides
    "gen_eot_half_steps300_cosine_retain1": (replace(BASE, retain_kl_weight=1.0), GEN),
    "gen_eot_half_steps300_cosine_retain3": (replace(BASE, retain_kl_weight=3.0), GEN),
    # the refusal gate as the main term (IDK refuses; GradDiff gives wrong answers instead): opening the gate
    # without fitting the attacker's own answers might carry further to people delta never saw
    "gen_eot_half_steps300_cosine_gate10": (replace(BASE, gate_weight=10.0), GEN),
    "gen_eot_half_steps300_cosine_gate30": (replace(BASE, gate_weight=30.0), GEN),
    # both: the write-in study (studies/write_in.py) found the opened gate's wrong answers to be recognition errors
    "gen_eot_half_steps300_cosine_gate10_retain1": (replace(BASE, gate_weight=10.0, retain_kl_weight=1.0), GEN),
    # delta on a border frame only (sua_frame): the centre, where the face is, reaches the model as it was
    "gen_eot_half_steps300_cosine_frame16": (replace(BASE, frame=16), GEN),
    "gen_eot_half_steps300_cosine_frame8": (replace(BASE, frame=8), GEN),
}
# variants of another attack than "sua"
OTHER_ATTACK = {
    "gen_eot_half_steps300_cosine_block4": "sua_lowfreq",
    "gen_eot_half_steps300_cosine_block8": "sua_lowfreq",
    "gen_eot_half_steps300_cosine_frame16": "sua_frame",
    "gen_eot_half_steps300_cosine_frame8": "sua_frame",
}


def run(model: str, variants: list[str], splits: list[int], bench_seed: int) -> dict[str, Any]:
    bench = build_bench(replace(BenchConfig(), seed=bench_seed))
    adapter = load_adapter(model)
    bank = ImageBank(bench, adapter)
    retain_examples = image_examples(bench, bench.retain_ids[:RETAIN_PEOPLE], "train", GEN)
    out: dict[str, Any] = {"model": model, "bench_seed": bench_seed, "splits": splits, "variants": {}}
    for name in variants:
        cfg, tasks = VARIANTS[name]
        rows = []
        t0 = time.time()
        for seed in splits:
            attack = OTHER_ATTACK.get(name, "sua")
            retain = retain_examples if cfg.retain_kl_weight > 0 else None
            rec = validate(adapter, bank, bench, attack_split(bench, seed=seed), cfg, attack, tasks, retain=retain)  # type: ignore[arg-type]
            rows.append({g: {c: rec[c][g]["gen_em"] for c in rec} for g in VAL_GROUPS})
        gains = {g: [100 * (r[g]["delta"] - r[g]["clean"]) for r in rows] for g in VAL_GROUPS}
        out["variants"][name] = {
            "per_split": rows,
            "gain_mean": {g: float(np.mean(v)) for g, v in gains.items()},
            "gain_sd": {g: float(np.std(v)) for g, v in gains.items()},
            "seconds": round(time.time() - t0, 1),
        }
        m = out["variants"][name]["gain_mean"]
        print(
            f"{name:34s} fit {m['fit']:+6.1f}  other photos {m['fit_other_photos']:+6.1f}  "
            f"held-back people {m['val_people']:+6.1f}  ({out['variants'][name]['seconds']:.0f} s)",
            flush=True,
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model")
    ap.add_argument("--splits", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--bench-seed", type=int, default=BenchConfig.seed)
    ap.add_argument("--out", help="write the figures here as JSON")
    ap.add_argument("--summarise", nargs="+", metavar="JSON", help="only print the table of these run files")
    args = ap.parse_args()
    if args.summarise:
        print(recipe_table(args.summarise), end="")
        return
    result = run(args.model, args.variants, args.splits, args.bench_seed)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
