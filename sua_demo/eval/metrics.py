"""Answer metrics: exact match, ROUGE-L, choice accuracy and refusal, on normalised text."""

from __future__ import annotations

from functools import lru_cache

from sua_demo.core.refusal import DEFAULT, normalise


def exact_match(prediction: str, truth: str) -> bool:
    return normalise(prediction) == normalise(truth)


def choice_match(prediction: str, letter: str) -> bool:
    """Multiple choice: the first word of the answer is the option letter."""
    words = normalise(prediction).split()
    return bool(words) and words[0] == letter.lower()


def is_refusal(prediction: str) -> bool:
    """A refusal, or one cut short ("I do not"); see sua_demo/core/refusal.py."""
    return DEFAULT.is_refusal(prediction)


@lru_cache(maxsize=1)
def _scorer():  # type: ignore[no-untyped-def]
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)


def rouge_l(prediction: str, truth: str) -> float:
    return float(_scorer().score(truth, prediction)["rougeL"].fmeasure)


@lru_cache(maxsize=1)
def _stemmed():  # type: ignore[no-untyped-def]
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)


def mllmu_generation(prediction: str, truth: str) -> dict[str, float]:
    """MLLMU-Bench's generation scores: ROUGE-1/2/L F1 with stemming, and sentence BLEU on whitespace tokens
    with smoothing (method 1), as its eval.py reports them."""
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    rouge = _stemmed().score(truth, prediction)
    bleu = sentence_bleu([truth.split()], prediction.split(), smoothing_function=SmoothingFunction().method1)
    return {"rouge1": rouge["rouge1"].fmeasure, "rouge2": rouge["rouge2"].fmeasure,
            "rougeL": rouge["rougeL"].fmeasure, "bleu": float(bleu)}  # fmt: skip


def mllmu_cloze(prediction: str, truth: str) -> bool:
    """MLLMU-Bench's cloze: the truth appears anywhere in the answer, case aside."""
    return truth.lower() in prediction.lower()


def mllmu_choice(prediction: str, letter: str, options: tuple[str, ...]) -> bool:
    """MLLMU-Bench's multiple choice: the answer's first character, upper-cased, if it names an option."""
    first = prediction.strip()[:1].upper()
    return first == letter.upper() and first in "ABCD"[: len(options)]
