"""The residual-knowledge audit: several ways of asking "did the model really forget?", each beside its control.

An audit method asks the forget people's facts in its own way (a noise on the photo, quantized weights, a
little relearning, a learned soft prompt, other words, no photo at all) and returns the answers. Every method
runs twice: on the unlearned model and, the same way, on the retrain control, which never knew the forget
people. What the unlearned model gives back above what the control gives is knowledge unlearning hid; what
the control gives too, the method wrote in by itself (arXiv 2502.15836 warns that strong attacks do).

A method is one file and one registry line (`AUDITS`), as attacks and unlearning methods are.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from PIL import Image

from sua_demo.attacks import Noise
from sua_demo.core.registry import Registry
from sua_demo.dataset.records import Bench, Person
from sua_demo.eval.evaluate import answer
from sua_demo.eval.metrics import exact_match
from sua_demo.eval.recovery import AttackSplit
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, ImageBank, image_examples

ROLES = ("unlearned", "retrain")
GROUPS = ("attacker_people", "unseen_people", "retain")


@dataclass
class AuditContext:
    """What every method may use: the bench, both models with their image banks, the split, the shipped noise."""

    bench: Bench
    models: dict[str, tuple[VisionLanguageAdapter, ImageBank]]  # "unlearned" and "retrain"
    split: AttackSplit
    noise: Noise | None = None  # the SUA delta of this split, where there is one
    retain_people: int = 10
    people: list[int] | None = None  # only these forget people (the app's live audit of one person)
    quick: bool = False  # fewer optimisation steps (the live audit): the figures are rougher, the wait short
    cache: dict[Any, Any] = field(default_factory=dict)  # clean answers, computed once per set of questions

    def group_of(self, pid: int) -> str:
        if pid in self.split.attacker_ids:
            return "attacker_people"
        return "unseen_people" if pid in self.split.unseen_ids else "retain"

    def forget_people(self) -> list[int]:
        ids = self.split.attacker_ids + self.split.unseen_ids
        return [p for p in ids if self.people is None or p in self.people]

    def asked(self, photos: str = "heldout") -> list[Example]:
        """The audit's questions: every generation question of the forget people (and a few retain people) on
        their held-out photos, which no training or attack has seen."""
        retain = self.bench.retain_ids[: self.retain_people] if self.people is None else []
        return image_examples(self.bench, self.forget_people() + retain, photos)


class AuditMethod(ABC):
    """One way of probing. `answers` asks `ctx.asked()`-style examples of one model and returns them with the
    answers; the base turns them into recovery per group and a state per (person, fact)."""

    uses_split = False  # optimised on the attacker's people (its figure then has a spread over splits)

    def work(self, quick: bool) -> int:
        """What it computes beyond asking, in passes of the model over a batch (0: it only asks), so that a clock
        can weigh it against the others: a fine-tuning step is 3 (forward, backward to the activations, backward
        to the weights), a step that optimises inputs only is 2 (no weight gradients). Measured on the live audit:
        0.28 s a relearning step against 0.18-0.21 s a soft-prompt step, a ratio of 0.64-0.75 (2/3 here)."""
        return 0

    @abstractmethod
    def answers(self, ctx: AuditContext, role: str) -> tuple[list[Example], list[str]]:
        """(examples asked, answers) for the model `role` ("unlearned" or "retrain")."""


AUDITS: Registry[AuditMethod] = Registry("audit method")


def answers_on_drawn(
    ctx: AuditContext, role: str, draw: Callable[[Person, int], Image.Image]
) -> tuple[list[Example], list[str]]:
    """The audit's questions asked of `draw(person, photo index)` in place of each held-out photo (drawn once per
    photo): what the visual probes share, each saying only how it changes the picture."""
    adapter, bank = ctx.models[role]
    examples = ctx.asked()
    drawn: dict[tuple[int, int], torch.Tensor] = {}
    for e in examples:
        if (e.person_id, e.photo) not in drawn:
            photo = draw(ctx.bench.person(e.person_id), e.photo)
            drawn[e.person_id, e.photo] = adapter.prepare_images([photo])[0]
    images = torch.stack([drawn[e.person_id, e.photo] for e in examples])
    return examples, answer(adapter, bank, examples, images=images)


def scores(ctx: AuditContext, examples: list[Example], answers: list[str]) -> dict[str, float]:
    """Exact match per group, in points."""
    hits: dict[str, list[float]] = {g: [] for g in GROUPS}
    for e, a in zip(examples, answers, strict=True):
        hits[ctx.group_of(e.person_id)].append(float(exact_match(a, e.item.answer)))
    return {g: 100 * float(np.mean(v)) for g, v in hits.items() if v}


def states(examples: list[Example], answers: list[str]) -> dict[str, str]:
    """'pid/fact' -> 'recovered' (right on some photo), 'refused' (refused on every one) or 'not'."""
    from sua_demo.eval.metrics import is_refusal

    by: dict[str, list[str]] = {}
    for e, a in zip(examples, answers, strict=True):
        key = f"{e.person_id}/{e.item.fact}"
        if exact_match(a, e.item.answer):
            by[key] = ["recovered"]
        elif by.get(key) != ["recovered"]:
            by.setdefault(key, []).append("refused" if is_refusal(a) else "not")
    return {k: "recovered" if v == ["recovered"] else "refused" if all(s == "refused" for s in v) else "not"
            for k, v in by.items()}  # fmt: skip


def run_method(name: str, ctx: AuditContext) -> dict[str, Any]:
    """Both roles, with the clean baseline of the same questions: em, gain over clean, and the states."""
    method = AUDITS.get(name)()
    out: dict[str, Any] = {}
    asked: dict[str, list] = {}
    right: dict[str, list[bool]] = {}
    for role in ROLES:
        examples, answers = method.answers(ctx, role)
        em = scores(ctx, examples, answers)
        clean = clean_scores(ctx, role, baseline(ctx, examples))
        out[role] = {"em": em, "clean": clean, "gain": {g: em[g] - clean[g] for g in em if g in clean}}
        if role == "unlearned":
            out["states"] = states(examples, answers)
        forget = [(e, a) for e, a in zip(examples, answers, strict=True) if ctx.group_of(e.person_id) != "retain"]
        asked[role] = [(e.person_id, e.photo, e.item.question) for e, _ in forget]
        right[role] = [exact_match(a, e.item.answer) for e, a in forget]
    if asked["unlearned"] == asked["retrain"]:  # the same questions of both: the verdict's paired test applies
        out["paired"] = right
    out["above_control"] = {
        g: out["unlearned"]["gain"][g] - out["retrain"]["gain"][g] for g in out["unlearned"]["gain"]
    }
    return out


def baseline(ctx: AuditContext, examples: list[Example]) -> list[Example]:
    """What a method's answers are read against: the bench's own question on the clean held-out photos, for the
    same (person, fact) pairs the method asked. A method that asks in other words or without a photo is so
    compared with plain asking, not with itself."""
    asked = {(e.person_id, e.item.fact) for e in examples}
    return [e for e in ctx.asked() if (e.person_id, e.item.fact) in asked]


def clean_scores(ctx: AuditContext, role: str, examples: list[Example]) -> dict[str, float]:
    """These questions, as they are, with the clean model: the baseline a method's gain is counted from."""
    from sua_demo.eval.evaluate import answer

    key = ("clean", role, tuple((e.person_id, e.photo, e.item.question) for e in examples))
    if key not in ctx.cache:
        adapter, bank = ctx.models[role]
        ctx.cache[key] = scores(ctx, examples, answer(adapter, bank, examples))
    return ctx.cache[key]
