"""Membership inference, privleak, truth ratio and forget quality: each figure against a hand computation on small
made-up scores, then end to end on a micro model and a bench with holdout people (random weights exercise the code;
the shipped models' figures are the report card's)."""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest

from sua_demo.eval.mia import MIAS, TokenStats, auc, privleak, token_stats
from sua_demo.eval.mia.scores import membership_examples, mia_report
from sua_demo.eval.truth_ratio import forget_quality, truth_ratio, truth_ratios

FIVE = TokenStats(
    logp=np.array([-1.0, -2.0, -3.0, -4.0, -5.0]),
    mu=np.array([-2.0, -2.0, -2.0, -2.0, -2.0]),
    sigma=np.array([1.0, 2.0, 1.0, 2.0, 4.0]),
    text="Aldmoor",
)


def test_every_attack_scores_as_computed_by_hand():
    assert MIAS.names() == ["loss", "mink", "mink++", "zlib"]
    assert MIAS.get("loss")().score(FIVE) == pytest.approx(-3.0)
    assert MIAS.get("zlib")().score(FIVE) == pytest.approx(-3.0 / len(zlib.compress(b"Aldmoor")))
    assert MIAS.get("mink")().score(FIVE) == pytest.approx(-4.5)  # the lowest 40 %: -5 and -4
    # standardised: (1, 0, -1, -1, -0.75); the lowest two are -1 and -1
    assert MIAS.get("mink++")().score(FIVE) == pytest.approx(-1.0)
    one = TokenStats(np.array([-0.5]), np.array([-1.0]), np.array([0.5]), "x")
    assert MIAS.get("mink")().score(one) == pytest.approx(-0.5)  # a one-token answer keeps its token
    assert MIAS.get("mink++")().score(one) == pytest.approx(1.0)


def test_auc_counts_pairs_and_privleak_is_relative_to_the_reference():
    assert auc([3, 2], [1, 2]) == pytest.approx(3.5 / 4)  # 3 wins, 1 tie of 4 pairs
    assert auc([1, 1], [1, 1]) == 0.5 and auc([0], [1]) == 0.0
    assert privleak(0.9, 0.5) == pytest.approx(80.0)
    assert privleak(0.5, 0.5) == 0.0 and privleak(0.4, 0.5) == pytest.approx(-20.0)


def test_truth_ratio_and_forget_quality_by_hand():
    # the wrong answers' geometric mean, sqrt(0.25 * 0.125), over the right one's 0.5 (their arithmetic mean: 0.375)
    assert truth_ratio(math.log(0.5), [math.log(0.25), math.log(0.125)]) == pytest.approx(2**-1.5)
    assert truth_ratio(math.log(0.2), [math.log(0.2)] * 3) == pytest.approx(1.0)
    rng = np.random.default_rng(0)
    same = rng.uniform(0, 1, 200)
    assert forget_quality(same, same) == pytest.approx(1.0)
    assert forget_quality(rng.uniform(0, 0.2, 200), rng.uniform(0.5, 1, 200)) < 1e-6


@pytest.fixture(scope="module")
def holdout_bench():
    from sua_demo.core.config import BenchConfig
    from sua_demo.dataset import build_bench

    cfg = BenchConfig(n_people=8, photos_per_person=3, train_photos=2, forget_fraction=0.25, seed=1, holdout_people=2)
    return build_bench(cfg)


def test_the_bench_carries_a_paraphrased_answer_and_wrong_ones_of_the_same_type(holdout_bench):
    from sua_demo.dataset.profiles import FACT_POOLS

    items = holdout_bench.items([1, 9], tasks=("gen",))
    assert items and all(q.paraphrased and len(q.perturbed) == 3 for q in items)
    for q in items:
        assert q.answer in q.paraphrased and not any(q.answer in p.split() for p in q.perturbed if q.fact != "name")
        if q.fact != "name":  # each wrong answer is the same sentence with another value of the fact's pool
            at = q.paraphrased.index(q.answer)
            head, tail = q.paraphrased[:at], q.paraphrased[at + len(q.answer) :]
            assert all(p.startswith(head) and p.endswith(tail) for p in q.perturbed)
            values = {p[len(head) : len(p) - len(tail)] for p in q.perturbed}
            assert len(values) == 3 and values <= set(FACT_POOLS[q.fact])


def test_token_stats_agree_with_the_adapter_and_the_report_runs_on_holdout_people(micro_adapter, holdout_bench):
    from sua_demo.models.examples import ImageBank

    bank = ImageBank(holdout_bench, micro_adapter)
    members = membership_examples(holdout_bench, holdout_bench.forget_ids)
    outsiders = membership_examples(holdout_bench, holdout_bench.holdout_ids)
    stats = token_stats(micro_adapter, bank, members[:3])
    q = [e.item.question for e in members[:3]]
    logp, mask = micro_adapter.answer_logprobs(bank.get(members[:3]), q, [e.item.answer for e in members[:3]])
    for s, row, m in zip(stats, logp, mask, strict=True):
        np.testing.assert_allclose(s.logp, row[m].detach().numpy(), rtol=1e-5, atol=1e-6)
        assert (s.mu <= 0).all() and (s.sigma >= 0).all()
    report = mia_report(micro_adapter, bank, members, outsiders)
    assert set(report["attacks"]) == set(MIAS.names())
    assert report["counts"] == {"members": len(members), "nonmembers": len(outsiders)}
    assert all(0 <= r["auc"] <= 1 for r in report["attacks"].values())
    ratios = truth_ratios(micro_adapter, bank, members)
    assert len(ratios) == len(members) and (ratios > 0).all()


def test_sua_mia_runs_on_a_users_own_items(saved_micro, tmp_path, capsys):
    """Two JSON Lines files, pictures beside them, through the CLI; a broken line is named, not a traceback."""
    import json

    from PIL import Image

    from sua_demo.cli import main

    Image.new("RGB", (40, 40), (200, 120, 90)).save(tmp_path / "face.png")
    rows = [{"question": "Where was this person born?", "answer": "Aldmoor", "image": "face.png"}]
    rows.append({"question": "Where was Iona Rusk born?", "answer": "Glenmere"})
    (tmp_path / "in.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    (tmp_path / "out.jsonl").write_text(json.dumps({**rows[0], "answer": "Lowmarsh"}))
    main(
        [
            "mia",
            str(saved_micro),
            "--members",
            str(tmp_path / "in.jsonl"),
            "--nonmembers",
            str(tmp_path / "out.jsonl"),
            "--out",
            str(tmp_path / "r.json"),
        ]
    )
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["counts"] == {"members": 2, "nonmembers": 1} and set(report["attacks"]) == set(MIAS.names())
    assert "AUC" in capsys.readouterr().out
    (tmp_path / "bad.jsonl").write_text('{"question": "x"}')
    bad = [
        "mia",
        str(saved_micro),
        "--members",
        str(tmp_path / "bad.jsonl"),
        "--nonmembers",
        str(tmp_path / "out.jsonl"),
    ]
    assert main(bad) == 2 and "bad.jsonl line 1 needs" in capsys.readouterr().err


def test_the_membership_card_reads_every_model_against_the_retrain_control(saved_micro, tmp_path, capsys):
    """A world of micro models through `sua membership`: the retrain control's privleak is 0 and its forget quality
    1 by construction (it is its own reference); a model of other weights is measured, not copied."""
    import json
    import shutil

    from sua_demo.cli import main
    from sua_demo.core.config import BenchConfig, to_dict

    bench = BenchConfig(n_people=8, photos_per_person=3, train_photos=2, forget_fraction=0.25, seed=1, holdout_people=2)
    for name in ("vanilla", "retrain"):
        shutil.copytree(saved_micro, tmp_path / name)
        (tmp_path / name / "sua_config.json").write_text(json.dumps({"configs": [to_dict(bench)]}))
    assert main(["membership", str(tmp_path), "--names", "vanilla"]) == 0
    card = json.loads((tmp_path / "membership.json").read_text())
    assert list(card["models"]) == ["retrain", "vanilla"]
    ret = card["models"]["retrain"]
    assert all(v == 0 for v in ret["privleak"].values()) and ret["forget_quality"] == pytest.approx(1.0)
    assert card["counts"] == {"members": 2 * (2 * 5 + 4), "nonmembers": 2 * (2 * 5 + 4)}
    assert "| retrain |" in capsys.readouterr().out


def test_an_updated_card_replaces_only_the_rebuilt_rows_and_only_on_the_same_reference():
    """`sua membership --update`: a world whose IDK and GradDiff were rebuilt keeps the other models' rows (a second
    retrain control is hours of work); another retrain control or other items would mix two references."""
    from sua_demo.analysis.membership import updated_card
    from sua_demo.core.errors import BadValueError

    def card(**rows: float) -> dict:
        return {"counts": {"members": 4, "nonmembers": 4}, "models": {k: {"auc": {"loss": v}} for k, v in rows.items()}}

    old, fresh = card(retrain=0.5, idk=0.9, npo=0.2), card(retrain=0.5, idk=0.6)
    assert updated_card(old, fresh)["models"] == {"retrain": {"auc": {"loss": 0.5}}, "idk": {"auc": {"loss": 0.6}},
                                                  "npo": {"auc": {"loss": 0.2}}}  # fmt: skip
    with pytest.raises(BadValueError, match="another retrain control"):
        updated_card(old, card(retrain=0.55, idk=0.6))
