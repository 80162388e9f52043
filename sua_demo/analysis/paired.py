"""Is δ's gain more than chance? A paired exact test on the same questions, and the words it allows.

A verdict compares two ways of asking the same questions of the same photos: with δ, and under its controls
(random noise of the same ε; the retrain control with the same δ). Only the questions on which they disagree
carry evidence. McNemar's exact test asks whether those discordant pairs split more unevenly than a fair coin
would: with `b` questions right with δ and wrong under every control, and `c` the other way round, the p-value is
the two-sided binomial tail of b in b + c draws at 1/2. One right answer against none (b = 1, c = 0) is p = 1.0:
no evidence, however the counts look side by side.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scipy.stats import binomtest

ALPHA = 0.05  # below this p-value the words say δ brings answers back (or damages); at or above it, no evidence


@dataclass(frozen=True)
class Paired:
    """The discordant pairs of two conditions on the same questions, and McNemar's exact p-value."""

    only_first: int  # questions right under the first condition (δ) and wrong under the second
    only_second: int  # the other way round
    p: float

    @property
    def first_wins(self) -> bool:
        return self.only_first > self.only_second and self.p < ALPHA

    @property
    def second_wins(self) -> bool:
        return self.only_second > self.only_first and self.p < ALPHA


def mcnemar(first: Sequence[bool], second: Sequence[bool]) -> Paired:
    """McNemar's exact test of `first` against `second`, question by question (the same questions, in order)."""
    if len(first) != len(second):
        raise ValueError(f"a paired test needs the same questions: {len(first)} against {len(second)}")
    b = sum(1 for x, y in zip(first, second, strict=True) if x and not y)
    c = sum(1 for x, y in zip(first, second, strict=True) if y and not x)
    p = 1.0 if b + c == 0 else float(binomtest(b, b + c, 0.5, alternative="two-sided").pvalue)
    return Paired(b, c, p)


def against_controls(delta: Sequence[bool], controls: Sequence[Sequence[bool]]) -> Paired:
    """δ against its controls taken together: a question counts as the controls' if any control gets it right.
    So `only_first` is the one count every verdict reports: answers δ brings back that no control does."""
    if not controls:
        raise ValueError("a verdict needs at least one control")
    either = [any(c[i] for c in controls) for i in range(len(delta))]
    return mcnemar(delta, either)
