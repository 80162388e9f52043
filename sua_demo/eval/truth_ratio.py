"""TOFU's truth ratio and forget quality, on the bench's paraphrased and perturbed answers.

Per question, the truth ratio sets how likely the model finds wrong answers of the right type against a
paraphrased right one, each probability length-normalised (the geometric mean over its tokens): about 1 for a
model that cannot tell right from wrong (the retrain control on forget people), near 0 for one that knows.
The wrong answers are pooled as TOFU's and open-unlearning's code pool them: their mean token losses are averaged,
then exponentiated (a geometric mean of their probabilities). TOFU's paper writes an arithmetic mean of the
probabilities instead; the code is what published forget-quality figures were computed with, so it is what ours
are set beside.
Forget quality is the KS test's p-value between an unlearned model's truth ratios on the forget people and the
retrain control's: high when the two distributions cannot be told apart, which is what exact unlearning gives."""

from __future__ import annotations

import numpy as np
import torch
from scipy.stats import ks_2samp

from sua_demo.core.errors import BadValueError
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, ImageBank


def truth_ratio(paraphrased_logp: float, perturbed_logp: list[float] | np.ndarray) -> float:
    """exp(the wrong answers' mean of their mean token log-probs), over exp(the right one's mean token log-prob)."""
    return float(np.exp(np.mean(np.asarray(perturbed_logp, dtype=float)) - paraphrased_logp))


def forget_quality(unlearned: list[float] | np.ndarray, retrain: list[float] | np.ndarray) -> float:
    """Two-sample KS p-value of the two models' truth ratios on the same questions."""
    if len(unlearned) == 0 or len(retrain) == 0:
        raise BadValueError("forget quality needs truth ratios of both models")
    return float(ks_2samp(np.asarray(unlearned), np.asarray(retrain)).pvalue)


@torch.inference_mode()
def truth_ratios(
    adapter: VisionLanguageAdapter, bank: ImageBank, examples: list[Example], batch_size: int = 32
) -> np.ndarray:
    """(N,) truth ratio of each example that has perturbed answers (a bench without them is refused)."""
    usable = [e for e in examples if e.item.paraphrased and e.item.perturbed]
    if not usable:
        raise BadValueError("these questions carry no paraphrased and perturbed answers (a bench built before them?)")
    ratios: dict[int, float] = {}
    for with_image in (True, False):  # a batch never mixes image and text-only questions
        group = [(i, e) for i, e in enumerate(usable) if (e.photo is not None) == with_image]
        rows = [(e, answer) for _, e in group for answer in (e.item.paraphrased, *e.item.perturbed)]
        means: list[float] = []
        for start in range(0, len(rows), batch_size):
            chunk = rows[start : start + batch_size]
            images = bank.get([e for e, _ in chunk])
            logp, mask = adapter.answer_logprobs(images, [e.item.question for e, _ in chunk], [a for _, a in chunk])
            means += (logp.sum(1) / mask.sum(1).clamp(min=1)).tolist()
        at = 0
        for i, e in group:
            width = 1 + len(e.item.perturbed)
            ratios[i] = truth_ratio(means[at], means[at + 1 : at + width])
            at += width
    return np.array([ratios[i] for i in range(len(usable))])
