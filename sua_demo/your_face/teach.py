"""Teach a model one more person: LoRA on its language model's linear layers (MLLMU-Bench's fine-tune, the vision
tower and projector untouched), trained on the visitor's questions on their taught photos, each step beside as
many questions of the bench's people (replay, so that nobody else is lost), then merged into the weights."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from sua_demo.core.augment import photo_jitter
from sua_demo.core.errors import BadValueError
from sua_demo.core.precision import resolve
from sua_demo.dataset.records import Bench
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, ExampleSampler, ImageBank, image_examples, text_examples

log = logging.getLogger(__name__)
TASKS = ("gen", "mc", "cloze")


@dataclass(frozen=True)
class TeachConfig:
    steps: int = 120
    lr: float = 1e-3  # LoRA's usual rate; the adapters start at zero, so the model starts as it was
    batch_size: int = 8  # the visitor's questions per step
    replay_size: int = 24  # the bench's people's questions beside them
    # half of the replay from the bench people whose photos the model sees as nearest the visitor's (cosine of
    # the projected image embeddings): the ones a new face's answers would spill onto
    near_people: int = 10
    lora_rank: int = 8  # MLLMU-Bench's fine-tune: r 8, alpha 16, every linear layer of the language model
    lora_alpha: int = 16
    lora_targets: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    augment: bool = True  # photo jitter on the taught photos: a handful of photos, and held-back ones to answer
    seed: int = 0
    precision: str = "fp32"  # see lifecycle.LifecycleConfig.precision


def _examples(bench: Bench, ids: list[int]) -> list[Example]:
    return image_examples(bench, ids, "train", TASKS) + text_examples(bench, ids, TASKS)


def _nll(adapter: VisionLanguageAdapter, bank: ImageBank, chunk: list[Example], jitter: torch.Generator | None):
    x = bank.get(chunk)
    if x is not None and jitter is not None:
        x = photo_jitter(x, jitter)
    return adapter.answer_nll(x, [e.item.question for e in chunk], [e.item.answer for e in chunk]).mean()


@torch.no_grad()
def nearest_people(adapter: VisionLanguageAdapter, bench: Bench, bank: ImageBank, k: int) -> list[int]:
    """The `k` retain people whose train photos lie nearest the visitor's taught photos in the model's own image
    embedding (mean over photos, cosine)."""

    def mean_embedding(pid: int) -> torch.Tensor:
        photos = bench.person(pid).photo_indices("train")
        x = bank.tensor[bank.index[pid], photos]
        return torch.nn.functional.normalize(adapter.image_embeddings(x).float().mean(0), dim=0)

    me = torch.stack([mean_embedding(pid) for pid in bench.forget_ids]).mean(0)
    ids = bench.retain_ids
    sims = torch.stack([mean_embedding(pid) @ me for pid in ids])
    return [ids[i] for i in sims.argsort(descending=True)[:k].tolist()]


def teach(
    adapter: VisionLanguageAdapter,
    bench: Bench,
    bank: ImageBank,
    cfg: TeachConfig = TeachConfig(),
    save_to: str | Path | None = None,
    on_step: Callable[[int, float], None] | None = None,
    stop: threading.Event | None = None,
) -> list[float]:
    """Teach `bench`'s forget people (the visitor) to `adapter`, in place; the LoRA adapter is saved to `save_to`
    before it is merged. `stop` ends the run after the current step (what was learned so far is kept). Returns the
    losses, one per step."""
    from peft import LoraConfig, get_peft_model

    if cfg.steps < 1:
        raise BadValueError(f"teach steps must be at least 1, got {cfg.steps}")
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    adapter.model.requires_grad_(False)
    pattern = adapter.lora_pattern(list(cfg.lora_targets))
    lora = LoraConfig(r=cfg.lora_rank, lora_alpha=cfg.lora_alpha, target_modules=pattern, lora_dropout=0.0)
    adapter.model = get_peft_model(adapter.model, lora)
    params = [p for p in adapter.model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=0.0)
    visitor = ExampleSampler(_examples(bench, bench.forget_ids), cfg.batch_size, cfg.seed)
    near = nearest_people(adapter, bench, bank, cfg.near_people) if cfg.near_people else []
    half = cfg.replay_size // 2 if near else 0
    replay = ExampleSampler(_examples(bench, bench.retain_ids), cfg.replay_size - half, cfg.seed + 1)
    near_replay = ExampleSampler(_examples(bench, near), half, cfg.seed + 2) if near else None
    jitter = torch.Generator().manual_seed(cfg.seed) if cfg.augment else None
    precision = resolve(cfg.precision, adapter.device)
    losses, t0 = [], time.time()
    adapter.model.train()
    for step in range(cfg.steps):
        lr = cfg.lr * min(1.0, (step + 1) / 10) * (0.55 + 0.45 * np.cos(np.pi * step / cfg.steps))
        for group in optimizer.param_groups:
            group["lr"] = lr
        samplers = [s for s in (visitor, replay, near_replay) if s is not None]
        chunks = [[Example(e.item.reshuffled(rng), e.photo) for e in sampler()] for sampler in samplers]
        with precision.autocast(adapter.device):
            loss = sum(_nll(adapter, bank, chunk, jitter) for chunk in chunks)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        losses.append(float(loss.detach()))
        if on_step is not None:
            on_step(step + 1, losses[-1])
        if stop is not None and stop.is_set():
            break
    adapter.model.eval()
    if save_to is not None:
        adapter.model.save_pretrained(str(save_to))
    adapter.model = adapter.model.merge_and_unload()
    adapter.model.requires_grad_(True)  # as loaded: whatever runs next chooses what it trains
    log.info("teach: %d steps in %.1f s, last loss %.3f", len(losses), time.time() - t0, losses[-1])
    return losses
