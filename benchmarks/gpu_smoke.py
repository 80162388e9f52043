"""The attack step on a real architecture, measured in FLOPs: steps/s, MFU against the device's peak, memory.

  --random llava-1.5-7b   build LLaVA-1.5-7B's shapes with random weights directly on the device (no download)
  --model DIR             or load a local model folder
  --layers N              shorten both towers to N layers (a CPU check of the code path)

FLOPs per step are counted by torch's FlopCounterMode on one attack step (the SUA objective's forward and its
backward to delta); MFU divides them by the step time and the device's dense bf16 peak (a table for common
GPUs, --peak-tflops to override; on a CPU, a measured matmul peak). Each figure is printed as soon as it is
known, and the script stops itself inside --max-seconds, so a slow load still leaves output. On one H200:

  HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/gpu_smoke.py --random llava-1.5-7b --batch-size 8
  HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/gpu_smoke.py --random llava-1.5-7b --batch-size 32
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import torch

PEAK_BF16_TFLOPS = {"H200": 989.5, "H100": 989.5, "A100": 312.0, "L40S": 362.0, "A10G": 125.0, "L4": 121.0}
SHAPES = {  # the published configs' sizes; weights random
    "llava-1.5-7b": {
        "vision": {"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24, "num_attention_heads": 16,
                   "image_size": 336, "patch_size": 14, "projection_dim": 768},
        "text": {"hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32,
                 "num_key_value_heads": 32, "vocab_size": 32064, "max_position_embeddings": 4096},
        "vision_feature_layer": -2,
    },
}  # fmt: skip
T0 = time.time()


def say(what: str, value: Any) -> None:
    print(f"[{time.time() - T0:6.1f} s] {what}: {value}", flush=True)


def random_llava(name: str, layers: int | None, device: str, dtype: torch.dtype):  # type: ignore[no-untyped-def]
    """A LlavaForConditionalGeneration of the named shapes on `device`, and a processor whose word-level
    tokenizer covers the bench's text (ids beyond it are simply never used)."""
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig, LlavaForConditionalGeneration

    from sua_demo.core.config import TinyModelConfig
    from sua_demo.dataset import build_bench
    from sua_demo.models.llava import LlavaAdapter
    from sua_demo.models.tiny_llava import bench_corpus, build_processor, build_tokenizer

    shape = SHAPES[name]
    vision, text = dict(shape["vision"]), dict(shape["text"])
    if layers:
        vision["num_hidden_layers"] = text["num_hidden_layers"] = layers
    tokenizer = build_tokenizer(bench_corpus(build_bench()))
    image_token = tokenizer.convert_tokens_to_ids("<image>")
    n_tokens = (vision["image_size"] // vision["patch_size"]) ** 2
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(**vision),
        text_config=LlamaConfig(**text, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id),
        image_token_index=image_token,
        image_seq_length=n_tokens,
        vision_feature_layer=shape["vision_feature_layer"],
        vision_feature_select_strategy="default",
    )
    with torch.device(device):
        model = LlavaForConditionalGeneration(config).to(dtype)
    cfg = TinyModelConfig(image_size=vision["image_size"], patch_size=vision["patch_size"])
    return LlavaAdapter(model.eval(), build_processor(tokenizer, cfg), source=f"random {name}")


def device_peak(device: str, dtype: torch.dtype) -> tuple[float, str]:
    """The device's dense peak in the dtype the attack computes in (on a CPU, measured)."""
    if device.startswith("cuda"):
        gpu = torch.cuda.get_device_name()
        for key, tflops in PEAK_BF16_TFLOPS.items():
            if key in gpu:
                return tflops * 1e12, f"{gpu}, dense bf16 {tflops} TFLOP/s (datasheet)"
        return float("nan"), f"{gpu}: unknown peak, pass --peak-tflops"
    n = 2048
    a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
    a @ b
    t = time.perf_counter()
    for _ in range(4):
        a @ b
    flops = 2 * n**3 * 4 / (time.perf_counter() - t)
    return flops, f"CPU {str(dtype).removeprefix('torch.')} matmul, measured {flops / 1e9:.0f} GFLOP/s"


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--random", choices=list(SHAPES), help="random weights of these shapes")
    ap.add_argument("--model", help="a local model folder instead")
    ap.add_argument("--layers", type=int, help="shorten both towers to this many layers")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--peak-tflops", type=float, help="the device's peak, if the table does not know it")
    ap.add_argument("--max-seconds", type=float, default=420)
    run(ap.parse_args())


def run(args: argparse.Namespace) -> None:
    """The model, its FLOPs per step and the device's peak, then the timed steps (`timed_steps`)."""
    from transformers.utils import logging as hf_logging

    from sua_demo.attacks import ATTACKS, AttackConfig
    from sua_demo.core.machine import describe
    from sua_demo.dataset import build_bench
    from sua_demo.eval.recovery import attack_split, attacker_examples
    from sua_demo.models import load_adapter
    from sua_demo.models.examples import ExampleSampler, ImageBank

    hf_logging.disable_progress_bar()
    cuda = args.device.startswith("cuda")
    dtype = torch.bfloat16 if cuda else torch.float32
    say("machine", describe() + (f"; {torch.cuda.get_device_name()}" if cuda else ""))
    if args.random:
        adapter = random_llava(args.random, args.layers, args.device, dtype)
    else:
        adapter = load_adapter(args.model or "checkpoints/tiny-llava/idk", dtype="auto", device=args.device)
    params = sum(p.numel() for p in adapter.model.parameters())
    say("model", f"{adapter.source}: {params / 1e9:.2f} B parameters, {adapter.image_size} px, {dtype}")
    bench = build_bench()
    bank = ImageBank(bench, adapter)
    examples = attacker_examples(bench, attack_split(bench, 0.5, 0))
    chunk = ExampleSampler(examples, args.batch_size, 0)()
    cfg = AttackConfig(batch_size=args.batch_size, eot=False, checkpoint_every=10**9, precision="auto")
    attack = ATTACKS.get("sua")(adapter, cfg)

    from torch.utils.flop_counter import FlopCounterMode

    x = bank.get(chunk).to(args.device)
    delta = torch.zeros(3, adapter.image_size, adapter.image_size, device=args.device, requires_grad=True)
    with FlopCounterMode(display=False) as counter:
        with torch.autocast(args.device.split(":")[0], dtype=torch.bfloat16, enabled=cuda):
            loss, _ = attack.objective(x, delta, chunk, None, bank)
        torch.autograd.grad(loss, delta)
    flops = counter.get_total_flops()
    say("FLOPs per step (FlopCounterMode, forward + backward to delta)", f"{flops / 1e12:.2f} TFLOP")
    from sua_demo.core.precision import resolve

    chosen = resolve(cfg.precision, args.device)
    say("precision", f"{chosen.name} ({chosen.reason})")
    peak, peak_note = device_peak(args.device, chosen.dtype or torch.float32)
    if args.peak_tflops:
        peak, peak_note = args.peak_tflops * 1e12, f"given: {args.peak_tflops} TFLOP/s"
    say("peak", peak_note)
    timed_steps(args, adapter, bank, chunk, cfg, flops, peak)


def timed_steps(args, adapter, bank, chunk, cfg, flops: float, peak: float) -> None:  # type: ignore[no-untyped-def]
    """Steps of the attack timed after a warm-up one, each line with its MFU, stopped inside the time cap."""
    from sua_demo.attacks import ATTACKS

    cuda = args.device.startswith("cuda")
    if cuda:
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.synchronize()
    marks: list[float] = []

    class OutOfTime(Exception):
        pass

    def timed(step: int, stats: dict[str, float]) -> None:
        if cuda:
            torch.cuda.synchronize()
        marks.append(time.perf_counter())
        if len(marks) > 1:  # the first step warms kernels and the allocator up
            seconds = (marks[-1] - marks[0]) / (len(marks) - 1)
            say(
                f"step {step}",
                f"{seconds:.3f} s/step, {flops / seconds / 1e12:.2f} TFLOP/s, MFU {flops / seconds / peak:.1%}",
            )
        if time.time() - T0 > args.max_seconds:  # the cap counts from the script's start, loading included
            raise OutOfTime

    run = ATTACKS.get("sua")(adapter, cfg.__class__(**{**cfg.__dict__, "steps": args.steps + 1}))
    try:
        run.run(bank, chunk, callback=timed, progress=False)
    except OutOfTime:
        say("stopped", f"inside the {args.max_seconds:.0f} s cap")
    if cuda:
        say("max_memory_allocated", f"{torch.cuda.max_memory_allocated() / 2**30:.2f} GiB")
        say("max_memory_reserved", f"{torch.cuda.max_memory_reserved() / 2**30:.2f} GiB")


if __name__ == "__main__":
    main()
