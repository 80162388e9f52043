"""The benchmark's in-memory shape: people with photos and MLLMU-Bench-style records, and flat QA items.

Synthetic and loaded (MLLMU-Bench parquet) benchmarks both end up here, so every later step
(training, unlearning, attack, evaluation) reads one structure.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
from PIL import Image

from sua_demo.errors import BadValueError, UnknownNameError

Task = Literal["gen", "mc", "cloze", "look"]  # "look": training-only questions about what is visible
Modality = Literal["image", "text"]
PhotoSplit = Literal["train", "heldout"]
OPTION_LETTERS = ("A", "B", "C", "D")
# Multiple choice comes in two styles. "letter" is MLLMU-Bench's: the target is the option's letter. The tiny
# model never learned to map a fact to the letter of an option that moves (vanilla stayed near chance, 26-34 %
# with 4 options), so the synthetic bench's style is "text": the target is the correct option's own words,
# and a model must still know which of the four it is (a model that never saw the person is at chance).
McStyle = Literal["text", "letter"]
MC_INSTRUCTION: dict[str, str] = {"text": "Answer with the option.", "letter": "Answer with the letter."}
CLOZE_INSTRUCTION = "Fill in the [Blank]."


@dataclass
class Person:
    id: int
    name: str
    record: dict[str, Any]  # MLLMU-Bench fields: ID, biography, Classification_Task, Generation_Task, Mask_Task
    photos: list[Image.Image]
    n_train_photos: int
    facts: dict[str, str] = field(default_factory=dict)
    attributes: dict[str, str] = field(default_factory=dict)

    def photo_indices(self, split: PhotoSplit) -> list[int]:
        n = len(self.photos)
        return list(range(self.n_train_photos)) if split == "train" else list(range(self.n_train_photos, n))


@dataclass(frozen=True)
class QAItem:
    person_id: int
    task: Task
    modality: Modality
    question: str  # the full text shown to the model (options and instructions included)
    answer: str
    fact: str = ""  # which profile fact it asks about, where known
    options: tuple[str, ...] = ()  # multiple choice only: the option texts, A first
    stem: str = ""  # multiple choice only: the question without its options
    letter: str = ""  # multiple choice only: the correct option's letter (the answer itself in "letter" style)

    @property
    def answer_is_letter(self) -> bool:
        return self.task == "mc" and self.answer == self.letter

    def reshuffled(self, rng: np.random.Generator) -> QAItem:
        """The same multiple-choice question with its options in a new order (training only): a fixed order
        per person lets a model memorise the position from the text and never look at the image."""
        if self.task != "mc":
            return self
        truth = self.options[OPTION_LETTERS.index(self.letter)]
        order = [self.options[i] for i in rng.permutation(len(self.options))]
        letter = OPTION_LETTERS[order.index(truth)]
        style: McStyle = "letter" if self.answer_is_letter else "text"
        question = format_mc(self.stem, dict(zip(OPTION_LETTERS, order, strict=False)), style)
        answer = letter if style == "letter" else self.answer
        return replace(self, question=question, answer=answer, options=tuple(order), letter=letter)


@dataclass
class Bench:
    people: list[Person]
    forget_ids: list[int]
    source: str = "synthetic"
    mc_style: McStyle = "text"  # "letter" for MLLMU-Bench data: what its own evaluation expects

    def __post_init__(self) -> None:
        self._by_id = {p.id: p for p in self.people}
        missing = sorted(set(self.forget_ids) - set(self._by_id))
        if missing:
            raise BadValueError(f"forget ids {missing} are not people of this benchmark")

    @property
    def retain_ids(self) -> list[int]:
        forget = set(self.forget_ids)
        return [p.id for p in self.people if p.id not in forget]

    def person(self, person_id: int) -> Person:
        try:
            return self._by_id[person_id]
        except KeyError:
            raise UnknownNameError(f"no person with ID {person_id} in this benchmark") from None

    def split_of(self, person_id: int) -> str:
        return "forget" if person_id in set(self.forget_ids) else "retain"

    def ids(self, split: Literal["forget", "retain", "all"]) -> list[int]:
        if split == "forget":
            return list(self.forget_ids)
        if split == "retain":
            return self.retain_ids
        return [p.id for p in self.people]

    def items(
        self,
        person_ids: list[int],
        tasks: tuple[Task, ...] = ("gen", "mc", "cloze"),
        modalities: tuple[Modality, ...] = ("image", "text"),
    ) -> list[QAItem]:
        out = []
        for pid in person_ids:
            items = record_items(self.person(pid).record, self.mc_style)
            out += [q for q in items if q.task in tasks and q.modality in modalities]
        return out


def format_mc(question: str, options: dict[str, str], style: McStyle = "text") -> str:
    opts = " ".join(f"{k}. {options[k]}" for k in OPTION_LETTERS if k in options)
    return f"{question} {opts} {MC_INSTRUCTION[style]}"


def format_cloze(question: str) -> str:
    return f"{question} {CLOZE_INSTRUCTION}"


def _modality(kind: str) -> Modality:
    return "image" if kind.lower().startswith("image") else "text"


def record_items(record: dict[str, Any], mc_style: McStyle = "text") -> list[QAItem]:
    """Flatten one MLLMU-Bench record into QA items (the same for synthetic and downloaded data); multiple
    choice targets the correct option's text or its letter, by `mc_style`."""
    pid = int(record["ID"])
    items: list[QAItem] = []
    for q in record.get("Generation_Task") or []:
        items.append(QAItem(pid, "gen", _modality(q["Type"]), q["Question"], str(q["Ground_Truth"]), q.get("Fact", "")))
    cls = record.get("Classification_Task") or {}
    for key, modality in (("Image_Textual_Questions", "image"), ("Pure_Text_Questions", "text")):
        for q in cls.get(key) or []:
            options = {k: str(v) for k, v in q["Options"].items() if v is not None}
            question = format_mc(q["Question"], options, mc_style)
            texts = tuple(options[k] for k in OPTION_LETTERS if k in options)
            letter = str(q["Correct_Answer"])
            answer = letter if mc_style == "letter" else options[letter]
            items.append(QAItem(pid, "mc", modality, question, answer, q.get("Fact", ""), texts, q["Question"], letter))
    for q in record.get("Mask_Task") or []:
        items.append(
            QAItem(
                pid,
                "cloze",
                _modality(q["Type"]),
                format_cloze(q["Question"]),
                str(q["Ground_Truth"]),
                q.get("Fact", ""),
            )
        )
    return items
