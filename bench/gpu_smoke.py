"""GPU smoke benchmark: a short SUA run from local weights only; prints steps/s and peak GPU memory.

Uses the shipped tiny model (checkpoints/tiny-llava/<name>) or any local model folder given with
--model, the synthetic bench (built in seconds) or MLLMU-Bench parquet (--mllmu). Nothing is downloaded.
Sized for one GPU and well under 8 minutes; `--device cpu --steps 3` checks the code path without one.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before transformers is imported: local weights only
    from transformers.utils import logging as hf_logging

    from sua_demo.attacks import ATTACKS, AttackConfig
    from sua_demo.bench import build_bench
    from sua_demo.data import ImageBank, image_examples
    from sua_demo.models import load_adapter
    from sua_demo.models.loading import DTYPE_CHOICES

    hf_logging.disable_progress_bar()
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default=str(ROOT / "checkpoints" / "tiny-llava" / "idk"), help="local model folder")
    ap.add_argument("--mllmu", help="MLLMU-Bench parquet folder instead of the synthetic bench")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", choices=DTYPE_CHOICES, default="auto")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--max-seconds", type=float, default=420, help="cap on the timed run (steps are cut to fit)")
    args = ap.parse_args()

    t0 = time.time()
    if args.mllmu:
        from sua_demo.bench.mllmu import load_mllmu

        bench = load_mllmu(args.mllmu)
    else:
        bench = build_bench()
    adapter = load_adapter(args.model, dtype=args.dtype, device=args.device)
    bank = ImageBank(bench, adapter)
    examples = image_examples(bench, bench.forget_ids, "train", ("gen", "cloze"))
    setup_s = time.time() - t0
    cfg = AttackConfig(steps=3, batch_size=args.batch_size, checkpoint_every=10**9)
    cuda = args.device.startswith("cuda")

    def timed(steps: int) -> tuple[float, float]:
        if cuda:
            torch.cuda.synchronize()
        start = time.time()
        noise = ATTACKS.get("sua")(adapter, AttackConfig(**{**cfg.__dict__, "steps": steps})).run(
            bank, examples, progress=False
        )
        if cuda:
            torch.cuda.synchronize()
        return time.time() - start, float(noise.meta.get("loss", float("nan")))

    warm_s, _ = timed(3)  # warm-up: kernels, caches, allocator
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    steps = max(1, min(args.steps, int(args.max_seconds / max(warm_s / 3, 1e-3))))
    run_s, loss = timed(steps)
    result = {
        "model": args.model,
        "device": torch.cuda.get_device_name() if cuda else "cpu",
        "dtype": str(next(adapter.model.parameters()).dtype),
        "image_size": adapter.image_size,
        "batch_size": args.batch_size,
        "steps": steps,
        "steps_per_s": round(steps / run_s, 2),
        "run_s": round(run_s, 1),
        "setup_s": round(setup_s, 1),
        "final_loss": round(loss, 4),
        "peak_gpu_mem_mib": round(torch.cuda.max_memory_allocated() / 2**20, 1) if cuda else None,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
