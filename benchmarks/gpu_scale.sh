#!/usr/bin/env bash
# docs/scale.md's study at the next tower sizes up, on one GPU, as one prepared call (issue 43). In order, each
# figure printed as it lands:
#   1. the MFU of one attack step of a random-init LLaVA-1.5-7B (benchmarks/gpu_smoke.py --random), 90 s at most;
#   2. per size (default XL, 512 wide x 12 layers, then XXL, 1024 x 12; the bench's 112 px as at every size):
#      the size's tower and general model, then each world (default world 0) built (vanilla, the retrain control,
#      IDK, GradDiff; gates) and attacked blind (the shipped recipe, 3 splits, every control);
#   3. the trend over every size attacked so far (checkpoints/faithful/scale/trend.md).
# Every stage resumes from its last checkpoint: a call stopped at its time limit goes on when run again. Weights
# stay in runs/faithful/scale/; reports land in checkpoints/faithful/scale/SIZE/ (copy them to $OUT to keep them).
#   bash benchmarks/gpu_scale.sh                                   # one GPU: XL then XXL, within LIMIT (570 s)
#   LIMIT=1200 bash benchmarks/gpu_scale.sh --seeds "0 1" XL       # both worlds of one size
#   MFU=0 bash benchmarks/gpu_scale.sh                             # the same call again, the MFU already printed
#   SUA_DEVICE=cpu bash benchmarks/gpu_scale.sh --plan toy --out /tmp/toy S   # every stage on a CPU (the test)
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
[ -x "$PY" ] || PY=python
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false SUA_DEVICE="${SUA_DEVICE:-cuda}"
PLAN=study SEEDS=0 OUT=()
while [[ $# -gt 0 && $1 == --* ]]; do
  case $1 in
    --plan) PLAN=$2; shift 2 ;;
    --seeds) SEEDS=$2; shift 2 ;;
    --out) OUT=(--out "$2"); shift 2 ;;
    *) echo "unknown option $1 (--plan, --seeds, --out, then sizes)" >&2; exit 2 ;;
  esac
done
SIZES=${*:-XL XXL}
END=$((SECONDS + ${LIMIT:-570}))
SUA=("$PY" -m sua_demo build-scale --plan "$PLAN" "${OUT[@]}")
echo "gpu_scale: device $SUA_DEVICE, plan $PLAN, sizes $SIZES, worlds $SEEDS, ${LIMIT:-570} s"
# the MFU needs a GPU's peak (on a CPU the build is what is tested); MFU=0 skips it when a stopped call is run again
if [[ ${MFU:-1} == 0 || $SUA_DEVICE == cpu ]]; then
  :
elif "$PY" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())'; then
  timeout 90 "$PY" benchmarks/gpu_smoke.py --random llava-1.5-7b --batch-size 8 --max-seconds 80 || echo "MFU: not measured"
else
  echo "MFU: not measured (no CUDA GPU is visible)"
fi
stage() {  # one resumable stage inside what is left of the time limit; 1 when it is used up
  local left=$((END - SECONDS))
  ((left > 0)) && timeout "$left" "${SUA[@]}" "$@" && return 0
  echo "gpu_scale: stopped at the time limit or failed in: build-scale $*; run the same call again to go on" >&2
  return 1
}
status=0
for SIZE in $SIZES; do
  for SEED in $SEEDS; do
    stage --size "$SIZE" --seeds "$SEED" && stage --size "$SIZE" --seeds "$SEED" --attack || { status=1; break 2; }
  done
done
"${SUA[@]}" --size "${SIZES%% *}" --trend
exit $status
