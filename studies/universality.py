"""What does universality cost? One δ per example, per person, and for every attacker person at once.

Per-image PGD (one δ per photo and question) reaches 99 % on the attacker's photos; the universal δ (one for
all 8 attacker people) 41-49 %. Between them sits one δ per person: fitted with the shipped recipe on one
attacker person's train photos and questions, and scored on those (a) and on that person's held-out photos
(b). If it comes near the per-example bound, the cost is in serving many faces at once; if it stays near the
universal δ, it is in serving many photos and questions of one face. Generation questions, fp32, the
protocol's attacker splits; the universal δ is the shipped one of each split. With --on retrain, every δ is
fitted on the retrain control instead (the universal one is the shipped δ optimised on it): how much each
scope writes in by itself, the ceiling to read the others against.

  HF_HUB_OFFLINE=1 .venv/bin/python studies/universality.py --model idk --splits 0 1 2 \\
      --out checkpoints/studies/universality/idk.json
  HF_HUB_OFFLINE=1 .venv/bin/python studies/universality.py --model idk --on retrain \\
      --out checkpoints/studies/universality/retrain.json
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from sua_demo.attacks import ATTACKS, AttackConfig, load_noise
from sua_demo.attacks.per_image import per_image_pgd
from sua_demo.core.config import BenchConfig
from sua_demo.dataset import build_bench
from sua_demo.eval.evaluate import answer, score
from sua_demo.eval.recovery import answers_with, attack_split
from sua_demo.models import load_adapter
from sua_demo.models.examples import Example, ImageBank, image_examples
from sua_demo.worlds.build import SHIPPED_PRECISION

ROOT = Path(__file__).resolve().parent.parent / "checkpoints"
GEN = ("gen",)


def em(adapter, examples: list[Example], answers: list[str]) -> float:  # type: ignore[no-untyped-def]
    return 100 * score(examples, answers, adapter.refusals)["gen_em"]


def one_split(adapter, bank: ImageBank, bench, name: str, seed: int, kind: str) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    split = attack_split(bench, seed=seed)
    recipe = replace(AttackConfig(precision=SHIPPED_PRECISION), seed=seed)
    own = image_examples(bench, split.attacker_ids, "train", GEN)
    held = image_examples(bench, split.attacker_ids, "heldout", GEN)
    universal = load_noise(ROOT / "noise" / name / f"{kind}_split{seed}.safetensors")
    assert universal.meta.get("split_seed") == seed, "the shipped δ of another split"
    rows: dict[str, dict[str, float]] = {
        "clean": {
            "a": em(adapter, own, answer(adapter, bank, own)),
            "b": em(adapter, held, answer(adapter, bank, held)),
        },
        "universal": {
            "a": em(adapter, own, answers_with(adapter, bank, own, universal)),
            "b": em(adapter, held, answers_with(adapter, bank, held, universal)),
        },
    }
    a_ex, a_ans, b_ex, b_ans = [], [], [], []
    for pid in split.attacker_ids:  # one δ per person, the shipped recipe on that person's examples alone
        fit = image_examples(bench, [pid], "train", GEN)
        theirs = image_examples(bench, [pid], "heldout", GEN)
        noise = ATTACKS.get("sua")(adapter, recipe).run(bank, fit, progress=False)
        a_ex += fit
        a_ans += answers_with(adapter, bank, fit, noise)
        b_ex += theirs
        b_ans += answers_with(adapter, bank, theirs, noise)
    rows["per_person"] = {"a": em(adapter, a_ex, a_ans), "b": em(adapter, b_ex, b_ans)}
    pgd = replace(recipe, eot=False, alpha_schedule="constant", alpha=1 / 255, steps=100)  # the protocol's bound
    adv = per_image_pgd(adapter, bank, own, pgd, progress=False)
    rows["per_example"] = {"a": em(adapter, own, answer(adapter, bank, own, images=adv))}
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="idk", help="a shipped model with shipped noises")
    ap.add_argument("--splits", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument(
        "--on", choices=["unlearned", "retrain"], default="unlearned", help="the model every δ is fitted on"
    )
    ap.add_argument("--out", help="write the figures here as JSON")
    args = ap.parse_args()
    bench = build_bench(BenchConfig())
    adapter = load_adapter(ROOT / "tiny-llava" / (args.model if args.on == "unlearned" else "retrain"))
    kind = "delta" if args.on == "unlearned" else "delta_retrain"
    bank = ImageBank(bench, adapter)
    t0 = time.time()
    splits = {}
    for seed in args.splits:
        splits[seed] = one_split(adapter, bank, bench, args.model, seed, kind)
        print(f"split {seed}: {json.dumps(splits[seed])}", flush=True)
    scopes = ["clean", "universal", "per_person", "per_example"]
    summary = {}  # scope -> group -> [mean, sd] over splits
    for s in scopes:
        per_group = {g: [r[s][g] for r in splits.values()] for g in splits[args.splits[0]][s]}
        summary[s] = {g: [float(np.mean(v)), float(np.std(v))] for g, v in per_group.items()}
    who = args.model if args.on == "unlearned" else "retrain control"
    print(f"\n{who}, generation exact match, mean ± sd over splits {args.splits} ({time.time() - t0:.0f} s)\n")
    print("| one δ per | (a) attacker's photos | (b) their held-out photos |\n|---|---|---|")
    for s in scopes:
        cells = [f"{summary[s][g][0]:.1f} ± {summary[s][g][1]:.1f}" if g in summary[s] else "–" for g in ("a", "b")]
        print(f"| {s.replace('_', ' ')} | " + " | ".join(cells) + " |")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        result = {"model": args.model, "on": args.on, "splits": splits, "summary": summary}
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
