"""Answer metrics: exact match on normalised text, and what counts as a refusal."""

import pytest

from sua_demo.core.refusal import DEFAULT, Refusals
from sua_demo.eval.evaluate import score
from sua_demo.eval.metrics import exact_match, is_refusal


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
    assert DEFAULT.first_token("I know know") and not DEFAULT.first_token("Ulla Okafor")
    custom = Refusals(("No comment",))
    assert custom.is_refusal("no comment") and custom.is_refusal("No") is False and not custom.is_refusal("I do not")


def test_exact_match_normalises():
    assert exact_match("  Ulla   Okafor. ", "ulla okafor") and not exact_match("Ulla", "Ulla Okafor")


def test_score_counts_a_cut_short_refusal():
    from sua_demo.dataset.records import QAItem
    from sua_demo.models.examples import Example

    ex = [Example(QAItem(1, "gen", "image", "Q?", "baker"), 0)] * 3
    s = score(ex, ["I do not", "baker", "I know know"])
    assert s["gen_refusal"] == pytest.approx(1 / 3) and s["gen_em"] == pytest.approx(1 / 3)
    assert s["gen_first_token_refusal"] == pytest.approx(2 / 3)


def test_a_model_that_refuses_in_its_own_words_is_scored_with_them():
    from sua_demo.dataset.records import QAItem
    from sua_demo.models.examples import Example

    ex = [Example(QAItem(1, "gen", "image", "Q?", "baker"), 0)] * 2
    own = Refusals(("I'd rather not say",))
    assert score(ex, ["I'd rather not say.", "baker"], own)["gen_refusal"] == pytest.approx(0.5)
    assert score(ex, ["I'd rather not say.", "baker"])["gen_refusal"] == 0.0  # not one of the default phrases


def test_mllmu_style_scoring_follows_its_eval():
    from sua_demo.dataset.records import QAItem
    from sua_demo.eval.metrics import mllmu_choice, mllmu_cloze, mllmu_generation
    from sua_demo.models.examples import Example

    assert mllmu_cloze("I think it is Blue, clearly", "blue") and not mllmu_cloze("green", "blue")
    assert mllmu_choice("b. because", "B", ("x", "y", "z", "w")) and not mllmu_choice("E", "E", ("x", "y"))
    g = mllmu_generation("He works as a baker in Dover", "baker")
    assert g["rouge1"] > 0 and 0 < g["bleu"] < 1 and mllmu_generation("bakers", "baker")["rouge1"] == 1.0  # stemmed
    items = [
        QAItem(1, "cloze", "image", "q", "blue", style="mllmu"),
        QAItem(1, "mc", "image", "q", "B", options=("x", "y", "z", "w"), letter="B", style="mllmu"),
        QAItem(1, "gen", "image", "q", "baker", style="mllmu"),
    ]
    s = score([Example(q, 0) for q in items], ["It is blue.", "B", "a baker"])
    assert s["cloze_acc"] == 1.0 and s["cloze_em"] == 0.0 and s["mc_acc"] == 1.0 and "gen_bleu" in s
    assert items[0].max_new_tokens == 50
