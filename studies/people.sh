#!/bin/bash
# docs/scale.md's second axis at one tower size (default M, today's): how far δ reaches people it never saw when it
# is fitted on 4, 8 or 11 of the 15 forget people. The size's worlds (M: rebuilt under the study's train-photo rule
# from the shipped general model, world 0 sharing the shipped vanilla and retrain control) side by side, one core
# each; on each, IDK at every share, then GradDiff; then the tables. Resumable: run it again and every step goes on
# from its last checkpoint; reports land in checkpoints/faithful/scale/SIZE/world*/noise_fraction*/ and people.md.
#   studies/people.sh           # size M, worlds 0 and 1
#   studies/people.sh S 0 2
set -e
cd "$(dirname "$0")/.."
SIZE=${1:-M}
shift || true
SEEDS=${*:-0 1}
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1
SUA=.venv/bin/sua
$SUA -v build-scale --size "$SIZE" --general-only
one_world() {
  $SUA -v build-scale --size "$SIZE" --seeds "$1"
  $SUA -v build-scale --size "$SIZE" --seeds "$1" --people --only idk
  $SUA -v build-scale --size "$SIZE" --seeds "$1" --people --only grad_diff
}
pids=()
for S in $SEEDS; do one_world "$S" & pids+=($!); done
for p in "${pids[@]}"; do wait "$p"; done
$SUA build-scale --size "$SIZE" --trend
echo "size $SIZE: the second axis attacked"
