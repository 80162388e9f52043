"""Guided examples for the app, chosen from measured results rather than by hand.

For a model and its shipped delta: every forget person delta never saw on whom it brings back more answers across
their photos than its controls give, ranked by that margin (random noise of the same eps, the retrain
control with the same delta); for each, the photo on which the most facts come back with delta alone. Where no
such person exists, the people delta was fitted on, marked as such.
"""

from __future__ import annotations

from typing import Any

from sua_demo.analysis.verdict import verdict
from sua_demo.attacks import Noise
from sua_demo.dataset.records import Bench
from sua_demo.eval.metrics import exact_match
from sua_demo.eval.person import Model, person_answers, person_examples
from sua_demo.eval.recovery import AttackSplit


def _clean_wins(answers: dict[str, list[list[str]]], truths: list[str], photo: int) -> int:
    """Facts on this photo that delta gets right and neither control does (nor the clean photo)."""

    def ok(cond: str, q: int) -> bool:
        return cond in answers and exact_match(answers[cond][photo][q], truths[q])

    return sum(
        ok("delta", q) and not ok("clean", q) and not ok("random", q) and not ok("retrain_delta", q)
        for q in range(len(truths))
    )


def guided_examples(
    bench: Bench,
    split: AttackSplit,
    unlearned: Model,
    noise: Noise,
    random: Noise,
    retrain: Model | None = None,
    vanilla: Model | None = None,
    k: int = 4,
) -> list[dict[str, Any]]:
    """Up to k examples, strongest evidence first: {person, photo, brought_back, beyond_controls, p, correct{...},
    wins_on_photo, total, fitted_on}. Only people on whom the verdict's paired test says δ brings answers back
    beyond its controls count (analysis/paired.py). People δ never saw come first; where none passes (an unlearning
    δ cannot reach past its own people), the people δ was fitted on stand in, marked `fitted_on`, so a first visit
    still shows δ at work and says on whom. There may be none at all (a model δ cannot open)."""
    for people, fitted_on in ((split.unseen_ids, False), (split.attacker_ids, True)):
        found = [e for pid in people if (e := _example(bench, pid, unlearned, noise, random, retrain, vanilla))]
        if found:
            found.sort(key=lambda e: (e["p"], -e["beyond_controls"], e["wins_on_photo"] == 0))
            return [{**e, "fitted_on": fitted_on} for e in found[:k]]
    return []


def _example(
    bench: Bench, pid: int, unlearned: Model, noise: Noise, random: Noise, retrain: Model | None, vanilla: Model | None
) -> dict[str, Any] | None:
    """One person as an example, if the paired test says δ opens them: the photo where most facts come back."""
    answers = person_answers(bench, pid, unlearned, noise, random, vanilla, retrain)
    examples, photos = person_examples(bench, pid)
    truths = [e.item.answer for e in examples[: len(examples) // len(photos)]]
    v = verdict(f"#{pid} {bench.person(pid).name}", truths, answers)
    test = v.beyond
    if test is None or not test.first_wins:
        return None
    wins = [_clean_wins(answers, truths, p) for p in range(len(photos))]
    best = max(range(len(photos)), key=lambda p: (wins[p], p))  # ties: the later (held-out) photo
    return {
        "person": pid,
        "photo": photos[best],
        "brought_back": v.brought_back,
        "beyond_controls": v.count,  # the verdict's one count: right with δ, wrong under every control
        "p": test.p,
        "wins_on_photo": wins[best],
        "correct": v.correct,
        "total": v.total,
    }
