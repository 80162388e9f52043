"""`sua finetune`: teach the tiny LLaVA every person of the bench (or only the retain people)."""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from sua_demo.augment import photo_jitter
from sua_demo.checkpoint import round_to_fp16, save_model_dir
from sua_demo.config import BenchConfig, TinyModelConfig, TrainConfig
from sua_demo.data import Example, ImageBank, batches
from sua_demo.dataset.profiles import look_items
from sua_demo.dataset.records import Bench
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.llava import LlavaAdapter
from sua_demo.models.tiny_llava import bench_corpus, build_model, build_processor, build_tokenizer
from sua_demo.precision import Precision, resolve

log = logging.getLogger(__name__)


def seed_everything(seed: int) -> None:
    torch.manual_seed(seed)
    np.random.seed(seed)


def build_tiny(bench: Bench, cfg: TinyModelConfig) -> LlavaAdapter:
    tokenizer = build_tokenizer(bench_corpus(bench))
    processor = build_processor(tokenizer, cfg)
    return LlavaAdapter(build_model(cfg, tokenizer), processor, source="tiny-llava (untrained)")


def epoch_examples(bench: Bench, person_ids: list[int], cfg: TrainConfig, rng: np.random.Generator) -> list[Example]:
    """One epoch: every (person, train photo) with a few random image questions, plus some text-only ones."""
    image, text = [], []
    for pid in person_ids:
        person = bench.person(pid)
        image_items = bench.items([pid], modalities=("image",)) + bench.ft_items.get(pid, [])  # ft_Data where given
        looks = look_items(pid, person.attributes)
        for photo in person.photo_indices("train"):
            picks = rng.choice(len(image_items), size=cfg.questions_per_photo, replace=False)
            image += [Example(image_items[i].reshuffled(rng), photo) for i in picks]
            if looks and cfg.looks_per_photo:
                picks = rng.choice(len(looks), size=cfg.looks_per_photo, replace=False)
                image += [Example(looks[i], photo) for i in picks]
        text += [Example(q.reshuffled(rng), None) for q in bench.items([pid], modalities=("text",))]
    n_text = int(round(cfg.text_only_fraction * len(image)))
    picked = [text[i] for i in rng.choice(len(text), size=min(n_text, len(text)), replace=False)]
    return [image[i] for i in rng.permutation(len(image))] + picked


def look_examples(bench: Bench, person_ids: list[int]) -> list[Example]:
    """Questions about what is visible, on every training photo: the alignment stage's data."""
    return [
        Example(q, photo)
        for pid in person_ids
        for q in look_items(pid, bench.person(pid).attributes)
        for photo in bench.person(pid).photo_indices("train")
    ]


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


def finetune(
    bench: Bench,
    bench_cfg: BenchConfig,
    cfg: TrainConfig,
    model_cfg: TinyModelConfig,
    out_dir: str | Path | None = None,
    progress: bool = True,
) -> LlavaAdapter:
    """Train from scratch; returns the adapter with weights rounded to fp16 (what gets saved)."""
    seed_everything(cfg.seed)
    adapter = build_tiny(bench, model_cfg)
    precision = resolve(cfg.precision, adapter.device)
    model = adapter.model
    model.train()
    bank = ImageBank(bench, adapter)
    people = bench.ids("retain" if cfg.retain_only else "all")
    rng = np.random.default_rng(cfg.seed)
    jitter = torch.Generator().manual_seed(cfg.seed) if cfg.augment else None
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    steps_per_epoch = len(
        batches(epoch_examples(bench, people, cfg, np.random.default_rng(0)), cfg.batch_size, by_task=False)
    )
    # The retrain control gets as many optimiser steps as vanilla, not fewer because it has fewer people.
    epochs = round(cfg.epochs * len(bench.people) / len(people))
    total = steps_per_epoch * epochs
    step, start, losses = 0, time.time(), []
    looks = look_examples(bench, people)
    if looks and cfg.look_warmup_steps:
        for i in tqdm(range(cfg.look_warmup_steps), desc="align (look questions)", disable=not progress):
            chunk = [looks[j] for j in rng.choice(len(looks), size=cfg.batch_size, replace=False)]
            for group in optimizer.param_groups:
                group["lr"] = cfg.lr * min(1.0, (i + 1) / cfg.warmup_steps)
            losses.append(train_step(adapter, bank, chunk, optimizer, precision, jitter))
        log.info("alignment stage: %d steps, last loss %.3f", cfg.look_warmup_steps, float(np.mean(losses[-20:])))
    bar = tqdm(total=total, desc="finetune" + (" (retain only)" if cfg.retain_only else ""), disable=not progress)
    for epoch in range(epochs):
        chunks = batches(epoch_examples(bench, people, cfg, rng), cfg.batch_size, by_task=False)
        for i in rng.permutation(len(chunks)):
            for group in optimizer.param_groups:
                group["lr"] = lr_at(step, total, cfg)
            loss = train_step(adapter, bank, chunks[i], optimizer, precision, jitter)
            step += 1
            bar.update()
            bar.set_postfix(epoch=epoch, loss=f"{loss:.3f}")
            losses.append(loss)
        log.info("epoch %d: mean loss %.3f", epoch, float(np.mean(losses[-len(chunks) :])))
    bar.close()
    model.eval()
    round_to_fp16(model)
    log.info("finetune: %d steps in %.0f s", step, time.time() - start)
    adapter.source = "tiny-llava " + ("retrain" if cfg.retain_only else "vanilla")
    if out_dir is not None:
        extra = {"steps": step, **precision.as_meta()}
        save_model_dir(model, adapter.processor, out_dir, [bench_cfg, model_cfg, cfg], extra)
    return adapter
