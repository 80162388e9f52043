"""Membership and forget quality of a world's models, each read against the world's retrain control: the MIA AUC of
forget people against holdout people (whom no model trained on) per attack, MUSE's privleak, and TOFU's forget
quality (the KS p-value of truth ratios on the forget people's questions). `sua membership` writes it."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

from sua_demo.core.config import BenchConfig
from sua_demo.core.errors import BadValueError
from sua_demo.dataset import build_bench
from sua_demo.eval.mia import MIAS, mia_report, privleak
from sua_demo.eval.mia.scores import membership_examples
from sua_demo.eval.truth_ratio import forget_quality, truth_ratios
from sua_demo.models.examples import ImageBank
from sua_demo.models.loading import load_adapter


def recorded_bench(folder: Path) -> BenchConfig:
    """The bench a model was trained on, from its own record (sua_config.json)."""
    record = json.loads((folder / "sua_config.json").read_text())
    found = [c for c in record.get("configs", []) if c.get("_type") == "BenchConfig"]
    if not found:
        raise BadValueError(f"{folder} does not record its bench (sua_config.json has no BenchConfig)")
    names = {f.name for f in fields(BenchConfig)}
    return BenchConfig(**{k: v for k, v in found[0].items() if k in names})


def membership_card(models_dir: Path, names: list[str], others: dict[str, Path] | None = None) -> dict[str, Any]:
    """Per model: each attack's AUC and privleak against the retrain control, and forget quality. `others`: more
    models by name and folder (a second retrain control, whose forget quality should be high)."""
    bench = build_bench(recorded_bench(models_dir / "vanilla"))
    if not bench.holdout:
        raise BadValueError("membership inference needs holdout people; this world's bench has none")
    members = membership_examples(bench, bench.forget_ids)
    outsiders = membership_examples(bench, bench.holdout_ids)
    rows: dict[str, Any] = {}
    folders = {n: models_dir / n for n in ["retrain", *[n for n in names if n != "retrain"]]} | (others or {})
    for name, folder in folders.items():
        adapter = load_adapter(folder)
        bank = ImageBank(bench, adapter)
        report = mia_report(adapter, bank, members, outsiders)
        rows[name] = {
            "auc": {a: r["auc"] for a, r in report["attacks"].items()},
            "truth_ratio": truth_ratios(adapter, bank, members),
        }
    ref_auc, ref_ratios = rows["retrain"]["auc"], rows["retrain"]["truth_ratio"]
    for row in rows.values():
        row["privleak"] = {a: privleak(row["auc"][a], ref_auc[a]) for a in MIAS.names()}
        row["forget_quality"] = forget_quality(row["truth_ratio"], ref_ratios)
        row["truth_ratio"] = float(row["truth_ratio"].mean())
    return {"counts": {"members": len(members), "nonmembers": len(outsiders)}, "models": rows}


def updated_card(card: dict[str, Any], fresh: dict[str, Any]) -> dict[str, Any]:
    """`card` with the rows of `fresh` (a card of some of the same world's models, rebuilt) in place of its own: the
    other rows are kept, which is sound only if both read the same items against the same retrain control, so the
    counts and the retrain control's row must agree."""
    same_retrain = all(
        abs(card["models"]["retrain"]["auc"][a] - fresh["models"]["retrain"]["auc"][a]) < 1e-9
        for a in card["models"]["retrain"]["auc"]
    )
    if card["counts"] != fresh["counts"] or not same_retrain:
        raise BadValueError("the card to update reads other items or another retrain control; rebuild it whole")
    return {"counts": card["counts"], "models": card["models"] | fresh["models"]}


def membership_markdown(card: dict[str, Any]) -> str:
    names = MIAS.names()
    lines = [
        "# Membership and forget quality",
        "",
        f"Members: {card['counts']['members']} questions of the forget people; non-members: "
        f"{card['counts']['nonmembers']} of the holdout people, whom no model trained on. AUC 0.5: cannot tell; "
        "privleak (MUSE, %) against the retrain control: about 0 for exact unlearning, > 0 leaks, < 0 over-unlearned. "
        "Forget quality (TOFU): KS p-value of truth ratios against the retrain control's, high is good.",
        "",
        "| model | "
        + " | ".join(f"AUC {n}" for n in names)
        + " | "
        + " | ".join(f"privleak {n}" for n in names)
        + " | mean truth ratio | forget quality |",
        "|---|" + "---|" * (2 * len(names) + 2),
    ]
    for model, r in card["models"].items():
        cells = [f"{r['auc'][n]:.3f}" for n in names] + [f"{r['privleak'][n]:+.1f}" for n in names]
        lines.append(f"| {model} | " + " | ".join(cells) + f" | {r['truth_ratio']:.3f} | {r['forget_quality']:.3g} |")
    return "\n".join(lines) + "\n"
