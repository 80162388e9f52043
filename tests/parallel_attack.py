"""Launched by tests/test_parallel.py as `accelerate launch --multi_gpu --num_processes N parallel_attack.py MODEL OUT`.

A few SUA steps on the micro bench (the same bench as conftest's micro_bench); each rank writes its delta.
"""

import sys

from safetensors.torch import save_file

from sua_demo.attacks import ATTACKS, AttackConfig
from sua_demo.attacks.parallel import init_from_env, shutdown, world
from sua_demo.bench import build_bench
from sua_demo.config import BenchConfig
from sua_demo.data import ImageBank, image_examples
from sua_demo.models import load_adapter

CFG = AttackConfig(steps=2, batch_size=9, alpha=2 / 255, precision="fp32", stealth_weight=1.0, beta=0.5)


def attack(model_dir: str):  # type: ignore[no-untyped-def]
    device = init_from_env()
    bench = build_bench(BenchConfig(n_people=8, photos_per_person=3, train_photos=2, forget_fraction=0.25, seed=1))
    adapter = load_adapter(model_dir, device=str(device) if device else None)
    examples = image_examples(bench, bench.forget_ids, "train", ("gen", "mc"))
    return ATTACKS.get("sua")(adapter, CFG).run(ImageBank(bench, adapter), examples, progress=False)


if __name__ == "__main__":
    noise = attack(sys.argv[1])
    save_file({"delta": noise.delta}, f"{sys.argv[2]}/rank{world()[0]}.safetensors")
    shutdown()
