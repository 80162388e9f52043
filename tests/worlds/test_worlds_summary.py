"""The across-worlds summary and the first-against-faithful table, on made-up reports whose means are known."""

from __future__ import annotations

import json

import pytest

from sua_demo.eval.recovery import GROUPS
from sua_demo.worlds.first import compare_worlds, summarise_worlds


def _report(clean: float, with_delta: float) -> dict:
    """A protocol report of two splits: every group at `clean`, δ at `with_delta`, every control at clean + 0.01."""
    cells = {g: {"gen_em": clean, "gen_refusal": 0.5} for g in GROUPS}
    moved = {g: {"gen_em": with_delta, "gen_refusal": 0.2} for g in GROUPS}
    near = {g: {"gen_em": clean + 0.01, "gen_refusal": 0.5} for g in GROUPS}
    split = {
        "unlearned": {"clean": cells, "sua": moved, "random": near},
        "retrain": {"clean": cells, "sua": near, "sua_on_retrain": near},
    }
    return {"splits": [split, split]}


def test_summary_means_over_worlds_and_the_comparison_table(tmp_path):
    reports = {"seed0": {"idk": _report(0.1, 0.5)}, "seed1": {"idk": _report(0.1, 0.3)}}
    first = summarise_worlds(reports)
    gain = first["models"]["idk"]["c_unseen_heldout/gain_sua"]
    assert gain["mean"] == pytest.approx(30.0) and gain["sd_worlds"] == pytest.approx(10.0) and gain["sd_splits"] == 0
    assert first["models"]["idk"]["a_attacker_images/gain_random"]["mean"] == pytest.approx(1.0)
    (tmp_path / "first.json").write_text(json.dumps(first))
    for world, value in (("seed0", 0.7), ("seed1", 0.3)):
        (tmp_path / world / "idk").mkdir(parents=True)
        (tmp_path / world / "idk" / "report.json").write_text(json.dumps(_report(0.1, value)))
    dirs = {w: tmp_path / w for w in ("seed0", "seed1", "seed2")}  # seed2 has not been attacked yet
    faithful = compare_worlds(tmp_path / "first.json", dirs, tmp_path)
    assert faithful["worlds"] == ["seed0", "seed1"]
    md = (tmp_path / "compare.md").read_text()
    assert "| c: unseen people, held-out photos | 10.0 \\| 10.0 | +30.0 \\| **+40.0** | +1.0 \\| **+1.0** |" in md
    assert json.loads((tmp_path / "compare.json").read_text())["first"] == first


def test_the_shipped_stopping_rule_sits_beside_the_first_one_over_the_worlds_both_have(tmp_path):
    """compare.md's second table: the models of the train-photo rule the worlds were first built with against those
    the shipped validation-photo rules made (issue 41); the first table compares the constructions under one rule."""
    (tmp_path / "first.json").write_text(json.dumps(summarise_worlds({"seed0": {"idk": _report(0.1, 0.5)}})))
    for root, value in (("shipped", 0.5), ("rule", 0.2)):
        (tmp_path / root / "seed0" / "idk").mkdir(parents=True)
        (tmp_path / root / "seed0" / "idk" / "report.json").write_text(json.dumps(_report(0.1, value)))
    compare_worlds(tmp_path / "first.json", {"seed0": tmp_path / "shipped" / "seed0"}, tmp_path,
                   new_rule={"seed0": tmp_path / "rule" / "seed0"})  # fmt: skip
    md = (tmp_path / "compare.md").read_text()
    assert md.startswith("# The first world against the faithful world, train-photo rule")
    second = md[md.index("## The train-photo stopping rule (as first built) against the validation-photo rules") :]
    assert (
        "### idk" in second and "| c: unseen people, held-out photos | 10.0 \\| 10.0 | +40.0 \\| **+10.0** |" in second
    )
    assert set(json.loads((tmp_path / "compare.json").read_text())) == {"first", "faithful", "new_rule"}
