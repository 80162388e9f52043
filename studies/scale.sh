#!/bin/bash
# docs/scale.md's study at one tower size, in its compute order: the size's tower and general model, then its
# worlds side by side (one core each), then the shipped attack on each, blind, then the offsets ceiling on world
# 0's IDK and the trend over every size attacked so far. Resumable: run it again and every step goes on from its
# last checkpoint; finished reports land in checkpoints/faithful/scale/SIZE/.
#   studies/scale.sh S          # worlds 0 and 1
#   studies/scale.sh L 0 1
set -e
cd "$(dirname "$0")/.."
SIZE=$1
shift
SEEDS=${*:-0 1}
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1
SUA=.venv/bin/sua
$SUA -v build-scale --size "$SIZE" --general-only
side_by_side() {  # one run per world, each on a core; fails if any of them fails
  local pids=()
  for S in $SEEDS; do $SUA -v build-scale --size "$SIZE" --seeds "$S" "$@" & pids+=($!); done
  for p in "${pids[@]}"; do wait "$p"; done
}
side_by_side
# a world whose vanilla misses its gates is refused by name (docs/scale.md) and the others go on
side_by_side --attack || echo "size $SIZE: not every world was attacked (the reason is above); the rest goes on" >&2
OMP_NUM_THREADS=2 .venv/bin/python studies/offsets.py --world faithful --size "$SIZE" --lr 0.2 --models idk retrain \
  --out "checkpoints/faithful/scale/$SIZE/offsets.json"
$SUA build-scale --size "$SIZE" --trend
echo "size $SIZE: built and attacked"
