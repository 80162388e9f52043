"""Losses shared by the unlearning methods (one place, as in open-unlearning)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from sua_demo.data import Example, ImageBank
from sua_demo.models.base import VisionLanguageAdapter


def _qa(chunk: list[Example], answer: str | None = None) -> tuple[list[str], list[str]]:
    return [e.item.question for e in chunk], [answer or e.item.answer for e in chunk]


def nll(
    adapter: VisionLanguageAdapter, bank: ImageBank, chunk: list[Example], answer: str | None = None
) -> torch.Tensor:
    """Mean answer NLL; `answer` replaces every target (the refusal, for IDK)."""
    return adapter.answer_nll(bank.get(chunk), *_qa(chunk, answer)).mean()


def sequence_logprob(adapter: VisionLanguageAdapter, bank: ImageBank, chunk: list[Example]) -> torch.Tensor:
    return adapter.answer_logprob(bank.get(chunk), *_qa(chunk))


def npo(logp: torch.Tensor, ref_logp: torch.Tensor, beta: float) -> torch.Tensor:
    """NPO: -(2/beta) log sigmoid(-beta (log p_theta - log p_ref)), averaged over the batch."""
    return (-2.0 / beta) * F.logsigmoid(-beta * (logp - ref_logp)).mean()


def kl_to_reference(
    adapter: VisionLanguageAdapter, reference: VisionLanguageAdapter, bank: ImageBank, chunk: list[Example]
) -> torch.Tensor:
    """KL(p_ref || p_theta) over answer-token distributions on retain examples."""
    images = bank.get(chunk)
    questions, answers = _qa(chunk)
    batch = adapter.encode_batch(images is not None, questions, answers)
    mask = (batch["labels"][:, 1:] != -100).unsqueeze(-1)
    logq = F.log_softmax(adapter.logits(batch, images)[:, :-1].float(), -1)
    with torch.no_grad():
        logp = F.log_softmax(reference.logits(batch, images)[:, :-1].float(), -1)
    kl = (logp.exp() * (logp - logq) * mask).sum() / mask.sum().clamp(min=1)
    return kl
