"""Choosing an attack recipe on the attacker's side only.

An attacker who tunes settings on the groups they are judged on (b: their people's held-out photos, c: forget
people delta never saw) reports a tuned figure, not a measured one. So recipes are compared on a validation
split made from the attacker's own data: delta is fitted on the first photos of some attacker people, and
judged on those people's other train photos (a stand-in for b) and on the attacker people it never saw (a
stand-in for c). Nothing here reads a held-out photo or an unseen person.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from sua_demo.attacks import ATTACKS, AttackConfig
from sua_demo.core.errors import BadValueError
from sua_demo.dataset.records import Bench, Task
from sua_demo.eval.recovery import TASKS, AttackSplit, recovery
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, ImageBank

VAL_GROUPS = ("fit", "fit_other_photos", "val_people")


@dataclass(frozen=True)
class ValidationSplit:
    fit_ids: list[int]  # attacker people delta is fitted on (their first `fit_photos` train photos)
    val_ids: list[int]  # attacker people held back: the stand-in for people delta never saw
    fit_photos: int


def validation_split(bench: Bench, split: AttackSplit, val_people: int = 2, fit_photos: int = 3) -> ValidationSplit:
    ids = list(split.attacker_ids)
    if not 0 < val_people < len(ids):
        raise BadValueError(f"hold back 1 to {len(ids) - 1} of the {len(ids)} attacker people, not {val_people}")
    n_train = len(bench.person(ids[0]).photo_indices("train"))
    if not 0 < fit_photos < n_train:
        raise BadValueError(f"fit on 1 to {n_train - 1} of the {n_train} train photos, not {fit_photos}")
    order = np.random.default_rng(1000 + split.seed).permutation(len(ids))
    val = sorted(ids[i] for i in order[:val_people])
    return ValidationSplit(sorted(set(ids) - set(val)), val, fit_photos)


def validation_groups(bench: Bench, vs: ValidationSplit, tasks: tuple[Task, ...] = TASKS) -> dict[str, list[Example]]:
    def photos(pid: int, which: slice) -> list[int]:
        return bench.person(pid).photo_indices("train")[which]

    def examples(ids: list[int], which: slice) -> list[Example]:
        return [
            Example(q, ph)
            for pid in ids
            for ph in photos(pid, which)
            for q in bench.items([pid], tasks=tasks, modalities=("image",))
        ]

    return {
        "fit": examples(vs.fit_ids, slice(0, vs.fit_photos)),
        "fit_other_photos": examples(vs.fit_ids, slice(vs.fit_photos, None)),
        "val_people": examples(vs.val_ids, slice(None)),
    }


def validate(
    adapter: VisionLanguageAdapter,
    bank: ImageBank,
    bench: Bench,
    split: AttackSplit,
    cfg: AttackConfig,
    attack: str = "sua",
    fit_tasks: tuple[Task, ...] = TASKS,
    score_tasks: tuple[Task, ...] = ("gen",),
    progress: bool = False,
    retain: list[Example] | None = None,
) -> dict[str, dict[str, dict[str, float]]]:
    """Fit a delta with `cfg` on the validation split's fit images (and `retain`, for a retain term); scores
    clean and with delta per group."""
    vs = validation_split(bench, split)
    fit = validation_groups(bench, vs, fit_tasks)["fit"]
    noise = ATTACKS.get(attack)(adapter, replace(cfg, seed=split.seed)).run(bank, fit, retain, progress=progress)
    return recovery(adapter, bank, validation_groups(bench, vs, score_tasks), {"clean": None, "delta": noise})
