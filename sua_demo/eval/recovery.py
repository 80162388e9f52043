"""The recovery protocol: where does one universal delta bring forgotten answers back, and where not.

Groups (docs/findings.md has what each shows): (a) the attacker's own images, (b) unseen photos of the attacker's
people, (c) forget people delta never saw (train and held-out photos), and retain people with delta.
Every figure is reported clean, with delta, and with random noise of the same eps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sua_demo.attacks.noise import Noise
from sua_demo.core.errors import BadValueError
from sua_demo.dataset.records import Bench, Task
from sua_demo.eval.evaluate import Scores, answer, score
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, ImageBank, image_examples

TASKS: tuple[Task, ...] = ("gen", "mc", "cloze")
# delta is fitted on generation questions only: on the attacker's validation split (studies/attack_recipes.py)
# that fitted and transferred better than all three tasks, and every task is still measured.
FIT_TASKS: tuple[Task, ...] = ("gen",)
RETAIN_PEOPLE = 30  # retain people measured for collateral damage (and the attacker's retain-KL data): enough for
# a +-5 point estimate on their held-out photos at a fraction of the cost of all 85
GROUPS = ("a_attacker_images", "b_attacker_heldout", "c_unseen_train", "c_unseen_heldout", "retain_heldout")


# Half of the forget people are the attacker's (δ is fitted on their train photos), half are unseen by δ: enough
# people on each side for a figure with a spread over splits (the paper's code splits MLLMU-Bench's forget set too).
ATTACKER_FRACTION = 0.5


@dataclass(frozen=True)
class AttackSplit:
    attacker_ids: list[int]  # forget people whose train photos delta is optimised on
    unseen_ids: list[int]  # forget people delta never sees
    seed: int


def attack_split(bench: Bench, attacker_fraction: float = ATTACKER_FRACTION, seed: int = 0) -> AttackSplit:
    forget = list(bench.forget_ids)
    if len(forget) < 2:
        raise BadValueError("the protocol needs at least two forget people (attacker's and unseen)")
    order = np.random.default_rng(seed).permutation(len(forget))
    k = min(len(forget) - 1, max(1, round(attacker_fraction * len(forget))))
    return AttackSplit(sorted(forget[i] for i in order[:k]), sorted(forget[i] for i in order[k:]), seed)


def split_meta(split: AttackSplit) -> dict[str, object]:
    """What a noise file records of the split it was fitted on (load_noise checks it, the app reads it)."""
    return {"attacker_ids": split.attacker_ids, "unseen_ids": split.unseen_ids, "split_seed": split.seed}


def attacker_examples(bench: Bench, split: AttackSplit, tasks: tuple[Task, ...] = FIT_TASKS) -> list[Example]:
    """What the attacker optimises on: its people's train photos with their (true) answers."""
    return image_examples(bench, split.attacker_ids, "train", tasks)


def protocol_groups(
    bench: Bench, split: AttackSplit, retain_people: int = RETAIN_PEOPLE, tasks: tuple[Task, ...] = TASKS
) -> dict[str, list[Example]]:
    retain = bench.retain_ids[:retain_people]
    return {
        "a_attacker_images": image_examples(bench, split.attacker_ids, "train", tasks),
        "b_attacker_heldout": image_examples(bench, split.attacker_ids, "heldout", tasks),
        "c_unseen_train": image_examples(bench, split.unseen_ids, "train", tasks),
        "c_unseen_heldout": image_examples(bench, split.unseen_ids, "heldout", tasks),
        "retain_heldout": image_examples(bench, retain, "heldout", tasks),
    }


def answers_with(
    adapter: VisionLanguageAdapter, bank: ImageBank, examples: list[Example], noise: Noise | None
) -> list[str]:
    images = None
    if noise is not None:
        clean = bank.get(examples)
        assert clean is not None, "the protocol perturbs image questions only"
        images = noise.apply(clean)
    return answer(adapter, bank, examples, images=images)


def recovery(
    adapter: VisionLanguageAdapter, bank: ImageBank, groups: dict[str, list[Example]], noises: dict[str, Noise | None]
) -> dict[str, dict[str, Scores]]:
    """{condition: {group: scores}} for each noise (None = clean)."""
    return recovery_answers(adapter, bank, groups, noises)[0]


def recovery_answers(
    adapter: VisionLanguageAdapter, bank: ImageBank, groups: dict[str, list[Example]], noises: dict[str, Noise | None]
) -> tuple[dict[str, dict[str, Scores]], dict[str, dict[str, list[str]]]]:
    """`recovery` and the answers it scored, {condition: {group: answers}}: a paired test reads the same questions
    under two conditions."""
    said = {
        cond: {g: answers_with(adapter, bank, ex, noise) for g, ex in groups.items() if ex}
        for cond, noise in noises.items()
    }
    scores = {cond: {g: score(groups[g], a, adapter.refusals) for g, a in by.items()} for cond, by in said.items()}
    return scores, said
