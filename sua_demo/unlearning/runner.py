"""`sua unlearn`: run a method until its stopping rule holds (forget low enough, retain high enough).

The runner sits above eval, because its stopping rule is an evaluation; the methods it runs (`unlearning/`) sit
beside the attacks, below eval.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from sua_demo.core.augment import light_jitter, photo_jitter
from sua_demo.core.checkpoint import save_model_dir
from sua_demo.core.config import BenchConfig, UnlearnConfig
from sua_demo.core.errors import BadValueError
from sua_demo.core.precision import resolve
from sua_demo.dataset.records import Bench
from sua_demo.dataset.synthetic import with_validation_photos
from sua_demo.eval.evaluate import evaluate
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, ExampleSampler, ImageBank, image_examples, text_examples
from sua_demo.models.loading import load_adapter
from sua_demo.training.finetune import seed_everything
from sua_demo.unlearning.base import METHODS

log = logging.getLogger(__name__)


@dataclass
class UnlearnResult:
    adapter: VisionLanguageAdapter
    steps: int
    criterion_met: bool
    reference_retain: float
    history: list[dict[str, Any]] = field(default_factory=list)
    kept_step: int = 0  # the step whose weights were kept (the last, unless the rule was never met)


WATCHES = ("train", "validation", "validation_and_train")


def check_groups(bench: Bench, watch: str = "train") -> dict[str, list]:
    """A quick, fixed probe for the stopping rule. "train": forget on all train photos, retain on one photo each
    (it cannot see whether unlearning generalises); "validation": every person's validation photos, which
    nothing trains on and no figure reports (`with_validation_photos`); "validation_and_train": those, and forget
    on the train photos too, so the rule also asks that what unlearning trains on is forgotten."""
    if watch in ("validation", "validation_and_train"):
        groups = {
            "forget": image_examples(bench, bench.forget_ids, "validation", ("gen",)),
            "retain": image_examples(bench, bench.retain_ids, "validation", ("gen",)),
        }
        if watch == "validation_and_train":
            groups["forget_train"] = image_examples(bench, bench.forget_ids, "train", ("gen",))
        return groups
    return {
        "forget": image_examples(bench, bench.forget_ids, "train", ("gen",)),
        "retain": image_examples(bench, bench.retain_ids, "train", ("gen",), photos_per_person=1),
    }


def probe(
    adapter: VisionLanguageAdapter, bench: Bench, bank: ImageBank, groups: dict[str, list] | None = None
) -> dict[str, float]:
    """The stopping rule's figures on `groups` (default: `check_groups`, the bench's fixed probe): forget, its
    refusal and retain, and forget on the train photos where the groups hold them."""
    adapter.model.eval()
    r = evaluate(adapter, bench, bank, groups or check_groups(bench), progress=False)
    figures = {
        "forget_em": r["forget"]["gen_em"],
        "forget_refusal": r["forget"]["gen_refusal"],
        "retain_em": r["retain"]["gen_em"],
    }
    if "forget_train" in r:
        figures["forget_train_em"] = r["forget_train"]["gen_em"]
    return figures


def on_target(m: dict[str, float], cfg: UnlearnConfig) -> bool:
    """Forget at or below the target on every forget group the probe read."""
    return m["forget_em"] <= cfg.forget_target and m.get("forget_train_em", 0.0) <= cfg.forget_target


def criterion(m: dict[str, float], cfg: UnlearnConfig, retain_floor: float) -> bool:
    return on_target(m, cfg) and m["retain_em"] >= retain_floor and m["forget_refusal"] >= cfg.refusal_target


def _add_lora(adapter: VisionLanguageAdapter, cfg: UnlearnConfig) -> None:
    from peft import LoraConfig, get_peft_model

    pattern = adapter.lora_pattern(cfg.lora_targets)  # the family knows where its language model is
    lora = LoraConfig(r=cfg.lora_rank, lora_alpha=cfg.lora_alpha, target_modules=pattern, lora_dropout=0.0)
    adapter.model = get_peft_model(adapter.model, lora)


def _trainable(adapter: VisionLanguageAdapter, cfg: UnlearnConfig) -> list[torch.nn.Parameter]:
    """What unlearning changes: every weight, the language model only (the faithful world: tower and projector
    are never unlearned), or LoRA adapters on the language model."""
    if cfg.train_parts == "language_model":
        adapter.freeze_vision_side()
    if cfg.lora:
        _add_lora(adapter, cfg)
    return [p for p in adapter.model.parameters() if p.requires_grad]


def _check_counts(cfg: UnlearnConfig) -> None:
    """Refuse a count below 1 before any model loads: 0 steps would save the start as if unlearned, and an empty
    batch or a check every 0 steps would fail only after the models are loaded."""
    for name in ("max_steps", "batch_size", "eval_every"):
        if getattr(cfg, name) < 1:
            raise BadValueError(f"{name} must be at least 1, got {getattr(cfg, name)}")
    if cfg.watch not in WATCHES:
        raise BadValueError(f"watch must be one of {', '.join(WATCHES)}, not {cfg.watch!r}")


def _sampler(bench: Bench, ids: list[int], cfg: UnlearnConfig, offset: int) -> ExampleSampler:
    """Batches of these people's questions, with and without their photos (forget: offset 0, retain: 1)."""
    tasks = ("gen", "mc", "cloze")
    examples = image_examples(bench, ids, "train", tasks) + text_examples(bench, ids, tasks)
    return ExampleSampler(examples, cfg.batch_size, cfg.seed + offset)


def _keep_best(
    adapter: Any, cfg: UnlearnConfig, met: bool, best: tuple[float, int, dict[str, torch.Tensor]] | None, step: int
) -> int:
    """The step whose weights are kept. Past the target, GA-style losses keep eating retain: without the rule
    met, keep the check with forget on target and the most retain left, and say so in the saved config."""
    if met or best is None or not cfg.keep_best:
        return step
    adapter.model.load_state_dict(best[2])
    return best[1]


def unlearn(
    start: str | Path,
    bench: Bench,
    bench_cfg: BenchConfig,
    cfg: UnlearnConfig,
    out_dir: str | Path | None = None,
    progress: bool = True,
) -> UnlearnResult:
    """Unlearn the saved model `start` on the bench's forget people; with `out_dir`, saved there with its history."""
    method_cls = METHODS.get(cfg.method)
    _check_counts(cfg)
    if cfg.watch != "train":
        bench = with_validation_photos(bench, bench_cfg)
    adapter = load_adapter(start)
    reference = load_adapter(start) if method_cls.needs_reference else None
    bank = ImageBank(bench, adapter)
    result = unlearn_adapter(adapter, bench, bank, cfg, reference, check_groups(bench, cfg.watch), progress)
    extra = {
        "steps": result.steps,
        "kept_step": result.kept_step,
        "criterion_met": result.criterion_met,
        "start": str(start),
        **resolve(cfg.precision, adapter.device).as_meta(),
        "history": result.history,
    }
    if out_dir is not None:
        _save(adapter, start, out_dir, [bench_cfg, cfg], extra)
    return result


def _method(adapter: VisionLanguageAdapter, cfg: UnlearnConfig, reference: VisionLanguageAdapter | None) -> Any:
    """The unlearning method, with its frozen reference model where it needs one (a copy of the start)."""
    method_cls = METHODS.get(cfg.method)
    _check_counts(cfg)
    if method_cls.needs_reference and reference is None:
        reference = adapter.clone()
    if reference is not None:
        reference.model.requires_grad_(False)
    return method_cls(cfg, reference)


class JitteredReads:
    """A bank's photos as one unlearning step reads them: each jittered as a new photo of the person would be, with
    the step's own seed, so every read of the same batch in the step (a model's and its reference's) is the same."""

    def __init__(self, bank: ImageBank, seed: int, step: int, light: float = 0.0) -> None:
        self.bank, self.seed, self.light = bank, seed * 1_000_003 + step, light

    def get(self, examples: list[Example]) -> torch.Tensor | None:
        x = self.bank.get(examples)
        if x is None:
            return None
        generator = torch.Generator().manual_seed(self.seed)
        x = photo_jitter(x, generator)
        return light_jitter(x, generator, self.light) if self.light else x


def unlearn_adapter(
    adapter: VisionLanguageAdapter,
    bench: Bench,
    bank: ImageBank,
    cfg: UnlearnConfig,
    reference: VisionLanguageAdapter | None = None,
    groups: dict[str, list] | None = None,
    progress: bool = True,
    on_step: Callable[[int, dict[str, float] | None], None] | None = None,
) -> UnlearnResult:
    """The loop on a model in memory (changed in place): the bench's forget people unlearned against its retain
    people until the stopping rule holds on `groups` (default: the bench's fixed probe). A visitor's face is
    unlearned this way inside a session, with a small probe of its own, and nothing written to disk. `on_step`
    hears each step done, with the rule's probe figures on the steps that check it (a page's clock and what the
    rule reads; the rule may end the run before `max_steps`)."""
    seed_everything(cfg.seed)
    method = _method(adapter, cfg, reference)
    precision = resolve(cfg.precision, adapter.device)
    start_metrics = probe(adapter, bench, bank, groups)
    floor = cfg.retain_floor * start_metrics["retain_em"]
    log.info("unlearn %s: start %s, retain floor %.3f", cfg.method, start_metrics, floor)
    params = _trainable(adapter, cfg)
    optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=0.0)
    forget, retain = _sampler(bench, bench.forget_ids, cfg, 0), _sampler(bench, bench.retain_ids, cfg, 1)
    history = [{"step": 0, **start_metrics}]
    met, step, t0 = False, 0, time.time()
    best: tuple[float, int, dict[str, torch.Tensor]] | None = None  # (retain, step, weights) of the best check
    bar = tqdm(total=cfg.max_steps, desc=f"unlearn {cfg.method}", disable=not progress)
    while step < cfg.max_steps and not met:
        adapter.model.train()
        reads = JitteredReads(bank, cfg.seed, step, cfg.augment_light) if cfg.augment else bank
        with precision.autocast(adapter.device):
            loss = method.compute_loss(adapter, reads, forget(), retain())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        step += 1
        bar.update()
        checked = None
        if step % cfg.eval_every == 0:
            m = probe(adapter, bench, bank, groups)
            history.append({"step": step, "loss": float(loss.detach()), **m})
            bar.set_postfix(
                forget=f"{m['forget_em']:.2f}", retain=f"{m['retain_em']:.2f}", refusal=f"{m['forget_refusal']:.2f}"
            )
            met = criterion(m, cfg, floor)
            log.info("step %d: %s", step, {k: round(v, 3) for k, v in m.items()})
            if not met and on_target(m, cfg) and (best is None or m["retain_em"] > best[0]):
                best = (m["retain_em"], step, {k: v.detach().clone() for k, v in adapter.model.state_dict().items()})
            checked = m
        if on_step is not None:
            on_step(step, checked)
    bar.close()
    kept = _keep_best(adapter, cfg, met, best, step)
    adapter.model.eval()
    log.info("unlearn %s: %d steps, %.0f s, criterion met: %s", cfg.method, step, time.time() - t0, met)
    return UnlearnResult(adapter, step, met, start_metrics["retain_em"], history, kept)


def _relative_start(start: str | Path, out_dir: str | Path) -> str:
    """A local start folder named relative to the saved one, so the checkpoints folder can move as a whole
    and names no machine's paths; a Hub id stays as it is."""
    return os.path.relpath(Path(start).resolve(), Path(out_dir).resolve()) if Path(start).exists() else str(start)


def _save(adapter: VisionLanguageAdapter, start: str | Path, out_dir: str | Path, configs: list, extra: dict) -> None:
    model = adapter.model
    extra = {**extra, "start": _relative_start(start, out_dir)}
    if hasattr(model, "peft_config"):
        model.peft_config["default"].base_model_name_or_path = extra["start"]
        base = model.get_base_model()  # peft's model card names the base from these two
        base.config.name_or_path = base.name_or_path = extra["start"]
        save_model_dir(model, None, out_dir, configs, {**extra, "lora": True})
    else:
        save_model_dir(model, adapter.processor, out_dir, configs, extra)
