"""Pretrain the faithful world's vision tower: CLIP's contrastive objective (`transformers.CLIPModel`, its own
loss) on photos of the pretraining population and captions of what is visible in them. Only the vision half is
kept; the caption tower is thrown away, as LLaVA throws away CLIP's. Resumes from its last checkpoint."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from sua_demo.core.config import TowerConfig
from sua_demo.core.machine import describe
from sua_demo.core.precision import resolve
from sua_demo.core.resume import Checkpointed
from sua_demo.models.loading import build_device
from sua_demo.models.tiny_llava import clip_model
from sua_demo.training.pretrain.population import Population, build_population, caption, caption_vocabulary

log = logging.getLogger(__name__)

# Caption token ids: 0 pad, 1 start, 2 unused, 3 end, words from 4. CLIP's text tower pools at the first end
# token when its id is not 2 (transformers keeps an older rule, the largest id, for end-of-text id 2).
PAD, BOS, EOS, FIRST_WORD = 0, 1, 3, 4
MEAN, STD = (0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711)  # CLIP's normalisation


def caption_ids(population: Population) -> torch.Tensor:
    """(N, L) token ids of every photo's caption (all captions have the same number of words)."""
    index = {w: i + FIRST_WORD for i, w in enumerate(caption_vocabulary())}
    rows = [[BOS, *(index[w] for w in caption(a).split()), EOS] for a in population.attributes]
    return torch.tensor(rows, dtype=torch.long)


def pixels(population: Population) -> torch.Tensor:
    """(N, 3, S, S) uint8: the photos, kept small; normalised per batch."""
    return torch.from_numpy(np.stack([np.asarray(p) for p in population.photos])).permute(0, 3, 1, 2).contiguous()


def normalise(x: torch.Tensor) -> torch.Tensor:
    mean = torch.tensor(MEAN).view(1, 3, 1, 1)
    std = torch.tensor(STD).view(1, 3, 1, 1)
    return (x.float() / 255 - mean) / std


def build_clip(cfg: TowerConfig) -> torch.nn.Module:
    """The CLIP to pretrain (models/tiny_llava.py knows its classes), with this module's caption vocabulary."""
    return clip_model(cfg, FIRST_WORD + len(caption_vocabulary()), PAD, BOS, EOS)


def lr_at(step: int, cfg: TowerConfig) -> float:
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    return cfg.lr * 0.5 * (1 + math.cos(math.pi * (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps)))


def pretrain_tower(cfg: TowerConfig, state_path: str | Path, progress: bool = True) -> tuple[torch.nn.Module, dict]:
    """Train (or finish training) the tower; returns its vision half and a summary (steps, loss, seconds, CPU)."""
    log.info("tower pretraining on %s (%s)", describe(), build_device())
    population = build_population(cfg)
    x_all, ids_all = pixels(population), caption_ids(population)
    device = build_device()
    model = build_clip(cfg).to(device)  # the photos stay on the CPU; each batch moves
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    gen = torch.Generator().manual_seed(cfg.seed)
    run = Checkpointed(state_path)
    step, losses = 0, []
    if run.resumed:
        model.load_state_dict(run.resumed["model"])
        optimizer.load_state_dict(run.resumed["optimizer"])
        gen.set_state(run.resumed["generator"])
        step, losses = run.resumed["step"], run.resumed["losses"]
    precision = resolve(cfg.precision, device)
    model.train()
    bar = tqdm(total=cfg.steps, initial=step, desc="pretrain tower (CLIP)", disable=not progress)
    while step < cfg.steps:
        pick = torch.randperm(len(ids_all), generator=gen)[: cfg.batch_size]
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, cfg)
        with precision.autocast(device):
            ids, x = ids_all[pick].to(device), normalise(x_all[pick]).to(device)
            loss = model(input_ids=ids, pixel_values=x, return_loss=True).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        step += 1
        losses.append(float(loss.detach()))
        bar.update()
        bar.set_postfix(loss=f"{losses[-1]:.3f}")
        if step % cfg.checkpoint_every == 0 or step == cfg.steps:
            state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "generator": gen.get_state()}
            run.save(step=step, losses=losses, **state)
    bar.close()
    summary = {"steps": step, "last_loss": float(np.mean(losses[-20:])), "seconds": round(run.seconds, 1)}
    log.info("tower: %d steps, loss %.3f, %.0f s over all runs", step, summary["last_loss"], summary["seconds"])
    return model.vision_model.eval(), summary
