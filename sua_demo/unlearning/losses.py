"""Losses shared by the unlearning methods (one place, as in open-unlearning)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from sua_demo.models.base import VisionLanguageAdapter, answer_token_kl_sum
from sua_demo.models.examples import Example, ImageBank, questions_answers


def nll(
    adapter: VisionLanguageAdapter, bank: ImageBank, chunk: list[Example], answer: str | None = None
) -> torch.Tensor:
    """Mean answer NLL; `answer` replaces every target (the refusal, for IDK)."""
    return adapter.answer_nll(bank.get(chunk), *questions_answers(chunk, answer)).mean()


def sequence_logprob(adapter: VisionLanguageAdapter, bank: ImageBank, chunk: list[Example]) -> torch.Tensor:
    return adapter.answer_logprob(bank.get(chunk), *questions_answers(chunk))


def npo(logp: torch.Tensor, ref_logp: torch.Tensor, beta: float) -> torch.Tensor:
    """NPO: -(2/beta) log sigmoid(-beta (log p_theta - log p_ref)), averaged over the batch."""
    return (-2.0 / beta) * F.logsigmoid(-beta * (logp - ref_logp)).mean()


def answer_token_kl(reference_logits: torch.Tensor, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """KL(p_ref || p) per answer-predicting position, averaged over those positions."""
    total, count = answer_token_kl_sum(reference_logits, logits, labels)
    return total / max(count, 1)


def kl_to_reference(
    adapter: VisionLanguageAdapter, reference: VisionLanguageAdapter, bank: ImageBank, chunk: list[Example]
) -> torch.Tensor:
    """KL(p_ref || p_theta) over answer-token distributions on retain examples."""
    images = bank.get(chunk)
    batch = adapter.encode_batch(images is not None, *questions_answers(chunk))
    with torch.no_grad():
        reference_logits = reference.logits(batch, images)
    return answer_token_kl(reference_logits, adapter.logits(batch, images), batch["labels"])
