"""`sua finetune`: teach the tiny LLaVA every person of the bench (or only the retain people)."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from sua_demo.core.augment import photo_jitter
from sua_demo.core.checkpoint import round_to_fp16, save_model_dir
from sua_demo.core.config import CHECKPOINTS, BenchConfig, TinyModelConfig, TrainConfig
from sua_demo.core.errors import BadValueError
from sua_demo.core.machine import cpu_model
from sua_demo.core.precision import Precision, resolve
from sua_demo.core.resume import Checkpointed
from sua_demo.dataset.profiles import look_items
from sua_demo.dataset.records import Bench, QAItem
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, ImageBank, batches
from sua_demo.models.llava import LlavaAdapter
from sua_demo.models.loading import build_device, load_adapter
from sua_demo.models.tiny_llava import bench_corpus, build_model, build_processor, build_tokenizer

log = logging.getLogger(__name__)


def seed_everything(seed: int) -> None:
    torch.manual_seed(seed)
    np.random.seed(seed)


def build_tiny(bench: Bench, cfg: TinyModelConfig) -> LlavaAdapter:
    tokenizer = build_tokenizer(bench_corpus(bench))
    processor = build_processor(tokenizer, cfg)
    return LlavaAdapter(build_model(cfg, tokenizer), processor, source="tiny-llava (untrained)")


def starting_model(bench: Bench, cfg: TrainConfig, model_cfg: TinyModelConfig) -> VisionLanguageAdapter:
    """A fresh tiny model, or the folder `cfg.start_from` (the faithful world's general model), with its vision
    side frozen where `cfg.train_parts` says so."""
    if cfg.train_parts not in ("all", "language_model"):
        raise BadValueError(f"train_parts must be 'all' or 'language_model', not {cfg.train_parts!r}")
    start = Path(cfg.start_from)
    start = start if start.is_absolute() else CHECKPOINTS.parent / start  # saved configs name it from the checkout
    adapter = load_adapter(start) if cfg.start_from else build_tiny(bench, model_cfg)
    adapter.model.to(build_device())  # where $SUA_DEVICE says (load_adapter has moved a loaded one already)
    if cfg.train_parts == "language_model":
        adapter.freeze_vision_side()
    return adapter


def photo_looks(bench: Bench, pid: int, photo: int) -> list[QAItem]:
    """Questions about what is visible in this photo (its own background, expression and hat where they vary)."""
    person = bench.person(pid)
    return look_items(pid, person.photo_attributes[photo] if person.photo_attributes else person.attributes)


def epoch_examples(bench: Bench, person_ids: list[int], cfg: TrainConfig, rng: np.random.Generator) -> list[Example]:
    """One epoch: every (person, train photo) with a few random image questions, plus some text-only ones."""
    image, text = [], []
    for pid in person_ids:
        person = bench.person(pid)
        image_items = bench.items([pid], modalities=("image",)) + bench.ft_items.get(pid, [])  # ft_Data where given
        for photo in person.photo_indices("train"):
            picks = rng.choice(len(image_items), size=cfg.questions_per_photo, replace=False)
            image += [Example(image_items[i].reshuffled(rng), photo) for i in picks]
            looks = photo_looks(bench, pid, photo)
            if looks and cfg.looks_per_photo:
                picks = rng.choice(len(looks), size=cfg.looks_per_photo, replace=False)
                image += [Example(looks[i], photo) for i in picks]
        text += [Example(q.reshuffled(rng), None) for q in bench.items([pid], modalities=("text",))]
    n_text = int(round(cfg.text_only_fraction * len(image)))
    picked = [text[i] for i in rng.choice(len(text), size=min(n_text, len(text)), replace=False)]
    return [image[i] for i in rng.permutation(len(image))] + picked


def look_examples(bench: Bench, person_ids: list[int]) -> list[Example]:
    """Questions about what is visible, on every training photo: the alignment stage's data."""
    out = []
    for pid in person_ids:
        photos = bench.person(pid).photo_indices("train")
        per_photo = [photo_looks(bench, pid, photo) for photo in photos]
        for k in range(len(per_photo[0])):  # question by question, each on every photo (the shipped order)
            out += [Example(looks[k], photo) for looks, photo in zip(per_photo, photos, strict=True)]
    return out


def lr_at(step: int, total: int, cfg: TrainConfig) -> float:
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    progress = (step - cfg.warmup_steps) / max(1, total - cfg.warmup_steps)
    return cfg.lr * 0.5 * (1 + math.cos(math.pi * progress))


def train_step(
    adapter: VisionLanguageAdapter,
    bank: ImageBank,
    chunk: list[Example],
    optimizer: torch.optim.Optimizer,
    precision: Precision,
    jitter: torch.Generator | None = None,
) -> float:
    x = bank.get(chunk)
    if x is not None and jitter is not None:
        x = photo_jitter(x, jitter)
    with precision.autocast(adapter.device):
        loss = adapter.answer_nll(x, [e.item.question for e in chunk], [e.item.answer for e in chunk]).mean()
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(adapter.model.parameters(), 1.0)
    optimizer.step()
    return float(loss.detach())


def _align(adapter, bank, looks, cfg, optimizer, precision, rng, jitter, progress) -> list[float]:
    """The alignment stage: look questions only, the rate warming up."""
    losses = []
    for i in tqdm(range(cfg.look_warmup_steps), desc="align (look questions)", disable=not progress):
        chunk = [looks[j] for j in rng.choice(len(looks), size=cfg.batch_size, replace=False)]
        for group in optimizer.param_groups:
            group["lr"] = cfg.lr * min(1.0, (i + 1) / cfg.warmup_steps)
        losses.append(train_step(adapter, bank, chunk, optimizer, precision, jitter))
    log.info("alignment stage: %d steps, last loss %.3f", cfg.look_warmup_steps, float(np.mean(losses[-20:])))
    return losses


def finetune(
    bench: Bench,
    bench_cfg: BenchConfig,
    cfg: TrainConfig,
    model_cfg: TinyModelConfig,
    out_dir: str | Path | None = None,
    progress: bool = True,
) -> VisionLanguageAdapter:
    """Train (from scratch, or from `cfg.start_from`); returns the adapter with weights rounded to fp16 (what gets
    saved). With `out_dir`, the state after every epoch is kept beside it, so the same call resumes a stopped run
    from its last epoch (the same steps, as if it had never stopped)."""
    seed_everything(cfg.seed)
    adapter = starting_model(bench, cfg, model_cfg)
    precision = resolve(cfg.precision, adapter.device)
    model = adapter.model
    model.train()
    bank = ImageBank(bench, adapter)
    people = bench.ids("retain" if cfg.retain_only else "all")
    rng = np.random.default_rng(cfg.seed)
    jitter = torch.Generator().manual_seed(cfg.seed) if cfg.augment else None
    optimizer = torch.optim.AdamW(
        [p for p in model.parameters() if p.requires_grad], lr=cfg.lr, weight_decay=cfg.weight_decay
    )
    epochs, total = _schedule(bench, people, cfg)
    run = Checkpointed(_state_path(out_dir)) if out_dir is not None else None
    step, first_epoch, losses = 0, 0, []
    if run is not None and run.resumed:
        step, first_epoch, losses = _resume(run.resumed, model, optimizer, rng, jitter)
    looks = look_examples(bench, people)
    if looks and cfg.look_warmup_steps and first_epoch == 0:
        losses += _align(adapter, bank, looks, cfg, optimizer, precision, rng, jitter, progress)
    bar = tqdm(
        total=total, initial=step, desc="finetune" + (" (retain only)" if cfg.retain_only else ""), disable=not progress
    )
    for epoch in range(first_epoch, epochs):
        chunks = batches(epoch_examples(bench, people, cfg, rng), cfg.batch_size, by_task=False)
        for i in rng.permutation(len(chunks)):
            for group in optimizer.param_groups:
                group["lr"] = lr_at(step, total, cfg)
            losses.append(train_step(adapter, bank, chunks[i], optimizer, precision, jitter))
            step += 1
            bar.update()
            bar.set_postfix(epoch=epoch, loss=f"{losses[-1]:.3f}")
        log.info("epoch %d: mean loss %.3f", epoch, float(np.mean(losses[-len(chunks) :])))
        if run is not None:
            run.save(**_state(step, epoch + 1, losses, model, optimizer, rng, jitter))
    bar.close()
    model.eval()
    round_to_fp16(model)
    log.info("finetune: %d steps in %.0f s (%s)", step, run.seconds if run else 0.0, cpu_model())
    adapter.source = "tiny-llava " + ("retrain" if cfg.retain_only else "vanilla")
    if out_dir is not None:
        extra = {"steps": step, **precision.as_meta()}
        save_model_dir(model, adapter.processor, out_dir, [bench_cfg, model_cfg, cfg], extra)
        Path(_state_path(out_dir)).unlink(missing_ok=True)  # the model folder is the finished build
    return adapter


def _schedule(bench: Bench, people: list[int], cfg: TrainConfig) -> tuple[int, int]:
    """(epochs, total steps). The retrain control gets as many optimiser steps as vanilla, not fewer because it
    has fewer people."""
    steps_per_epoch = len(
        batches(epoch_examples(bench, people, cfg, np.random.default_rng(0)), cfg.batch_size, by_task=False)
    )
    epochs = round(cfg.epochs * len(bench.people) / len(people))
    return epochs, steps_per_epoch * epochs


def _state_path(out_dir: str | Path) -> Path:
    out = Path(out_dir)
    return out.with_name(f".{out.name}.train-state.safetensors")


def _state(step, epoch, losses, model, optimizer, rng, jitter) -> dict:
    return {
        "step": step,
        "epoch": epoch,
        "losses": losses,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "rng": rng.bit_generator.state,
        "jitter": jitter.get_state() if jitter is not None else None,
    }


def _resume(state, model, optimizer, rng, jitter) -> tuple[int, int, list[float]]:
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    rng.bit_generator.state = state["rng"]
    if jitter is not None:
        jitter.set_state(state["jitter"])
    log.info("finetune: resuming after epoch %d (step %d)", state["epoch"], state["step"])
    return state["step"], state["epoch"], list(state["losses"])
