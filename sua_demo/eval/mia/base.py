"""Membership inference on answers: was this person in the model's training data?

Every attack scores one question from the same per-token statistics of its answer (`TokenStats`, computed once by
`token_stats`), higher meaning "more likely a member", so AUC, privleak and `sua mia` treat them alike. Members are
forget people (the model trained on them before unlearning), non-members the bench's holdout people, whom no model
ever trained on: unlike a text corpus, here the question "was this person in training?" has a true answer."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch
import torch.nn.functional as F

from sua_demo.core.registry import Registry
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, batches, questions_answers


@dataclass(frozen=True)
class TokenStats:
    """One answer under the model: each answer token's log-probability, and the mean and standard deviation of
    log p over the whole vocabulary at that position (what MinK++ normalises by), plus the answer's text."""

    logp: np.ndarray
    mu: np.ndarray
    sigma: np.ndarray
    text: str


class ImageSource(Protocol):
    """Where a batch's pictures come from: the bench's `ImageBank`, or a user's own items (own_data.py)."""

    def get(self, examples: list[Example]) -> torch.Tensor | None: ...


class MembershipAttack(ABC):
    """A score per answer; higher reads as "in the training data"."""

    name: str = ""

    @abstractmethod
    def score(self, stats: TokenStats) -> float: ...


MIAS: Registry[MembershipAttack] = Registry("membership attack")


def lowest(values: np.ndarray, k: float) -> np.ndarray:
    """The lowest fraction `k` of values, at least one (answers here are a few tokens long)."""
    n = max(1, int(k * len(values)))
    return np.sort(values)[:n]


@torch.inference_mode()
def token_stats(
    adapter: VisionLanguageAdapter, bank: ImageSource, examples: list[Example], batch_size: int = 32
) -> list[TokenStats]:
    """Per-token statistics of every example's answer, in the order of `examples`."""
    out: dict[int, TokenStats] = {}
    order = {id(e): i for i, e in enumerate(examples)}
    for chunk in batches(examples, batch_size):
        images = bank.get(chunk)
        questions, answers = questions_answers(chunk)
        batch = adapter.encode_batch(images is not None, questions, answers)
        logits = adapter.logits(batch, images)[:, :-1].float()
        targets = batch["labels"][:, 1:]
        logq = F.log_softmax(logits, -1)
        p = logq.exp()
        mu = (p * logq).sum(-1)
        sigma = ((p * logq.square()).sum(-1) - mu.square()).clamp(min=0).sqrt()
        picked = logq.gather(-1, targets.clamp(min=0).unsqueeze(-1)).squeeze(-1)
        for row, (e, answer) in enumerate(zip(chunk, answers, strict=True)):
            keep = targets[row] != -100
            out[order[id(e)]] = TokenStats(
                picked[row][keep].cpu().numpy(), mu[row][keep].cpu().numpy(), sigma[row][keep].cpu().numpy(), answer
            )
    return [out[i] for i in range(len(examples))]
