"""One person's story in numbers: their image questions on every photo, under each condition of the protocol.

Conditions: `vanilla` (before unlearning, clean photo), `clean`, `delta` and `random` (the unlearned model on
the clean photo, with delta, with random noise of the same eps) and `retrain_delta` (the retrain control, which
never saw the forget people, with the same delta). A model that is not given is left out, not guessed.
"""

from __future__ import annotations

import torch

from sua_demo.attacks import Noise
from sua_demo.dataset.records import Bench
from sua_demo.eval.evaluate import answer
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, ImageBank, image_examples

Model = tuple[VisionLanguageAdapter, ImageBank]


def person_examples(bench: Bench, pid: int) -> tuple[list[Example], list[int]]:
    """Every generation question on every photo (train and held-out), photo-major, and the photo indices."""
    examples = image_examples(bench, [pid], "train") + image_examples(bench, [pid], "heldout")
    return examples, sorted({e.photo for e in examples if e.photo is not None})


def _grid(answers: list[str], n_photos: int) -> list[list[str]]:
    per = len(answers) // n_photos
    return [answers[i * per : (i + 1) * per] for i in range(n_photos)]


@torch.inference_mode()
def person_answers(
    bench: Bench,
    pid: int,
    unlearned: Model,
    noise: Noise,
    random: Noise,
    vanilla: Model | None = None,
    retrain: Model | None = None,
) -> dict[str, list[list[str]]]:
    """answers[condition][photo][question] for one person (photo-major, the bench's question order)."""
    examples, photos = person_examples(bench, pid)
    adapter, bank = unlearned
    x = bank.get(examples)
    assert x is not None  # image_examples only
    out = {
        "clean": answer(adapter, bank, examples),
        "delta": answer(adapter, bank, examples, images=noise.apply(x)),
        "random": answer(adapter, bank, examples, images=random.apply(x)),
    }
    if vanilla is not None:
        out["vanilla"] = answer(vanilla[0], vanilla[1], examples)
    if retrain is not None:
        out["retrain_delta"] = answer(retrain[0], retrain[1], examples, images=noise.apply(retrain[1].get(examples)))
    return {k: _grid(v, len(photos)) for k, v in out.items()}
