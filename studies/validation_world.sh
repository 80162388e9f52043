#!/bin/bash
# One faithful world with the validation-rule GradDiff (faithful.VALIDATION_RULES), then the shipped attack, blind.
# `studies/validation_world.sh SEED`; resumable: run it again and each step goes on from its last checkpoint.
set -e
cd "$(dirname "$0")/.."
S=$1
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1
.venv/bin/sua -v build-faithful --seeds $S --only vanilla
.venv/bin/sua -v build-faithful --seeds $S --only retrain
.venv/bin/sua -v build-faithful --seeds $S --validation --only grad_diff
V=runs/faithful/validation/world$S
ln -sfn ../../world$S/vanilla $V/vanilla
ln -sfn ../../world$S/retrain $V/retrain
.venv/bin/python - <<PY
import logging, time
from pathlib import Path
from sua_demo.build import build_noises
from sua_demo.config import faithful_bench
from sua_demo.faithful import ATTACK_SPLITS
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
out = Path("$V")
t0 = time.time()
build_noises(out, out / "noise", only=["grad_diff"], bench_cfg=faithful_bench($S), splits=ATTACK_SPLITS, studies=False)
logging.info("attacked in %.0f s", time.time() - t0)
PY
echo DONE
