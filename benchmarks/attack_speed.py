"""How fast is the SUA step, against a reference-style step and against the machine's matmul peak?

One run, one model (the shipped tiny IDK LLaVA), one batch of attacker examples, one denoiser (gaussian):

  reference  the public SUA code's habits: PIL photos -> HF processor -> pixel_values at every step,
             delta added in normalised space, x+delta and D(x+delta) through the whole model in two
             passes with processor-built ids and labels, the embedding term in a third pass; fp32.
  project    the real loop (UniversalAttack.run): one vision pass for x+delta and D(x+delta), the
             embedding term from that pass, cached prompt ids, tensors made once; fp32 and bf16 autocast.

Both optimise the same objective (NLL on x+delta + beta * NLL on D(x+delta) + lambda * (1 - cos)); the
run checks that their losses agree. FLOPs of one forward+backward come from FlopCounterMode; the peak is
a 2048x2048 torch.matmul per dtype, timed in the same run with the same threads. The machine may be
shared, so every figure is the best of interleaved rounds. It first names the machine (CPU, cores, the ISA flags
that decide bf16 speed, oneDNN's own bf16 answer) and ends with one line a script can read:
`ratio default/reference: X`, the default being precision="auto" as this machine resolves it. Usage:

  HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/attack_speed.py [--batch 32] [--beta 0] [--rounds 3] [--world faithful]

`--world faithful` times the faithful world's IDK model (112 px, 49 image tokens; docs/world.md) instead.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from sua_demo.attacks import ATTACKS, AttackConfig
from sua_demo.attacks.speed import attack_mode
from sua_demo.core.config import shipped_world, shown_path
from sua_demo.core.machine import describe
from sua_demo.core.precision import resolve
from sua_demo.dataset import build_bench
from sua_demo.denoisers import build_denoiser
from sua_demo.eval.recovery import attack_split, attacker_examples
from sua_demo.models import load_adapter
from sua_demo.models.base import IGNORE, VisionLanguageAdapter
from sua_demo.models.examples import Example, ExampleSampler, ImageBank


class ReferenceStep:
    """The public code's step, written out: everything rebuilt from PIL and text at every call."""

    def __init__(self, adapter: VisionLanguageAdapter, bench, chunk: list[Example], cfg: AttackConfig) -> None:  # type: ignore[no-untyped-def]
        self.adapter, self.cfg = adapter, cfg
        self.model, self.processor = adapter.model, adapter.processor
        self.photos = [bench.person(e.person_id).photos[e.photo].convert("RGB") for e in chunk]
        self.prompts = [adapter.prompt_text(e.item.question, with_image=True) for e in chunk]
        self.answers = [e.item.answer for e in chunk]
        self.denoiser = build_denoiser(cfg.denoiser)

    def loss(self, delta: torch.Tensor) -> torch.Tensor:
        tok = self.processor.tokenizer
        texts = [f"{p} {a}{tok.eos_token}" for p, a in zip(self.prompts, self.answers, strict=True)]
        enc = self.processor(text=texts, images=self.photos, return_tensors="pt", padding=True)
        prompt_len = [
            len(self.processor(text=[p], images=[im])["input_ids"][0])
            for p, im in zip(self.prompts, self.photos, strict=True)
        ]
        labels = enc["input_ids"].clone()
        labels[enc["attention_mask"] == 0] = IGNORE
        for i, n in enumerate(prompt_len):
            labels[i, :n] = IGNORE
        ip = self.processor.image_processor
        mean = torch.tensor(ip.image_mean).view(1, 3, 1, 1)
        std = torch.tensor(ip.image_std).view(1, 3, 1, 1)
        adv = enc["pixel_values"] + delta / std  # delta in normalised space
        den = (self.denoiser((adv * std + mean).clamp(0, 1)) - mean) / std

        def nll(pixel_values: torch.Tensor) -> torch.Tensor:
            logits = self.model(
                input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], pixel_values=pixel_values
            ).logits
            logp = -F.cross_entropy(logits[:, :-1].transpose(1, 2), labels[:, 1:].clamp(min=0), reduction="none")
            mask = labels[:, 1:] != IGNORE
            return -((logp * mask).sum(1) / mask.sum(1)).mean()

        loss = nll(adv) + self.cfg.beta * nll(den)  # two full passes
        feats = self.model.get_image_features(pixel_values=torch.cat([adv, den])).pooler_output  # a third
        feats = torch.stack(list(feats)) if isinstance(feats, (list, tuple)) else feats
        pooled = feats.mean(1)
        n = len(self.photos)
        return loss + self.cfg.stealth_weight * (1 - F.cosine_similarity(pooled[:n], pooled[n:], dim=-1)).mean()

    def step(self, delta: torch.Tensor) -> float:
        (grad,) = torch.autograd.grad(self.loss(delta), delta)
        with torch.no_grad():
            delta -= self.cfg.alpha * grad.sign()
            delta.clamp_(-self.cfg.eps, self.cfg.eps)
        return float(grad.abs().sum())


def project_seconds(adapter, bank, chunk: list[Example], cfg: AttackConfig, steps: int) -> float:  # type: ignore[no-untyped-def]
    """Seconds per step of the real loop over `steps` steps (after one warm-up step)."""
    marks: list[float] = []
    attack = ATTACKS.get("sua")(adapter, replace(cfg, steps=steps + 1))
    attack.run(bank, chunk, callback=lambda s, _: marks.append(time.perf_counter()), progress=False)
    return (marks[-1] - marks[0]) / steps


def reference_seconds(ref: ReferenceStep, size: int, steps: int) -> float:
    delta = torch.zeros(3, size, size, requires_grad=True)
    ref.step(delta)
    t = time.perf_counter()
    for _ in range(steps):
        ref.step(delta)
    return (time.perf_counter() - t) / steps


def matmul_peak(dtype: torch.dtype, n: int = 2048, reps: int = 4) -> float:
    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    a @ b
    t = time.perf_counter()
    for _ in range(reps):
        a @ b
    return 2 * n**3 * reps / (time.perf_counter() - t)


def step_flops(adapter, bank, chunk: list[Example], cfg: AttackConfig) -> int:  # type: ignore[no-untyped-def]
    """FLOPs of one forward+backward of the project's objective (weights frozen: input gradients only)."""
    attack = ATTACKS.get("sua")(adapter, cfg)
    x = bank.get(chunk)
    delta = torch.zeros(3, x.shape[-1], x.shape[-1], requires_grad=True)
    with attack_mode(adapter, adapter.device, None), FlopCounterMode(display=False) as counter:
        loss, _ = attack.objective(x, delta, chunk, None, bank)
        torch.autograd.grad(loss, delta)
    return counter.get_total_flops()


def check_same_objective(
    adapter, bank, ref: ReferenceStep, chunk: list[Example], cfg: AttackConfig
) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    attack = ATTACKS.get("sua")(adapter, cfg)
    x = bank.get(chunk)
    delta = torch.zeros(3, x.shape[-1], x.shape[-1])
    with torch.no_grad():
        return float(attack.objective(x, delta, chunk, None, bank)[0]), float(ref.loss(delta))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=AttackConfig.batch_size, help="the recipe's own batch by default")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds; the best of each is reported")
    ap.add_argument("--steps", type=int, default=4, help="project steps timed per round")
    ap.add_argument("--ref-steps", type=int, default=2, help="reference steps timed per round")
    ap.add_argument("--threads", type=int, default=0, help="0: torch's default")
    ap.add_argument("--beta", type=float, default=AttackConfig.beta, help="weight of the NLL on D(x + delta)")
    ap.add_argument("--no-100", action="store_true", help="skip the whole attack at the default settings")
    ap.add_argument("--world", choices=["first", "faithful"], default="first", help="whose IDK model to time")
    ap.add_argument(
        "--precisions",
        nargs="+",
        default=["fp32", "bf16", "auto"],
        choices=["fp32", "bf16", "auto"],
        help="project steps to time; leave out bf16 where it is emulated (minutes a step without native bf16)",
    )
    run(ap.parse_args())


def run(args: argparse.Namespace) -> None:
    """Both steps timed in interleaved rounds against the matmul peaks, the table, then whole attacks."""
    if args.threads:
        torch.set_num_threads(args.threads)
    threads = torch.get_num_threads()
    world = shipped_world(args.world)
    model = world.models / "idk"
    adapter = load_adapter(model)
    bench = build_bench(world.bench)
    bank = ImageBank(bench, adapter)
    examples = attacker_examples(bench, attack_split(bench, 0.5, 0))
    chunk = ExampleSampler(examples, args.batch, seed=0)()
    # The recipe's objective (beta 0: the answer NLL on x + delta, the cosine term from the same vision pass); the
    # reference-style step computes it its own way. EOT off in both, so both see the very same images.
    cfg = AttackConfig(beta=args.beta, threads=threads, batch_size=args.batch, eot=False)
    ref = ReferenceStep(adapter, bench, chunk, cfg)
    ours, theirs = check_same_objective(adapter, bank, ref, chunk, cfg)
    print(f"same objective at delta=0: project {ours:.4f}, reference {theirs:.4f}")
    flops = step_flops(adapter, bank, chunk, cfg)
    print(describe())
    chosen = resolve("auto", adapter.device)
    uses_bf16 = "bf16" in args.precisions or chosen.name == "bf16"
    best = best_of_rounds(args, adapter, bank, chunk, cfg, ref, uses_bf16)
    print(
        f"\nmodel {shown_path(model)} ({adapter.image_size} px), batch {args.batch}, denoiser {cfg.denoiser}, "
        f"beta {cfg.beta}, {threads} threads, "
        f"best of {args.rounds} rounds; one step = {flops / 1e9:.1f} GFLOP (forward + backward)"
    )
    bf16_peak = f"{best['peak bf16'] / 1e9:.0f} GFLOP/s" if uses_bf16 else "not timed"
    print(
        f"matmul peak (2048², {threads} threads): fp32 {best['peak fp32'] / 1e9:.0f} GFLOP/s, bf16 {bf16_peak}; "
        f"precision='auto' here: {chosen.name} ({chosen.reason})\n"
    )
    print_table(best, flops, args.precisions, chosen.name)
    if not args.no_100:
        base = AttackConfig(threads=threads)
        for precision in ("fp32", "auto"):
            t = time.perf_counter()
            ATTACKS.get("sua")(adapter, replace(base, precision=precision)).run(bank, examples, progress=False)
            print(
                f"{base.steps}-step attack, default batch {base.batch_size}, precision {precision}: "
                f"{time.perf_counter() - t:.1f} s"
            )
    if "project auto" in best:
        print(f"ratio default/reference: {best['reference'] / best['project auto']:.2f}")


def best_of_rounds(args, adapter, bank, chunk, cfg, ref, uses_bf16: bool) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Each step's fastest time and each dtype's highest matmul peak over interleaved rounds."""
    best: dict[str, float] = {}

    def keep(name: str, value: float, larger: bool = False) -> None:
        old = best.get(name)
        best[name] = value if old is None else (max(old, value) if larger else min(old, value))

    for _ in range(args.rounds):
        keep("reference", reference_seconds(ref, adapter.image_size, args.ref_steps))
        for precision in args.precisions:
            keep(
                f"project {precision}",
                project_seconds(adapter, bank, chunk, replace(cfg, precision=precision), args.steps),
            )
        keep("peak fp32", matmul_peak(torch.float32), larger=True)
        if uses_bf16:  # an emulated bf16 matmul of this size takes minutes; its probe ratio is in the log line
            keep("peak bf16", matmul_peak(torch.bfloat16), larger=True)
    return best


def print_table(best: dict[str, float], flops: float, precisions: list[str], auto: str) -> None:
    print("| step | s/step | steps/s | × reference | GFLOP/s | % of its dtype's matmul peak |")
    print("|---|---|---|---|---|---|")
    for name in ["reference", *(f"project {p}" for p in precisions)]:
        s = best[name]
        dtype = auto if name == "project auto" else ("bf16" if name.endswith("bf16") else "fp32")
        util = f"{100 * flops / s / best['peak ' + dtype]:.0f}% ({dtype})" if name != "reference" else "–"
        gf = f"{flops / s / 1e9:.0f}" if name != "reference" else "–"
        label = f"project default (auto → {auto})" if name == "project auto" else name
        print(f"| {label} | {s:.3f} | {1 / s:.2f} | {best['reference'] / s:.1f} | {gf} | {util} |")


if __name__ == "__main__":
    main()
