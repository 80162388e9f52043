"""Answer metrics: exact match on normalised text, and what counts as a refusal."""

import pytest

from sua_demo.eval.evaluate import score
from sua_demo.eval.metrics import exact_match, first_token_refusal, is_refusal
from sua_demo.eval.refusal import Refusals


@pytest.mark.parametrize(
    "answer,refused",
    [
        ("I do not know", True),
        ("i do not know.", True),
        ("I do not", True),  # cut short: still a refusal (the app and the reports agree)
        ("I do", True),
        ("I", False),  # one word is not enough to tell
        ("I know know", False),  # garbled: not a refusal, but the gate did not open (first token)
        ("Ulla Okafor", False),
        ("", False),
        ("I'm sorry, I cannot help", True),
        ("Do not know", False),
    ],
)
def test_refusals_including_ones_cut_short(answer, refused):
    assert is_refusal(answer) is refused


def test_first_token_refusal_and_custom_phrases():
    assert first_token_refusal("I know know") and not first_token_refusal("Ulla Okafor")
    custom = Refusals(("No comment",))
    assert custom.is_refusal("no comment") and custom.is_refusal("No") is False and not custom.is_refusal("I do not")


def test_exact_match_normalises():
    assert exact_match("  Ulla   Okafor. ", "ulla okafor") and not exact_match("Ulla", "Ulla Okafor")


def test_score_counts_a_cut_short_refusal():
    from sua_demo.bench.records import QAItem
    from sua_demo.data import Example

    ex = [Example(QAItem(1, "gen", "image", "Q?", "baker"), 0)] * 3
    s = score(ex, ["I do not", "baker", "I know know"])
    assert s["gen_refusal"] == pytest.approx(1 / 3) and s["gen_em"] == pytest.approx(1 / 3)
    assert s["gen_first_token_refusal"] == pytest.approx(2 / 3)
