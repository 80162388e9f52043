"""An attack's gains per attacker/unseen split, read the way the headline reads them (generation exact match, points,
each condition's gain over the clean photo on the same model, every control): the default world's headline over
more splits (issue 58: the shipped report's beside splits run later, blind) and each attack on a robust model
(docs/robust.md), group by group."""

from __future__ import annotations

from typing import Any

import numpy as np

CONDITIONS = {
    "δ": ("unlearned", "sua"),
    "random noise": ("unlearned", "random"),
    "same δ on retrain": ("retrain", "sua"),
    "δ optimised on retrain": ("retrain", "sua_on_retrain"),
}
GROUPS = {
    "the attacker's photos": "a_attacker_images",
    "their held-out photos": "b_attacker_heldout",
    "unseen people, held-out photos": "c_unseen_heldout",
}


def split_gains(report: dict[str, Any]) -> dict[int, dict[str, dict[str, float]]]:
    """split number -> group -> condition -> gain in points over the clean photo on the same model."""
    out: dict[int, dict[str, dict[str, float]]] = {}
    for split in report["splits"]:
        k = int(split["split"]["seed"])  # the split number: its seed draws the attacker and unseen people
        out[k] = {
            group: {
                name: 100 * (split[model][cond][group]["gen_em"] - split[model]["clean"][group]["gen_em"])
                for name, (model, cond) in CONDITIONS.items()
            }
            for group in GROUPS.values()
        }
    return out


def _cell(values: list[float]) -> str:
    return f"{np.mean(values):+.1f} ± {np.std(values):.1f}" if values else "–"


def table(gains: dict[int, dict[str, dict[str, float]]], first: list[int]) -> str:
    """Per group: δ over the `first` splits, over the others and over all, each control over all, and δ beyond the
    best control per split (mean ± sd over splits), in markdown."""
    later = sorted(k for k in gains if k not in first)
    head = ["group", f"δ, splits {_names(first)}", f"δ, splits {_names(later)}", f"δ, all {len(gains)}"]
    head += [f"{c}, all" for c in list(CONDITIONS)[1:]] + ["δ beyond the best control, all"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---|" * (len(head) - 1)]
    for label, group in GROUPS.items():
        sua = {k: g[group]["δ"] for k, g in gains.items()}
        controls = [_cell([g[group][c] for g in gains.values()]) for c in list(CONDITIONS)[1:]]
        beyond = _beyond(gains, group)
        row = [
            label,
            _cell([sua[k] for k in first if k in sua]),
            _cell([sua[k] for k in later]),
            _cell(list(sua.values())),
        ]
        lines.append("| " + " | ".join([*row, *controls, _cell(beyond)]) + " |")
    return "\n".join(lines) + "\n"


def _beyond(gains: dict[int, dict[str, dict[str, float]]], group: str) -> list[float]:
    """δ's gain less the best control's, per split."""
    return [g[group]["δ"] - max(v for c, v in g[group].items() if c != "δ") for g in gains.values()]


def _names(splits: list[int]) -> str:
    return ", ".join(str(k) for k in splits)


def attack_table(attacks: dict[str, dict[int, dict[str, dict[str, float]]]]) -> str:
    """Per attack (its gains per split) and group: δ and each control, and δ beyond the best control, mean ± sd over
    splits, in markdown."""
    head = ["attack", "group", *CONDITIONS, "δ beyond the best control"]
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---|" * (len(head) - 2)]
    for attack, gains in attacks.items():
        for label, group in GROUPS.items():
            cells = [_cell([g[group][c] for g in gains.values()]) for c in CONDITIONS]
            beyond = _beyond(gains, group)
            lines.append("| " + " | ".join([attack, label, *cells, _cell(beyond)]) + " |")
    return "\n".join(lines) + "\n"
