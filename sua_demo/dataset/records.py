"""The benchmark's in-memory shape: people with photos and MLLMU-Bench-style records, and flat QA items.

Synthetic and loaded (MLLMU-Bench parquet) benchmarks both end up here, so every later step
(training, unlearning, attack, evaluation) reads one structure.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
from PIL import Image

from sua_demo.core.errors import BadValueError, UnknownNameError

Task = Literal["gen", "mc", "cloze", "look"]  # "look": training-only questions about what is visible
Modality = Literal["image", "text"]
PhotoSplit = Literal["train", "heldout", "validation"]
OPTION_LETTERS = ("A", "B", "C", "D")
# Questions come in two styles. "mllmu" is MLLMU-Bench's own (its eval.py): multiple choice lists "A: option"
# lines and asks for one letter, read from the answer's first character; cloze turns "__" into "[Blank]" and asks
# for the word only, scored by the truth appearing in the answer. "synthetic" is the tiny bench's: the tiny model
# never learned to map a fact to the letter of an option that moves (vanilla stayed near chance, 26-34 % with 4
# options), so its multiple-choice target is the correct option's own words, and a model must still know which
# of the four it is (a model that never saw the person is at chance).
Style = Literal["synthetic", "mllmu"]
MC_INSTRUCTION = "Answer with the option."
MLLMU_MC_INSTRUCTION = "Just give ONE letter representing the answer directly."
CLOZE_INSTRUCTION = "Fill in the [Blank]."
MLLMU_CLOZE_INSTRUCTION = "Please **ONLY** provide the correct answer that should replace the [Blank]."


@dataclass
class Person:
    id: int
    name: str
    record: dict[str, Any]  # MLLMU-Bench fields: ID, biography, Classification_Task, Generation_Task, Mask_Task
    photos: list[Image.Image]
    n_train_photos: int
    facts: dict[str, str] = field(default_factory=dict)
    attributes: dict[str, str] = field(default_factory=dict)
    photo_attributes: list[dict[str, str]] = field(default_factory=list)  # each photo's own, where they differ
    heldout_record: dict[str, Any] | None = None  # MLLMU-Bench's Test_Set asks its own questions of its photos
    # photos after the held-out ones that only a stopping rule reads: never trained on, never in a reported figure
    n_validation_photos: int = 0

    def photo_indices(self, split: PhotoSplit) -> list[int]:
        n = len(self.photos)
        end = n - self.n_validation_photos
        if split == "train":
            return list(range(self.n_train_photos))
        return list(range(self.n_train_photos, end)) if split == "heldout" else list(range(end, n))


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
    letter: str = ""  # multiple choice only: the correct option's letter (the answer itself in "mllmu" style)
    style: Style = "synthetic"  # how it is asked and scored (eval/evaluate.py)
    paraphrased: str = ""  # generation only, where the bench has them: a paraphrased correct answer and
    perturbed: tuple[str, ...] = ()  # wrong answers of the same type (the truth ratio, eval/truth_ratio.py)

    @property
    def max_new_tokens(self) -> int:
        """MLLMU-Bench lets a model say 50 tokens and looks for the truth in them; the tiny bench's answers are
        a few words, read whole."""
        return 50 if self.style == "mllmu" else 8

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
        style: Style = "mllmu" if self.answer_is_letter else "synthetic"
        question = format_mc(self.stem, dict(zip(OPTION_LETTERS, order, strict=False)), style)
        answer = letter if style == "mllmu" else self.answer
        return replace(self, question=question, answer=answer, options=tuple(order), letter=letter)


@dataclass
class Bench:
    people: list[Person]
    forget_ids: list[int]
    source: str = "synthetic"
    style: Style = "synthetic"  # "mllmu" for MLLMU-Bench data: its prompts, targets and scoring
    utility_ids: list[int] = field(default_factory=list)  # MLLMU-Bench's Retain_Set (real celebrities): utility
    ft_items: dict[int, list[QAItem]] = field(default_factory=dict)  # ft_Data's extra training questions
    holdout: list[Person] = field(default_factory=list)  # people no model ever trains on (membership inference)

    def __post_init__(self) -> None:
        self._by_id = {p.id: p for p in self.people + self.holdout}
        missing = sorted(set(self.forget_ids) - set(self._by_id))
        if missing:
            raise BadValueError(f"forget ids {missing} are not people of this benchmark")

    @property
    def retain_ids(self) -> list[int]:
        other = set(self.forget_ids) | set(self.utility_ids)
        return [p.id for p in self.people if p.id not in other]

    def person(self, person_id: int) -> Person:
        try:
            return self._by_id[person_id]
        except KeyError:
            raise UnknownNameError(f"no person with ID {person_id} in this benchmark") from None

    @property
    def holdout_ids(self) -> list[int]:
        return [p.id for p in self.holdout]

    def split_of(self, person_id: int) -> str:
        if person_id in set(self.holdout_ids):
            return "holdout"
        if person_id in set(self.utility_ids):
            return "utility"
        return "forget" if person_id in set(self.forget_ids) else "retain"

    def ids(self, split: Literal["forget", "retain", "utility", "all"]) -> list[int]:
        if split == "forget":
            return list(self.forget_ids)
        if split == "retain":
            return self.retain_ids
        if split == "utility":
            return list(self.utility_ids)
        return [p.id for p in self.people]

    def items(
        self,
        person_ids: list[int],
        tasks: tuple[Task, ...] = ("gen", "mc", "cloze"),
        modalities: tuple[Modality, ...] = ("image", "text"),
        photos: PhotoSplit | None = None,
    ) -> list[QAItem]:
        """Questions of these people; for held-out photos, a Test_Set's own questions where it has them."""
        out = []
        for pid in person_ids:
            person = self.person(pid)
            record = person.heldout_record if photos == "heldout" and person.heldout_record else person.record
            items = record_items(record, self.style)
            out += [q for q in items if q.task in tasks and q.modality in modalities]
        return out


def format_mc(question: str, options: dict[str, str], style: Style = "synthetic") -> str:
    keys = [k for k in OPTION_LETTERS if k in options]
    if style == "mllmu":
        return question + "\n" + "\n".join(f"{k}: {options[k]}" for k in keys) + "\n" + MLLMU_MC_INSTRUCTION
    return f"{question} {' '.join(f'{k}. {options[k]}' for k in keys)} {MC_INSTRUCTION}"


def format_cloze(question: str, style: Style = "synthetic") -> str:
    if style == "mllmu":
        return question.replace("__", "[Blank]") + "\n" + MLLMU_CLOZE_INSTRUCTION
    return f"{question} {CLOZE_INSTRUCTION}"


def _modality(kind: str) -> Modality:
    return "image" if kind.lower().startswith("image") else "text"


def record_items(record: dict[str, Any], style: Style = "synthetic") -> list[QAItem]:
    """Flatten one MLLMU-Bench record into QA items (the same for synthetic and downloaded data), in `style`:
    multiple choice targets the correct option's text (synthetic) or its letter (mllmu)."""
    pid = int(record["ID"])
    items: list[QAItem] = []
    for q in record.get("Generation_Task") or []:
        gen = QAItem(pid, "gen", _modality(q["Type"]), q["Question"], str(q["Ground_Truth"]), q.get("Fact", ""))
        truth = {
            "paraphrased": str(q.get("Paraphrased_Answer") or ""),
            "perturbed": tuple(q.get("Perturbed_Answers") or ()),
        }
        items.append(replace(gen, style=style, **truth))
    cls = record.get("Classification_Task") or {}
    for key, modality in (("Image_Textual_Questions", "image"), ("Pure_Text_Questions", "text")):
        for q in cls.get(key) or []:
            options = {k: str(v) for k, v in q["Options"].items() if v is not None}
            question = format_mc(q["Question"], options, style)
            texts = tuple(options[k] for k in OPTION_LETTERS if k in options)
            letter = str(q["Correct_Answer"])
            answer = letter if style == "mllmu" else options[letter]
            fact = q.get("Fact", "")
            items.append(QAItem(pid, "mc", modality, question, answer, fact, texts, q["Question"], letter, style))
    for q in record.get("Mask_Task") or []:
        items.append(
            QAItem(
                pid,
                "cloze",
                _modality(q["Type"]),
                format_cloze(q["Question"], style),
                str(q["Ground_Truth"]),
                q.get("Fact", ""),
                style=style,
            )
        )
    return items
