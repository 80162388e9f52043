"""The verdict's paired test against hand-computed McNemar exact p-values, and the words it draws."""

import pytest

from sua_demo.analysis.paired import ALPHA, against_controls, mcnemar
from sua_demo.analysis.verdict import verdict
from sua_demo.ui.shared.story_table import reading
from sua_demo.ui.shared.words import p_text


def right(n: int, of: int, start: int = 0) -> list[bool]:
    """`n` right answers out of `of`, the first right one at `start`."""
    return [start <= i < start + n for i in range(of)]


@pytest.mark.parametrize(
    "delta, control, b, c, p",
    [
        (right(1, 30), right(0, 30), 1, 0, 1.0),  # 1 of 30 against 0 of 30: one discordant pair, p = 2 x 1/2
        (right(7, 10), right(3, 10), 4, 0, 2 / 2**4),  # the same three right under both: 4 to 0
        (right(7, 10), right(3, 10, start=7), 7, 3, 2 * (120 + 45 + 10 + 1) / 2**10),  # disjoint: 7 to 3
        (right(9, 35), right(1, 35), 8, 0, 2 / 2**8),  # 9 of 35 against 1 of 35, 8 discordant for δ: p ≈ 0.008
        (right(0, 35), right(0, 35), 0, 0, 1.0),  # nothing to compare
    ],
    ids=["1of30-vs-0of30", "7of10-vs-3of10-nested", "7of10-vs-3of10-disjoint", "9of35-vs-1of35", "none"],
)
def test_mcnemar_matches_the_hand_computed_p_value(delta, control, b, c, p):
    t = mcnemar(delta, control)
    assert (t.only_first, t.only_second) == (b, c)
    assert t.p == pytest.approx(p, abs=1e-12)
    assert mcnemar(control, delta).p == pytest.approx(p, abs=1e-12)  # two-sided: the same either way round


def test_the_hand_computed_cases_fall_where_the_words_say():
    assert not mcnemar(right(1, 30), right(0, 30)).first_wins  # p = 1.0: no evidence
    assert not mcnemar(right(7, 10), right(3, 10)).first_wins  # p = 0.125
    assert mcnemar(right(9, 35), right(1, 35)).first_wins  # p ≈ 0.0078 < ALPHA
    assert mcnemar(right(1, 35), right(9, 35)).second_wins and ALPHA == 0.05
    assert p_text(2 / 2**8) == "p = 0.0078" and p_text(1.0) == "p = 1.00" and p_text(1e-6) == "p < 0.001"


def test_the_controls_count_together_so_the_count_is_what_no_control_gets():
    delta = right(9, 35)
    random, retrain = right(1, 35), right(1, 35, start=1)  # each gets one of δ's right, a different one
    t = against_controls(delta, [random, retrain])
    assert (t.only_first, t.only_second) == (7, 0) and t.p == pytest.approx(2 / 2**7)
    with pytest.raises(ValueError, match="same questions"):
        mcnemar(right(1, 3), right(1, 4))


def _verdict(delta: list[bool], random: list[bool], retrain: list[bool], clean: list[bool]):
    """A person's verdict from right/wrong answers laid out as 7 photos x 5 questions (truth 'x')."""
    say = {True: "x", False: "y"}
    grid = {
        cond: [[say[v[p * 5 + q]] for q in range(5)] for p in range(7)]
        for cond, v in {"clean": clean, "delta": delta, "random": random, "retrain_delta": retrain}.items()
    }
    return verdict("#1 Someone", ["x"] * 5, grid)


def test_the_words_follow_the_test_not_the_counts():
    none = right(0, 35)
    weak = _verdict(right(1, 35), none, none, none)  # 1 answer brought back, no control: looks like a win
    assert weak.count == 1 and weak.beyond.p == 1.0
    assert reading(weak, "unseen by δ").startswith("No evidence beyond the controls (p = 1.00)")
    strong = _verdict(right(9, 35), right(1, 35), none, none)
    assert strong.count == 8 and "δ brings back 8 answers that no control does (p = 0.0078)" in reading(strong, "x")
    worse = _verdict(right(1, 35), right(9, 35), none, none)
    assert reading(worse, "attacker set").startswith("δ damages")
    hurt = _verdict(right(2, 35), none, none, right(12, 35))  # a retain person: 10 right answers lost to δ
    assert "δ damages their answers, 10 right on the clean photos" in reading(hurt, "retain")
    kept = _verdict(right(12, 35), none, none, right(12, 35))
    assert "does not measurably get in the way" in reading(kept, "retain")
    assert "δ brings back 8 of 35 answers" in strong.headline()


def test_the_batch_ends_with_what_the_same_test_says_per_group():
    from sua_demo.analysis.paired import Paired
    from sua_demo.ui.batch.view import closing_sentence

    said = closing_sentence(
        {"a_attacker_images": mcnemar(right(12, 40), right(2, 40)), "c_unseen_heldout": Paired(1, 0, 1.0)}
    )
    assert "δ brings back 10 answers that random noise does not (p = 0.002)" in said
    assert "no evidence beyond random noise (p = 1.00; 1 against 0)" in said
    assert said.startswith("Against random noise of the same ε, on the same questions:")


def test_the_live_audits_closing_sentence_is_the_paired_test_adjusted_for_the_probes_tried():
    """The strongest probe against the retrain control on the same questions, Bonferroni over the probes: 9 answers
    back against none is p = 0.0039, x2 probes = 0.0078; 2 against 0 (p = 0.5) is no evidence."""
    from sua_demo.ui.audit.view import closing_sentence

    def run(first, second):
        return [{"paired": {"unlearned": first, "retrain": second}}]

    strong = {"relearn50": run([True] * 9 + [False], [False] * 10), "sua": run([True, False], [False, True])}
    said = closing_sentence({"runs": strong})
    assert said.startswith("Relearn 50 steps brings back 9 answers") and "p = 0.0078" in said and "2 probes" in said
    weak = {"relearn50": run([True, True, False], [False, False, False]), "sua": run([False], [False])}
    said = closing_sentence({"runs": weak})
    assert said.startswith("No probe brings back more") and "relearn 50 steps, 2 against 0" in said, said
    assert "p = 1.00" in said  # 0.5 x 2 probes, capped at 1
    assert closing_sentence({"runs": {"sua": [{}]}}) == ""  # a shipped audit without paired answers says nothing


def test_guided_examples_show_people_delta_never_saw_first_and_its_own_people_only_when_none_passes(monkeypatch):
    """The faithful world's IDK under the shipped rule: no person δ never saw passes the paired test, so a first visit
    showed no example at all; the people δ was fitted on stand in, marked so the page can say whose they are."""
    from types import SimpleNamespace

    from sua_demo.analysis import examples

    passing = {3: 0.01, 7: 0.2, 11: 0.03}
    monkeypatch.setattr(examples, "_example", lambda bench, pid, *a: {"person": pid, "p": passing[pid],
                        "beyond_controls": 4, "wins_on_photo": 1} if pid in passing else None)  # fmt: skip
    split = SimpleNamespace(unseen_ids=[1, 2], attacker_ids=[3, 4, 7])
    found = examples.guided_examples(None, split, None, None, None)
    assert [(e["person"], e["fitted_on"]) for e in found] == [(3, True), (7, True)]
    split = SimpleNamespace(unseen_ids=[1, 11], attacker_ids=[3])
    assert [(e["person"], e["fitted_on"]) for e in examples.guided_examples(None, split, None, None, None)] == [
        (11, False)
    ]
    assert examples.guided_examples(None, SimpleNamespace(unseen_ids=[1], attacker_ids=[2]), None, None, None) == []
