#!/bin/bash
# One faithful world built by the shipped recipes and stopping rules (faithful.SHIPPED_RULES: IDK and GradDiff stop
# on validation photos), then the shipped attack, blind, every control; its reports ship to
# checkpoints/faithful/validation/world<S>/. `studies/validation_world.sh SEED`; resumable: run it again and each
# step goes on from its last checkpoint (a finished model is skipped).
set -e
cd "$(dirname "$0")/.."
S=$1
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1
.venv/bin/sua -v build-faithful --seeds $S --only vanilla
.venv/bin/sua -v build-faithful --seeds $S --only retrain
.venv/bin/sua -v build-faithful --seeds $S --only idk grad_diff
.venv/bin/sua -v build-faithful --seeds $S --attack
echo DONE
