"""How one answer reads: folded when degenerate, marked against the truth (✓ / ✗ / refused)."""

from __future__ import annotations

from collections import Counter

from sua_demo.eval.metrics import exact_match, is_refusal

MIN_REPEATS = 3  # a word three times or more, making up most of the answer, is a model stuck in a loop


def fold(answer: str) -> str:
    """'carpenter carpenter carpenter …' -> "(degenerate: 'carpenter' ×12)"; other answers unchanged."""
    words = answer.split()
    if len(words) < MIN_REPEATS:
        return answer
    word, count = Counter(words).most_common(1)[0]
    if count >= MIN_REPEATS and count * 2 > len(words):
        return f"(degenerate: '{word}' ×{count})"
    return answer


def mark(answer: str, truth: str | None) -> str:
    """'refused' where the model declined (also cut short), else ✓ / ✗ against a known truth, else ''."""
    if is_refusal(answer):
        return "refused"
    if truth is None:
        return ""
    return "✓" if exact_match(answer, truth) else "✗"
