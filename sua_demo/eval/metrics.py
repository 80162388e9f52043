"""Answer metrics: exact match, ROUGE-L, choice accuracy and refusal, on normalised text."""

from __future__ import annotations

from functools import lru_cache

from sua_demo.eval.refusal import DEFAULT, normalise


def exact_match(prediction: str, truth: str) -> bool:
    return normalise(prediction) == normalise(truth)


def choice_match(prediction: str, letter: str) -> bool:
    """Multiple choice: the first word of the answer is the option letter."""
    words = normalise(prediction).split()
    return bool(words) and words[0] == letter.lower()


def is_refusal(prediction: str) -> bool:
    """A refusal, or one cut short ("I do not"); see eval/refusal.py."""
    return DEFAULT.is_refusal(prediction)


def first_token_refusal(prediction: str) -> bool:
    """The refusal gate opened or not, judged on the first word only (a garbled refusal still counts)."""
    return DEFAULT.first_token(prediction)


@lru_cache(maxsize=1)
def _scorer():  # type: ignore[no-untyped-def]
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)


def rouge_l(prediction: str, truth: str) -> float:
    return float(_scorer().score(truth, prediction)["rougeL"].fmeasure)
