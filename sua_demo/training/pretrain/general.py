"""The faithful world's general stage: a LLaVA whose vision tower is the pretrained one, frozen, and whose
projector and language model learn to read it on the pretraining population: a description of the photo
(LLaVA's captioning stage) or one visible attribute (its visual questions). No names and no facts: those come from
the same pools as a bench's, and are the bench's to teach. Resumes from its last checkpoint.

The model it makes is every faithful world's starting point: its tower and projector are never trained again, and
its vocabulary covers every word any bench seed can use, so one general model serves every world."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from sua_demo.core.config import GeneralConfig, TowerConfig, faithful_bench, faithful_model
from sua_demo.core.machine import describe
from sua_demo.core.precision import resolve
from sua_demo.core.resume import Checkpointed
from sua_demo.dataset.faces import ATTRIBUTES
from sua_demo.dataset.profiles import FACT_POOLS, FIRST_NAMES, LAST_NAMES, LOOK_QUESTIONS
from sua_demo.dataset.synthetic import build_bench
from sua_demo.models.llava import LlavaAdapter
from sua_demo.models.loading import build_device
from sua_demo.models.tiny_llava import bench_corpus, build_model, build_processor, build_tokenizer
from sua_demo.training.pretrain.population import Population, build_population, caption, caption_vocabulary

log = logging.getLogger(__name__)

DESCRIBE = "Describe this person."


def vocabulary_corpus() -> list[str]:
    """Every word a faithful world can read or write: one bench's text (its templates) and every value its pools,
    names, attributes and captions can take, so the vocabulary is the same whatever the bench's seed."""
    words = [*FIRST_NAMES, *LAST_NAMES, *caption_vocabulary(), *(v for vs in ATTRIBUTES.values() for v in vs)]
    words += [v for pool in FACT_POOLS.values() for v in pool]
    return [*bench_corpus(build_bench(faithful_bench(0))), DESCRIBE, " ".join(words).replace("_", " ")]


def general_model(tower: torch.nn.Module, tower_cfg: TowerConfig) -> LlavaAdapter:
    """A fresh faithful LLaVA carrying `tower`'s weights (of `tower_cfg`'s size), the tower frozen."""
    cfg = faithful_model(tower_cfg)
    tokenizer = build_tokenizer(vocabulary_corpus(), punctuation_runs=True)
    adapter = LlavaAdapter(build_model(cfg, tokenizer), build_processor(tokenizer, cfg),
                           source="tiny-llava faithful (general stage)")  # fmt: skip
    adapter.vision_tower.load_state_dict(tower.state_dict())
    adapter.vision_tower.requires_grad_(False)
    return adapter


def questions(population: Population, picks: list[int], rng: np.random.Generator, cfg: GeneralConfig):
    """(questions, answers) for these photos: a description, or one visible attribute's question."""
    qs, answers = [], []
    for i in picks:
        attrs = population.attributes[i]
        if rng.random() < cfg.describe_fraction:
            qs.append(DESCRIBE)
            answers.append(caption(attrs).replace("_", " "))
        else:
            name = list(LOOK_QUESTIONS)[int(rng.integers(len(LOOK_QUESTIONS)))]
            qs.append(LOOK_QUESTIONS[name])
            answers.append(attrs[name].replace("_", " "))
    return qs, answers


def lr_at(step: int, cfg: GeneralConfig) -> float:
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    return cfg.lr * 0.5 * (1 + math.cos(math.pi * (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps)))


def general_stage(
    tower: torch.nn.Module, tower_cfg: TowerConfig, cfg: GeneralConfig, state_path: str | Path, progress: bool = True
) -> tuple[LlavaAdapter, dict]:
    """Train (or finish training) the projector and language model over the frozen tower."""
    log.info("general stage on %s", describe())
    population = build_population(tower_cfg)
    device = build_device()
    adapter = general_model(tower, tower_cfg)
    model = adapter.model.to(device)  # batches move to it in the adapter's own calls
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=0.0)
    rng = np.random.default_rng(cfg.seed)
    run = Checkpointed(state_path)
    step, losses = 0, []
    if run.resumed:
        model.load_state_dict(run.resumed["model"])
        optimizer.load_state_dict(run.resumed["optimizer"])
        rng.bit_generator.state = run.resumed["rng"]
        step, losses = run.resumed["step"], run.resumed["losses"]
    precision = resolve(cfg.precision, device)
    model.train()
    bar = tqdm(total=cfg.steps, initial=step, desc="general stage", disable=not progress)
    while step < cfg.steps:
        picks = [int(i) for i in rng.choice(len(population.photos), size=cfg.batch_size, replace=False)]
        qs, answers = questions(population, picks, rng, cfg)
        x = adapter.prepare_images([population.photos[i] for i in picks])
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, cfg)
        with precision.autocast(device):
            loss = adapter.answer_nll(x, qs, answers).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        step += 1
        losses.append(float(loss.detach()))
        bar.update()
        bar.set_postfix(loss=f"{losses[-1]:.3f}")
        if step % cfg.checkpoint_every == 0 or step == cfg.steps:
            state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "rng": rng.bit_generator.state}
            run.save(step=step, losses=losses, **state)
    bar.close()
    model.eval()
    summary = {"steps": step, "last_loss": float(np.mean(losses[-20:])), "seconds": round(run.seconds, 1)}
    log.info("general stage: %d steps, loss %.3f, %.0f s over all runs", step, summary["last_loss"], summary["seconds"])
    return adapter, summary
