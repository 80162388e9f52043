"""Launched by tests/attacks/test_parallel.py as
`accelerate launch --multi_gpu --num_processes N parallel_attack.py MODEL OUT
[MODE]`. A few SUA steps on the micro bench (conftest's micro_bench); each rank writes its delta.

MODE: plain; retain (with the retain-KL term, on retain batches whose shards differ in answer tokens); fail
(rank 1 raises at its first step); resume (resumes OUT/ck.safetensors, and rank 1 may not read it).
"""

import os
import sys
from dataclasses import replace

from safetensors.torch import save_file

from sua_demo.attacks import ATTACKS, AttackConfig
from sua_demo.attacks.parallel import group, init_from_env, world
from sua_demo.core.config import BenchConfig
from sua_demo.dataset import build_bench
from sua_demo.models import load_adapter
from sua_demo.models.examples import ImageBank, image_examples

CFG = AttackConfig(steps=2, batch_size=9, alpha=2 / 255, precision="fp32", stealth_weight=1.0, beta=0.5)


def config(mode: str) -> AttackConfig:
    if mode == "retain":
        return replace(CFG, retain_kl_weight=5.0)
    if mode == "resume":
        return replace(CFG, steps=4)
    return CFG


def attack(model_dir: str, mode: str = "plain", checkpoint: str | None = None):  # type: ignore[no-untyped-def]
    device = init_from_env()
    bench = build_bench(BenchConfig(n_people=8, photos_per_person=3, train_photos=2, forget_fraction=0.25, seed=1))
    adapter = load_adapter(model_dir, device=str(device) if device else None)
    examples = image_examples(bench, bench.forget_ids, "train", ("gen", "mc"))
    retain = image_examples(bench, bench.retain_ids, "train", ("gen", "mc")) if mode == "retain" else None

    def fail_on_rank_1(step, stats):  # type: ignore[no-untyped-def]
        if world()[0] == 1:
            raise RuntimeError("rank 1 fails on purpose")

    callback = fail_on_rank_1 if mode == "fail" else None
    return ATTACKS.get("sua")(adapter, config(mode)).run(
        ImageBank(bench, adapter), examples, retain, checkpoint=checkpoint, callback=callback, progress=False
    )


if __name__ == "__main__":
    model, out = sys.argv[1], sys.argv[2]
    mode = sys.argv[3] if len(sys.argv) > 3 else "plain"
    if mode == "resume" and os.environ.get("RANK", "0") != "0":
        import sua_demo.attacks.base as base

        def refuse(*args, **kwargs):  # type: ignore[no-untyped-def]
            raise AssertionError("only rank 0 may read the checkpoint")

        base.load_noise = refuse  # type: ignore[assignment]
    with group():
        noise = attack(model, mode, f"{out}/ck.safetensors" if mode == "resume" else None)
        save_file({"delta": noise.delta}, f"{out}/rank{world()[0]}.safetensors")
