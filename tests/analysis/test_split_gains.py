"""The headline over more splits (analysis/split_gains.py): each condition's gain over its own model's clean photo,
per split and group, and the table's cells over the shipped splits, the later ones and all."""

from __future__ import annotations

from sua_demo.analysis.split_gains import GROUPS, split_gains, table


def _split(seed: int, sua: float, random: float, same: float, own: float) -> dict:
    def cond(em: float) -> dict:
        return {g: {"gen_em": em} for g in GROUPS.values()}

    return {
        "split": {"seed": seed},
        "unlearned": {"clean": cond(0.1), "sua": cond(0.1 + sua), "random": cond(0.1 + random)},
        "retrain": {"clean": cond(0.05), "sua": cond(0.05 + same), "sua_on_retrain": cond(0.05 + own)},
    }


def test_gains_are_per_model_and_the_table_reads_each_batch_of_splits_apart():
    first = split_gains({"splits": [_split(0, 0.10, 0.0, 0.02, 0.01), _split(1, 0.20, 0.04, 0.0, 0.0)]})
    later = split_gains({"splits": [_split(3, 0.30, 0.0, -0.02, 0.0)]})
    assert round(first[0]["c_unseen_heldout"]["δ"], 6) == 10.0
    assert round(first[0]["a_attacker_images"]["same δ on retrain"], 6) == 2.0  # over the retrain's own clean
    text = table(first | later, [0, 1])
    row = next(line for line in text.splitlines() if line.startswith("| unseen people"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:4] == ["+15.0 ± 5.0", "+30.0 ± 0.0", "+20.0 ± 8.2"]  # splits 0-1, split 3, all three
    assert cells[-1] == "+18.0 ± 9.1"  # beyond the best control per split: 10 - 2, 20 - 4, 30 - 0


def test_the_attack_table_has_a_row_per_attack_and_group_with_every_control():
    from sua_demo.analysis.split_gains import attack_table

    gains = split_gains({"splits": [_split(0, 0.10, 0.0, 0.02, 0.01), _split(1, 0.20, 0.04, 0.0, 0.0)]})
    text = attack_table({"shipped": gains, "adaptive": gains})
    rows = [line for line in text.splitlines() if line.startswith("| shipped") or line.startswith("| adaptive")]
    assert len(rows) == 2 * len(GROUPS)
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert cells == ["shipped", "the attacker's photos", "+15.0 ± 5.0", "+2.0 ± 2.0", "+1.0 ± 1.0", "+0.5 ± 0.5",
                     "+12.0 ± 4.0"]  # fmt: skip
