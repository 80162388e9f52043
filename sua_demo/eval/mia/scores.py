"""From scores to the figures researchers quote: the AUC of members against non-members and MUSE's privleak."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.metrics import roc_auc_score

from sua_demo.core.errors import BadValueError
from sua_demo.dataset.records import Bench
from sua_demo.eval.mia.base import MIAS, ImageSource, token_stats
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, image_examples, text_examples


def auc(members: list[float] | np.ndarray, nonmembers: list[float] | np.ndarray) -> float:
    """The chance that a random member scores above a random non-member (ties count half): 0.5 is a model
    that cannot tell them apart, 1 one that gives its training data away."""
    if len(members) == 0 or len(nonmembers) == 0:
        raise BadValueError("membership inference needs at least one member and one non-member")
    labels = np.r_[np.ones(len(members)), np.zeros(len(nonmembers))]
    return float(roc_auc_score(labels, np.r_[members, nonmembers]))


def privleak(model_auc: float, reference_auc: float) -> float:
    """MUSE's privleak in percent: how far the model's AUC sits from the retrain control's (which never saw the
    members), relative to it. About 0 is what exact unlearning gives; above 0 the model leaks who it trained on,
    below 0 it over-unlearned (its members now look *less* familiar than strangers do)."""
    return 100 * (model_auc - reference_auc) / reference_auc


def membership_examples(bench: Bench, person_ids: list[int]) -> list[Example]:
    """The generation questions a person was (or would have been) trained on: on their train photos and by name."""
    return image_examples(bench, person_ids, "train") + text_examples(bench, person_ids)


def mia_scores(
    adapter: VisionLanguageAdapter, bank: ImageSource, examples: list[Example], attacks: list[str] | None = None
) -> dict[str, np.ndarray]:
    """Each attack's score of every example, from one pass of the model."""
    stats = token_stats(adapter, bank, examples)
    return {name: np.array([MIAS.get(name)().score(s) for s in stats]) for name in attacks or MIAS.names()}


def mia_report(
    adapter: VisionLanguageAdapter,
    bank: ImageSource,
    members: list[Example],
    nonmembers: list[Example],
    attacks: list[str] | None = None,
) -> dict[str, Any]:
    """Per attack: its AUC and the mean score of each set (so a reader sees which way it went), and the counts."""
    a = mia_scores(adapter, bank, members, attacks)
    b = mia_scores(adapter, bank, nonmembers, attacks)
    per_attack = {
        name: {"auc": auc(a[name], b[name]), "members": float(a[name].mean()), "nonmembers": float(b[name].mean())}
        for name in a
    }
    return {"attacks": per_attack, "counts": {"members": len(members), "nonmembers": len(nonmembers)}}
