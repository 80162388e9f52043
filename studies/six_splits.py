"""The default world's headline over six splits (issue 58, docs/robust.md "Science hygiene"): the shipped IDK and
GradDiff attacked on splits 3, 4 and 5 by the shipped recipe, blind, every control, then read beside the shipped
splits 0, 1 and 2.

    HF_HUB_OFFLINE=1 .venv/bin/python studies/six_splits.py           # attack (resumes split by split), then read
    HF_HUB_OFFLINE=1 .venv/bin/python studies/six_splits.py --read    # the table from what is there

The δ files and reports go to runs/faithful/six_splits/<model>/ (not shipped: 1 MB a model); the table to
checkpoints/faithful/six_splits.json and .md.
"""

from __future__ import annotations

import argparse
import json
import logging
import time

from sua_demo.analysis.split_gains import split_gains, table
from sua_demo.core.config import faithful_bench
from sua_demo.core.io import atomic_write_text, write_json
from sua_demo.core.machine import describe
from sua_demo.dataset import build_bench
from sua_demo.eval.protocol import run_protocol
from sua_demo.worlds.build import DEMO_MODELS, noise_protocol
from sua_demo.worlds.faithful import ATTACK_SPLITS, FAITHFUL, RUNS

log = logging.getLogger("six_splits")
MORE = [3, 4, 5]
OUT = RUNS / "six_splits"


def attack(models: list[str]) -> None:
    bench = build_bench(faithful_bench(0))
    for name in models:
        t0 = time.time()
        run_protocol(FAITHFUL / name, FAITHFUL / "retrain", bench, noise_protocol(name, MORE, studies=False),
                     OUT / name, vanilla=FAITHFUL / "vanilla")  # fmt: skip
        log.info("%s: splits %s in %.0f s on %s", name, MORE, time.time() - t0, describe())


def read(models: list[str]) -> dict:
    found, lines = {}, ["# The default world's headline over six splits", "",
                        "Generation exact match, points: each condition's gain over the clean photo on the same model, "
                        f"mean ± sd over splits. Splits {ATTACK_SPLITS} are the shipped report's "
                        f"(`checkpoints/faithful/noise/<model>/report.json`); splits {MORE} were run later, blind, "
                        "by the same recipe with every control (`studies/six_splits.py`)."]  # fmt: skip
    for name in models:
        later = OUT / name / "report.json"
        if not later.is_file():
            continue
        gains = split_gains(json.loads((FAITHFUL / "noise" / name / "report.json").read_text()))
        gains |= split_gains(json.loads(later.read_text()))
        found[name] = {str(k): v for k, v in sorted(gains.items())}
        lines += ["", f"## {name}", "", table(gains, ATTACK_SPLITS).rstrip()]
    if not found:
        return found
    write_json(FAITHFUL / "six_splits.json", {"splits": {"shipped": ATTACK_SPLITS, "later": MORE}, "models": found})
    atomic_write_text(FAITHFUL / "six_splits.md", "\n".join(lines) + "\n")
    return found


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", nargs="+", default=list(DEMO_MODELS))
    p.add_argument("--read", action="store_true", help="only the table, from the reports there are")
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if not args.read:
        attack(args.models)
    print((FAITHFUL / "six_splits.md").read_text() if read(args.models) else "nothing attacked yet")


if __name__ == "__main__":
    main()
