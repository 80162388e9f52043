"""The README's "What it finds" figures and readings are the shipped reports' own: each is rebuilt here from the
report files and looked for in the README, so a report rebuilt with other figures, or a README edited by hand,
fails until the two agree again."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
FIRST = json.loads((ROOT / "checkpoints" / "audit" / "report_card.json").read_text())
FAITHFUL = json.loads((ROOT / "checkpoints" / "faithful" / "audit" / "report_card.json").read_text())
COLUMNS = {"SUA δ": "sua", "text only": "text_only", "rephrased question": "rephrased", "4-bit": "quant4",
           "relearn 20": "relearn20", "soft prompt 5": "soft_prompt5", "name in photo": "typographic",
           "rephrased image": "rephrased_image"}  # fmt: skip


def points(value: float) -> str:
    """A gain as the README writes it: signed, one decimal, a typographic minus."""
    said = f"{value:+.1f}"
    return "+0.0" if said == "-0.0" else said.replace("-", "−")


def rows(card: dict) -> dict[str, dict]:
    return {r["model"]: r for r in card["rows"]}


def test_the_first_worlds_report_card_table_is_the_shipped_card():
    block = README.split("  | method | SUA δ |", 1)[1].split("\n\n", 1)[0]
    header, _, *lines = ("| method | SUA δ |" + block).splitlines()
    head = [c.strip() for c in header.split("|")[1:-1]]
    table = [[c.strip().strip("*") for c in line.split("|")[1:-1]] for line in lines]
    shipped = rows(FIRST)
    assert [t[0] for t in table] and {t[0] for t in table} == set(shipped), "each shipped method has one row"
    for t in table:
        row = shipped[t[0]]
        for name, cell in zip(head[1:], t[1:], strict=True):
            if name in COLUMNS:
                assert cell == points(row["cells"][COLUMNS[name]]["mean"]), (t[0], name, cell)
            elif name == "retain":
                assert cell == f"{row['retain']:.0f}", (t[0], cell)
            else:  # the reading's word, and the probe it names where the README names one
                assert name == "reading" and cell.split(" (")[0] == row["reading"].split(":")[0], (t[0], cell)
                if "relearn 50:" in cell:
                    assert cell.endswith(f"relearn 50: {points(row['cells']['relearn50']['mean'])})"), cell
    hiding = sum(r["reading"].startswith("hides") for r in FIRST["rows"])
    count = {5: "Five", 6: "Six", 7: "Seven"}[hiding], {7: "seven"}[len(FIRST["rows"])]
    assert f"{count[0]} of the {count[1]} methods *hide*" in README


def test_the_faithful_worlds_probes_in_the_readme_are_its_report_card():
    card = rows(FAITHFUL)
    idk, gd = card["idk"]["cells"], card["grad_diff"]["cells"]
    said = [
        f"relearning 50 steps brings back **{points(idk['relearn50']['mean'])}**",
        f"a soft prompt of 5 vectors {points(idk['soft_prompt5']['mean'])}",
        f"it now refuses:\n  {points(idk['text_only']['mean'])})",
        f"GradDiff gives back **{points(gd['text_only']['mean'])}** by name",
        f"IDK (privleak +{card['idk']['privleak']:.0f} %",
    ]
    for phrase in said:
        assert phrase in README, phrase


def test_the_robust_models_figures_in_the_readme_are_their_reports():
    card = rows(FAITHFUL)
    robust, gd = card["idk_robust"], card["grad_diff_robust"]["cells"]
    noise = {m: json.loads((ROOT / "checkpoints" / "faithful" / "noise" / m / "report.json").read_text())
             for m in ("idk", "grad_diff", "idk_robust", "grad_diff_robust")}  # fmt: skip

    def attacker(model: str) -> str:
        return points(noise[model]["summary"]["unlearned/a_attacker_images/gain_sua"]["mean"])

    said = [
        f"{attacker('idk_robust')} on IDK's attacker photos (plain {attacker('idk')})",
        f"{attacker('grad_diff_robust')} on GradDiff's (plain\n  {attacker('grad_diff')})",
        f"relearning 50 steps brings back\n  {points(robust['cells']['relearn50']['mean'])} on IDK against δ",
        f"a soft prompt {points(robust['cells']['soft_prompt5']['mean'])}, privleak +{robust['privleak']:.0f} %",
        f"GradDiff against δ still answers by name ({points(gd['text_only']['mean'])})",
    ]
    for phrase in said:
        assert phrase in README, phrase
    flat = " ".join(README.split())
    folder = ROOT / "checkpoints/faithful/robust_attacks"
    for model, name in (("idk_robust", "IDK against δ"), ("grad_diff_robust", "GradDiff against δ")):
        reading = json.loads((folder / model / "reading.json").read_text())["reading"]
        said = reading.replace("(provisional)", "(provisional: its adaptive attack is running)")
        assert f"{name} *{said}*" in flat, (model, reading)

    def adaptive(model: str) -> tuple[dict, list[str]]:
        said = json.loads((folder / model / "reading.json").read_text())
        row = next(line for line in (folder / model / "reading.md").read_text().splitlines()
                   if line.startswith("| adaptive") and "the attacker's photos" in line)  # fmt: skip
        cells = [c.split(" ± ")[0].strip() for c in row.strip("|").split("|")]
        return next(a for a in said["attacks"] if a["name"].startswith("adaptive")), cells

    idk, cells = adaptive("idk_robust")
    assert f"{points(idk['beyond'])} beyond the control on unseen people (p = {idk['p']:.2f})" in flat
    assert f"gets {cells[2]} on IDK against δ's attacker photos, under the {cells[5]} a δ optimised" in flat
    gd, cells = adaptive("grad_diff_robust")
    assert f"GradDiff against δ it gets {cells[2]} on the attacker photos, beside the {cells[5]} of a δ" in flat
    assert f"and {points(gd['beyond'])} beyond the control on unseen people." in flat
