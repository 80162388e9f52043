"""How far can a universal change go, at the vision tower's input and at its output? Ceilings for the pixel delta.

One additive offset v on every image, with no budget, fitted like the shipped delta (the attacker's train
photos, generation questions, light photo jitter, 300 steps, here Adam on v) through a forward hook:
- at the input, on the patch embedding's output (width x grid x grid): a pixel delta acts there as exactly
  such an offset (the patch embedding is linear: conv(x + delta) = conv(x) + conv'(delta)), and every offset
  is some pixel pattern's, so this is the pixel delta at any budget, without clamping to [0, 1];
- at the output, on the projector's output (tokens x width): what the language model receives.
What v brings back on groups a, b, c and retain sits beside the shipped delta's; the same offsets fitted on
the retrain control say how much v writes in by itself. A study, not a recipe: groups b and c are read to
measure a ceiling, nothing is chosen by them. tiny-llava only (the hooks are on LLaVA-CLIP module names).

  HF_HUB_OFFLINE=1 .venv/bin/python studies/offsets.py --models idk grad_diff retrain --splits 0 1 2 3 4 5 \\
      --out checkpoints/studies/offsets/offsets.json

`--bench-seed S` reads another world built by `make worlds` (models under runs/worlds/seedS; that world's noises
are set beside the offsets where they were built); `--steps` and `--lr` fit longer or harder, to see whether a
ceiling is the fit's rather than the site's:

  HF_HUB_OFFLINE=1 .venv/bin/python studies/offsets.py --bench-seed 1 --models idk grad_diff retrain \\
      --out checkpoints/studies/offsets/offsets_seed1.json

`--sites` puts offsets in between too (after the tower's first LayerNorm, after each vision layer), to find
where in the tower universality stops:

  HF_HUB_OFFLINE=1 .venv/bin/python studies/offsets.py --models idk --splits 0 1 2 \\
      --sites pre_norm layer1 layer2 layer3 --out checkpoints/studies/offsets/offsets_layers.json

`--world faithful` reads the faithful world (docs/world.md; `--bench-seed` picks which, 0 being the shipped one
in checkpoints/faithful), whose tower and projector are pretrained and frozen:

  HF_HUB_OFFLINE=1 .venv/bin/python studies/offsets.py --world faithful --lr 0.2 \\
      --out checkpoints/studies/offsets/offsets_faithful.json

`--size S` (or L) reads a faithful world at another tower size (docs/scale.md, `sua build-scale`):

  HF_HUB_OFFLINE=1 .venv/bin/python studies/offsets.py --world faithful --size S --lr 0.2 --models idk retrain \\
      --out checkpoints/faithful/scale/S/offsets.json

A run writes its file after each split of each model and, run again with the same settings, goes on from the
first split not in it.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch
from scipy.optimize import linprog
from torch.utils.hooks import RemovableHandle

from sua_demo.attacks import load_noise
from sua_demo.attacks.sua import bucketed_loss
from sua_demo.core.augment import photo_jitter
from sua_demo.core.config import BenchConfig, faithful_bench
from sua_demo.core.machine import describe
from sua_demo.dataset import build_bench
from sua_demo.dataset.records import Bench
from sua_demo.eval.evaluate import score
from sua_demo.eval.recovery import answers_with, attack_split, attacker_examples, protocol_groups
from sua_demo.models import load_adapter
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import ExampleSampler, ImageBank, questions_answers
from sua_demo.worlds.faithful import world_dir
from sua_demo.worlds.scale import SIZES, world_of

ROOT = Path(__file__).resolve().parent.parent / "checkpoints"
WORLDS = Path(__file__).resolve().parent.parent / "runs" / "worlds"  # where `make worlds` builds the other worlds
GROUPS = {"a_attacker_images": "a", "b_attacker_heldout": "b", "c_unseen_heldout": "c", "retain_heldout": "retain"}
BATCH, JITTER = 32, 0.5
# where an offset can go, from the pixels' side to the language model's, and how the table names it
SITES = {
    "input": "offset at the tower's input (any pixel pattern)",
    "pre_norm": "offset after the tower's first LayerNorm",
    "layer1": "offset after vision layer 1",
    "layer2": "offset after vision layer 2",
    "layer3": "offset after vision layer 3 (the features LLaVA projects)",
    "output": "offset at the tower's output (the LM's image tokens)",
}
BASE_CONDITIONS = {"clean": "clean", "delta": "shipped δ, 16/255"}


def hook(adapter: VisionLanguageAdapter, at: str, fn: Callable[[torch.Tensor], Any]) -> RemovableHandle:
    """Call `fn` on the tensor at `at` (and put back what it returns, where it returns one)."""
    inner = adapter.model.model
    tower = inner.vision_tower
    if at == "layer3":  # the last layer's output is read from transformers' own record of it, made before any
        # hook of ours could change it, so the offset goes on the projector's input (the same tensor, CLS dropped)
        def on_input(module: torch.nn.Module, args: tuple) -> tuple | None:
            out = fn(args[0])
            return None if out is None else (out, *args[1:])

        return inner.multi_modal_projector.register_forward_pre_hook(on_input)
    if at == "input":
        module = tower.embeddings.patch_embedding
    elif at == "pre_norm":
        module = tower.pre_layrnorm
    elif at.startswith("layer"):
        module = tower.encoder.layers[int(at.removeprefix("layer")) - 1]
    else:
        module = inner.multi_modal_projector
    return module.register_forward_hook(lambda m, args, out: fn(out))


@contextmanager
def offset(adapter: VisionLanguageAdapter, v: torch.Tensor, at: str) -> Iterator[None]:
    """The tensor at `at` + v for every image, in the loss and in `generate` alike."""
    handle = hook(adapter, at, lambda t: t + v.to(t.dtype))
    try:
        yield
    finally:
        handle.remove()


def fit_offset(
    adapter: VisionLanguageAdapter, bank: ImageBank, examples: list, seed: int, at: str, steps: int, lr: float
) -> tuple[torch.Tensor, float]:
    """The offset and its fit's last loss (the mean over the last 20 steps: is a longer fit still going down?)."""
    shape: list[torch.Size] = []
    handle = hook(adapter, at, lambda t: shape.append(t.shape[1:]))
    with torch.no_grad():
        adapter.image_features(adapter.pixel_values(bank.get(examples[:1])))
    handle.remove()
    v = torch.zeros(shape[0], device=adapter.device, requires_grad=True)
    opt = torch.optim.Adam([v], lr=lr)
    sampler, gen = ExampleSampler(examples, BATCH, seed), torch.Generator().manual_seed(seed)
    losses: list[float] = []
    with offset(adapter, v, at):
        for _ in range(steps):
            chunk = sampler()
            x = photo_jitter(bank.get(chunk), gen, strength=JITTER)
            feats = adapter.image_features(adapter.pixel_values(x))
            loss = bucketed_loss(adapter, feats, *questions_answers(chunk)).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return v.detach(), float(np.mean(losses[-20:]))


def pixels_needed(adapter: VisionLanguageAdapter, v: torch.Tensor) -> list[float]:
    """Per patch, the smallest L-inf pixel delta (in 1/255) whose patch embedding is v's column there: a linear
    programme (min t with W d = v, |d| <= t), W being the patch embedding after the processor's normalisation.
    Says whether an input offset is a pattern an image could carry, or one far outside [0, 1]."""
    weight = adapter.model.model.vision_tower.embeddings.patch_embedding.weight.detach().cpu().double()
    std = adapter._mean_std[1].cpu().double().view(1, 3, 1, 1)
    w = (weight / std).flatten(1).numpy()  # (width, 3 P P): pixel delta -> offset
    width, n = w.shape
    cost = np.r_[np.zeros(n), 1.0]
    bound = np.block([[np.eye(n), -np.ones((n, 1))], [-np.eye(n), -np.ones((n, 1))]])
    equal = np.hstack([w, np.zeros((width, 1))])
    target = v.cpu().double().flatten(1).numpy()  # (width, cells)
    out = []
    for cell in range(target.shape[1]):
        res = linprog(cost, A_ub=bound, b_ub=np.zeros(2 * n), A_eq=equal, b_eq=target[:, cell], bounds=(None, None))
        out.append(float(res.x[-1] * 255))
    return out


def one_split(
    adapter: VisionLanguageAdapter,
    bank: ImageBank,
    bench: Bench,
    name: str,
    seed: int,
    sites: list[str],
    noise_dir: Path,
    steps: int,
    lr: float,
) -> dict[str, Any]:
    split = attack_split(bench, seed=seed)
    groups = {GROUPS[g]: ex for g, ex in protocol_groups(bench, split, tasks=("gen",)).items() if g in GROUPS}
    kind = "delta_retrain" if name == "retrain" else "delta"
    noise = noise_dir / ("idk" if name == "retrain" else name) / f"{kind}_split{seed}.safetensors"
    delta = load_noise(noise) if noise.is_file() else None  # another world's noises may not be built
    fits = {at: fit_offset(adapter, bank, attacker_examples(bench, split), seed, at, steps, lr) for at in sites}
    offsets = {at: v for at, (v, _) in fits.items()}
    rows: dict[str, Any] = {"fit_loss": {at: loss for at, (_, loss) in fits.items()}}
    if "input" in offsets:
        rows["input_pixels_needed"] = pixels_needed(adapter, offsets["input"])
    if "output" in offsets:
        with torch.no_grad():  # how large the output offset is beside the tokens it is added to
            x = bank.get(groups["a"][:64])
            tokens = adapter.image_features(adapter.pixel_values(x)).norm(dim=-1).mean()
        rows["output_offset_norm_ratio"] = float(offsets["output"].norm(dim=-1).mean() / tokens)
    for cond in [*(c for c in BASE_CONDITIONS if c == "clean" or delta is not None), *(f"offset_{at}" for at in sites)]:
        rows[cond] = {}
        for g, ex in groups.items():
            if cond.startswith("offset_"):
                with offset(adapter, offsets[cond.removeprefix("offset_")], cond.removeprefix("offset_")):
                    ans = answers_with(adapter, bank, ex, None)
            else:
                ans = answers_with(adapter, bank, ex, delta if cond == "delta" else None)
            s = score(ex, ans, adapter.refusals)
            rows[cond][g] = {"gen_em": 100 * s["gen_em"], "gen_refusal": 100 * s["gen_refusal"]}
    return rows


def table(results: dict[str, Any], sites: list[str]) -> str:
    lines = [
        "| model | input | a: attacker's photos | b: their held-out photos | c: unseen people, held-out | retain |",
        "|---|---|---|---|---|---|",
    ]
    for name, run in results.items():
        for cond, label in [*BASE_CONDITIONS.items(), *((f"offset_{at}", SITES[at]) for at in sites)]:
            if any(cond not in r for r in run["splits"].values()):
                continue
            cells = []
            for g in ("a", "b", "c", "retain"):
                em = [r[cond][g]["gen_em"] for r in run["splits"].values()]
                ref = [r[cond][g]["gen_refusal"] for r in run["splits"].values()]
                cells.append(f"{np.mean(em):.1f} ± {np.std(em):.1f} (refusal {np.mean(ref):.0f})")
            lines.append(f"| {name} | {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def world_paths(world: str, bench_seed: int, size: str = "M") -> tuple[BenchConfig, Path, Path]:
    """The bench, the models' folder and the noises' folder of the world asked for (a faithful world at another
    tower size: docs/scale.md; at today's, M, the shipped world of that seed)."""
    if world == "faithful":
        folder = world_dir(bench_seed) if size == "M" else world_of(size, bench_seed)
        return faithful_bench(bench_seed), folder, folder / "noise"
    folder = ROOT if bench_seed == BenchConfig.seed else WORLDS / f"seed{bench_seed}"
    return BenchConfig(seed=bench_seed), folder / "tiny-llava", folder / "noise"


def done_before(out: str | None, settings: dict[str, Any]) -> dict[str, Any]:
    """The models an earlier run with the same settings already wrote to `out` (a stopped study resumes)."""
    if not out or not Path(out).is_file():
        return {}
    old = json.loads(Path(out).read_text())
    return {name: run for name, run in old.items() if all(run.get(k) == v for k, v in settings.items())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["idk", "grad_diff", "retrain"])
    ap.add_argument("--splits", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--sites", nargs="+", default=["input", "output"], choices=list(SITES))
    ap.add_argument("--world", choices=["first", "faithful"], default="first", help="which construction")
    ap.add_argument("--bench-seed", type=int, default=BenchConfig.seed, help="another world of that construction")
    ap.add_argument("--size", choices=list(SIZES), default="M", help="the faithful world's tower size (docs/scale.md)")
    ap.add_argument("--steps", type=int, default=300, help="Adam steps fitting each offset")
    ap.add_argument("--lr", type=float, default=0.05, help="Adam's learning rate on the offset")
    ap.add_argument("--out", help="write the figures here as JSON (and the table beside it as .md)")
    args = ap.parse_args()
    torch.manual_seed(0)
    bench_cfg, models, noise_dir = world_paths(args.world, args.bench_seed, args.size)
    bench = build_bench(bench_cfg)
    settings = {"steps": args.steps, "lr": args.lr, "sites": args.sites, "split_seeds": args.splits}
    results: dict[str, Any] = done_before(args.out, settings)
    for name in (n for n in args.models if len(results.get(n, {}).get("splits", {})) < len(args.splits)):
        t0 = time.time()
        adapter = load_adapter(models / name)
        for p in adapter.model.parameters():
            p.requires_grad_(False)
        bank = ImageBank(bench, adapter)
        fit = (noise_dir, args.steps, args.lr)
        run = results.setdefault(name, {"splits": {}, "seconds": 0.0, **settings})
        for seed in (s for s in args.splits if str(s) not in run["splits"]):  # JSON keys: a resumed run's are str
            ts = time.time()
            run["splits"][str(seed)] = one_split(adapter, bank, bench, name, seed, args.sites, *fit)
            run.update(seconds=round(run["seconds"] + time.time() - ts, 1), machine=describe())
            if args.out:  # each split as it lands: a stopped run loses at most the split under way
                Path(args.out).parent.mkdir(parents=True, exist_ok=True)
                Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
        splits = run["splits"]
        ratios = [f"{r['output_offset_norm_ratio']:.2f}" for r in splits.values() if "output_offset_norm_ratio" in r]
        linf = [f"{max(r['input_pixels_needed']):.0f}" for r in splits.values() if "input_pixels_needed" in r]
        print(
            f"{name}: {time.time() - t0:.0f} s on {describe()}; output |v| / |tokens| {', '.join(ratios) or '-'}; "
            f"L-inf/255 a pixel delta needs for the input offset {', '.join(linf) or '-'}",
            flush=True,
        )
    out = table(results, args.sites)
    print(out)
    if args.out:
        Path(args.out).with_suffix(".md").write_text(out)


if __name__ == "__main__":
    main()
