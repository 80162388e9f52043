"""When δ opens the refusal gate on people it never saw, whose answers come out?

On the IDK model the shipped δ lowers refusal on unseen people's held-out photos by 24 points but raises exact
match by 9: most answers it lets out are wrong. Wrong how? If δ carries the faces it was fitted on, a wrong
answer about an unseen person should often be what one of the attacker people would answer to that question
(δ writes their identity in). Values come from short lists, so chance hits are common; the figure is the hit
rate per person of a pool (the share of the pool's people, the person asked about left out, whose answer to
that question is the wrong answer given), for the attacker people, the unseen forget people and the retain
people. Write-in shows as an attacker rate well above the other two. "real value": the wrong answer is some
bench person's answer to that question at all (a real name, town, job), not a garbled one.

Generation questions, fp32; the shipped world and noises, or another world's (`make worlds` builds them).

  HF_HUB_OFFLINE=1 .venv/bin/python studies/write_in.py --models idk grad_diff --splits 0 1 2 3 4 5 \\
      --out checkpoints/studies/write_in/write_in.json
  HF_HUB_OFFLINE=1 .venv/bin/python studies/write_in.py --world runs/worlds/seed1 --bench-seed 1 --splits 0 1 2 \\
      --out checkpoints/studies/write_in/write_in_seed1.json
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from sua_demo.analysis.write_in import SHARES, WRONG, answers_by_fact, count, rates
from sua_demo.attacks import load_noise
from sua_demo.core.config import BenchConfig
from sua_demo.dataset import build_bench
from sua_demo.dataset.records import Bench
from sua_demo.eval.recovery import answers_with, attack_split, protocol_groups
from sua_demo.models import load_adapter
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import ImageBank

ROOT = Path(__file__).resolve().parent.parent / "checkpoints"
GROUPS = ("b_attacker_heldout", "c_unseen_heldout", "retain_heldout")
ROWS = tuple(r for g in GROUPS for r in (g, f"{g}/name"))  # every question, and the name question alone


def one_split(
    adapter: VisionLanguageAdapter, bank: ImageBank, bench: Bench, noises: Path, seed: int
) -> dict[str, dict[str, dict[str, float]]]:
    """Counts per row (group, and its name question alone), clean and with the split's δ."""
    split = attack_split(bench, seed=seed)
    noise = load_noise(noises / f"delta_split{seed}.safetensors")
    assert noise.meta.get("split_seed") == seed, "the shipped δ of another split"
    pools = {"attacker": split.attacker_ids, "unseen": split.unseen_ids, "retain": list(bench.retain_ids)}
    groups, said = protocol_groups(bench, split), answers_by_fact(bench)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for g in GROUPS:
        ex = [e for e in groups[g] if e.item.task == "gen"]
        names = [i for i, e in enumerate(ex) if e.item.fact == "name"]  # unique per person: no chance collisions
        for which, n in (("clean", None), ("delta", noise)):
            ans = answers_with(adapter, bank, ex, n)
            out.setdefault(g, {})[which] = count(ex, ans, adapter.refusals, pools, said)
            named = [ex[i] for i in names], [ans[i] for i in names]
            out.setdefault(f"{g}/name", {})[which] = count(*named, adapter.refusals, pools, said)
    return out


def summarise(rows: list[dict[str, dict[str, dict[str, float]]]]) -> dict[str, Any]:
    """Per row and condition: rates pooled over splits, and the attacker - retain hit rate per split (mean, sd
    over the splits that have wrong answers), the paired test of write-in."""
    out: dict[str, Any] = {}
    for g in ROWS:
        for w in ("clean", "delta"):
            pooled = {k: sum(r[g][w][k] for r in rows) for k in rows[0][g][w]}
            diffs = [
                100 * (r[g][w]["hit_attacker"] - r[g][w]["hit_retain"]) / r[g][w]["wrong"]
                for r in rows
                if r[g][w]["wrong"]
            ]
            out.setdefault(g, {})[w] = {
                **rates(pooled),
                "attacker_minus_retain": [float(np.mean(diffs)), float(np.std(diffs)), len(diffs)] if diffs else None,
            }
    return out


def cell(a: float | None, b: float | None) -> str:
    return " → ".join("–" if v is None else f"{v:.1f}" for v in (a, b))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["idk", "grad_diff"])
    ap.add_argument("--splits", type=int, nargs="+", default=[0, 1, 2, 3, 4, 5])
    ap.add_argument("--world", type=Path, default=ROOT, help="a folder with tiny-llava/ and noise/ (another world)")
    ap.add_argument("--bench-seed", type=int, default=BenchConfig.seed, help="that world's bench seed")
    ap.add_argument("--out", help="write the figures here as JSON")
    args = ap.parse_args()
    bench = build_bench(replace(BenchConfig(), seed=args.bench_seed))
    result: dict[str, Any] = {"bench_seed": args.bench_seed, "splits": args.splits, "models": {}}
    t0 = time.time()
    for name in args.models:
        adapter = load_adapter(args.world / "tiny-llava" / name)
        bank = ImageBank(bench, adapter)
        rows = [one_split(adapter, bank, bench, args.world / "noise" / name, s) for s in args.splits]
        summary = summarise(rows)
        result["models"][name] = {"per_split": rows, "pooled": summary}
        took = time.time() - t0
        print(
            f"\n{name}: clean → δ, % of answers (of wrong answers), pooled over splits {args.splits} ({took:.0f} s)\n"
        )
        keys = SHARES + WRONG
        print("| group | " + " | ".join(k.replace("_", " ") for k in keys) + " | attacker − retain, per split |")
        print("|---|" + "---|" * (len(keys) + 1))
        for g in ROWS:
            c, d = summary[g]["clean"], summary[g]["delta"]
            diff = d["attacker_minus_retain"]
            paired = "–" if diff is None else f"{diff[0]:+.1f} ± {diff[1]:.1f} ({diff[2]})"
            print(f"| {g} | " + " | ".join(cell(c[k], d[k]) for k in keys) + f" | {paired} |")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
