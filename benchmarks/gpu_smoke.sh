#!/usr/bin/env bash
# One-GPU smoke benchmark from local weights only (no downloads): a short SUA run on the shipped tiny
# model, then steps/s and peak GPU memory as one JSON line. Sized to finish well within 8 minutes.
#   bash benchmarks/gpu_smoke.sh                     # GPU, defaults
#   bash benchmarks/gpu_smoke.sh --device cpu --steps 3   # the code path without a GPU
#   bash benchmarks/gpu_smoke.sh --model /path/to/local/llava-1.5-7b-hf --batch-size 8
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
[ -x "$PY" ] || PY=python
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
if [ ! -d checkpoints/tiny-llava/idk ] && [[ " $* " != *" --model "* ]]; then
  echo "checkpoints/tiny-llava/idk is missing: run 'make checkpoints' first, or pass --model DIR" >&2
  exit 2
fi
exec timeout 480 "$PY" benchmarks/gpu_smoke.py "$@"
