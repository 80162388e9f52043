"""How long does the residual-knowledge audit take: the whole `sua audit` of a model, and the app's live audit?

  full   every method over 3 splits, as `sua audit` runs it (what `make audits` ships; target <= 5 min, 2 cores)
  live   every method on one forget person, quick settings, as the Audit tab runs it (target <= 60 s)

Both call the library functions the CLI and the app call. Usage:

  HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/audit_speed.py [--model idk] [--skip-full]
"""

from __future__ import annotations

import argparse
import tempfile
import time

from sua_demo.audit.run import audit_models, run_audit
from sua_demo.core.config import CHECKPOINTS, BenchConfig
from sua_demo.core.machine import describe
from sua_demo.dataset import build_bench
from sua_demo.eval.recovery import attack_split
from sua_demo.models import load_adapter
from sua_demo.models.examples import ImageBank


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="idk", help="a shipped model's folder name")
    ap.add_argument("--skip-full", action="store_true", help="time only the live one-person audit")
    args = ap.parse_args()
    print(describe())
    models_dir, noise_dir = CHECKPOINTS / "tiny-llava", CHECKPOINTS / "noise" / args.model
    bench = build_bench(BenchConfig())
    if not args.skip_full:
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory() as out:
            run_audit(models_dir / args.model, models_dir / "retrain", bench, noise_dir, out)
        print(f"full audit of {args.model} (3 splits, every method, models loaded): {time.perf_counter() - t0:.0f} s")
    models = {}
    for role, name in (("unlearned", args.model), ("retrain", "retrain")):
        adapter = load_adapter(models_dir / name)
        models[role] = (adapter, ImageBank(bench, adapter))
    split = attack_split(bench, 0.5, 0)
    pid = split.unseen_ids[0]
    t0 = time.perf_counter()
    audit_models(models, bench, noise_dir, None, (0,), people=[pid], progress=False, quick=True)
    print(f"live audit of #{pid} (one person, quick, models cached): {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
