"""Examples for training and evaluation: (image or none, question, answer) triples over the bench.

Images are turned into model-resolution tensors once (`ImageBank`), then indexed by
(person, photo); nothing is re-preprocessed from PIL inside a training or attack step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from sua_demo.core.errors import BadValueError
from sua_demo.dataset.records import Bench, PhotoSplit, QAItem, Task
from sua_demo.models.base import VisionLanguageAdapter


@dataclass(frozen=True)
class Example:
    item: QAItem
    photo: int | None  # index into the person's photos; None for text-only questions

    @property
    def person_id(self) -> int:
        return self.item.person_id


class ImageBank:
    """All bench photos at the model's resolution, holdout people's too (membership inference asks about them),
    (people, photos, 3, S, S) in [0, 1]."""

    def __init__(self, bench: Bench, adapter: VisionLanguageAdapter) -> None:
        everyone = bench.people + bench.holdout
        self.index = {p.id: i for i, p in enumerate(everyone)}
        n_photos = max(len(p.photos) for p in everyone)
        size = adapter.image_size
        self.tensor = torch.zeros(len(everyone), n_photos, 3, size, size)
        for i, person in enumerate(everyone):
            self.tensor[i, : len(person.photos)] = adapter.prepare_images(person.photos)

    def get(self, examples: list[Example]) -> torch.Tensor | None:
        if examples[0].photo is None:
            return None
        rows = torch.tensor([self.index[e.person_id] for e in examples])
        cols = torch.tensor([e.photo for e in examples])
        return self.tensor[rows, cols]


def questions_answers(chunk: list[Example], answer: str | None = None) -> tuple[list[str], list[str]]:
    """The questions and answers of a batch; `answer` replaces every target (the refusal, for IDK)."""
    return [e.item.question for e in chunk], [answer or e.item.answer for e in chunk]


def image_examples(
    bench: Bench,
    person_ids: list[int],
    split: PhotoSplit,
    tasks: tuple[Task, ...] = ("gen",),
    photos_per_person: int | None = None,
) -> list[Example]:
    """Every image question of these people on every photo of the split (optionally the first k photos)."""
    out = []
    for pid in person_ids:
        photos = bench.person(pid).photo_indices(split)[:photos_per_person]
        items = bench.items([pid], tasks=tasks, modalities=("image",), photos=split)
        out += [Example(q, ph) for ph in photos for q in items]
    return out


def text_examples(bench: Bench, person_ids: list[int], tasks: tuple[Task, ...] = ("gen",)) -> list[Example]:
    return [Example(q, None) for q in bench.items(person_ids, tasks=tasks, modalities=("text",))]


def batches(examples: list[Example], batch_size: int, by_task: bool = True) -> list[list[Example]]:
    """Chunks that never mix image and text-only examples (they need different inputs). With `by_task`
    (evaluation) tasks are not mixed either, so short questions are not padded to multiple-choice length;
    training mixes tasks, which measured better for learning (single-task batches slowed it down)."""
    groups: dict[tuple[bool, str], list[Example]] = {}
    for e in examples:
        groups.setdefault((e.photo is None, e.item.task if by_task else ""), []).append(e)
    out: list[list[Example]] = []
    for _, group in sorted(groups.items()):
        out += [group[i : i + batch_size] for i in range(0, len(group), batch_size)]
    return out


class ExampleSampler:
    """Random single-kind batches, forever: the forget/retain streams of unlearning.

    Image and text-only batches are drawn in proportion to how many examples of each there are.
    """

    def __init__(self, examples: list[Example], batch_size: int, seed: int) -> None:
        if not examples:
            raise BadValueError("no examples to sample from: the chosen people and tasks have no questions")
        self.groups = [
            g for g in ([e for e in examples if e.photo is not None], [e for e in examples if e.photo is None]) if g
        ]
        self.weights = np.array([len(g) for g in self.groups], dtype=float) / len(examples)
        self.batch_size = batch_size
        self.rng = np.random.default_rng(seed)

    def __call__(self) -> list[Example]:
        group = self.groups[self.rng.choice(len(self.groups), p=self.weights)]
        idx = self.rng.choice(len(group), size=min(self.batch_size, len(group)), replace=False)
        return [group[i] for i in idx]
