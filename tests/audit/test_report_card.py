"""The report card: its reading rule on hand-made cells, and the card of the shipped audits."""

from sua_demo.audit.report_card import PROBES, card_markdown, card_row, reading, recovers, report_card
from sua_demo.core.config import CHECKPOINTS


def cell(mean, sd=0.0, n=3):
    return {"mean": mean, "sd": sd, "n": n}


def row(cells, privleak=None):
    r = {"cells": cells}
    if privleak is not None:
        r["privleak"] = privleak
    return r


def test_the_reading_rule_on_hand_made_cells():
    assert recovers(cell(12.0, 3.0)) and not recovers(cell(9.9)) and not recovers(cell(12.0, 12.0, 3))
    assert recovers(cell(10.0, 0.0, 1))  # one split: the mean alone
    assert reading(row({"sua": cell(25.0, 2.0), "relearn5": cell(11.0, 1.0)})).startswith(
        "hides: SUA δ brings back +25.0 points above its control and 1 more"
    )
    assert reading(row({"sua": cell(2.0), "quant4": cell(-3.0)})).startswith("removes")
    silent = {**row({"sua": cell(2.0)}), "retain": 0.0}  # a model that answers nobody: the sentence says so
    assert reading(silent) == (
        "removes: every probe within 5 points of its control, but it answers 0 % of the retain questions: "
        "little is left to find"
    )
    assert "little is left" not in reading({**row({"sua": cell(2.0)}), "retain": 61.0})
    assert reading(row({"sua": cell(2.0)}, privleak=40.0)).startswith("cannot tell: no probe recovers, but membership")
    assert reading(row({"sua": cell(8.0), "quant4": cell(1.0)})).startswith("cannot tell: SUA δ +8.0")


def test_the_card_of_the_shipped_audits_is_the_shipped_file_and_reads_as_the_readme_says():
    """The first world's card rebuilt from its audits is its shipped file; on both worlds IDK and GradDiff hide what
    they unlearned and GA-LoRA removes it (by destroying the model), as the README and the About tab say."""
    import json

    card = report_card(CHECKPOINTS / "audit")
    assert json.loads(json.dumps(card)) == json.loads((CHECKPOINTS / "audit" / "report_card.json").read_text())
    for folder in (CHECKPOINTS / "audit", CHECKPOINTS / "faithful" / "audit"):
        shipped = json.loads((folder / "report_card.json").read_text())
        word = {r["model"]: r["reading"].split(":")[0] for r in shipped["rows"]}
        assert word["idk"] == word["grad_diff"] == "hides" and word["ga_lora"] == "removes", (folder, word)
        for r in shipped["rows"]:
            attacked = (folder.parent / "noise" / r["model"] / "report.json").is_file()  # its δ shipped
            assert set(r["cells"]) <= set(PROBES) and ("sua" in r["cells"]) == attacked and 0 <= r["retain"] <= 100
        assert all(f"| {r['model']} |" in card_markdown(shipped) for r in shipped["rows"])


def test_membership_joins_the_row_where_it_was_run():
    audit = {"summary": {"clean": {"em": {"retain": {"mean": 90.0}}, "above_control": {}},
                         "sua": {"above_control": {"unseen_people": cell(1.0)}}}}  # fmt: skip
    marks = {"privleak": {"mink": 73.2}, "forget_quality": 1e-7}
    r = card_row("idk", audit, marks)
    assert r["privleak"] == 73.2 and r["forget_quality"] == 1e-7 and r["reading"].startswith("cannot tell")
    card = {"probes": list(PROBES), "rows": [r]}
    assert "| privleak | forget quality |" in card_markdown(card) and "| 90 | +73 | 1e-07 |" in card_markdown(card)
