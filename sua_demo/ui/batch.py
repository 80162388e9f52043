"""The Batch tab: the recovery protocol for one model and noise, and the shipped budget curves."""

from __future__ import annotations

from typing import Any

from sua_demo.engine import Engine, public_name
from sua_demo.look import choose_noise
from sua_demo.plots import GROUP_LABELS, budget_figure, recovery_figure
from sua_demo.ui.exports import Scratch, safe_stem, table_csv, write_named

KEYS = (("gen_em", "exact match"), ("gen_refusal", "refusal"))


def recovery_table(
    engine: Engine, model: str, source: str, uploaded: str | None, optimised: str | None
) -> tuple[list[str], list[list[Any]], dict]:
    """The recovery protocol's header, rows (readable group names, percentages) and its report, for the page and
    the API alike."""
    sess = engine.session(model)
    rec, _ = engine.batch_report(sess, choose_noise(sess, source, uploaded, optimised))
    header = ["condition", "group", *(name for _, name in KEYS), "n"]
    rows = [
        [cond, GROUP_LABELS.get(g, g), *(f"{100 * s[k]:.1f}" for k, _ in KEYS), int(s["gen_n"])]
        for cond, groups in rec.items()
        for g, s in groups.items()
    ]
    return header, rows, rec


def batch_view(
    engine: Engine, scratch: Scratch, model: str, source: str, uploaded: str | None, optimised: str | None
) -> tuple[str, Any, Any, list[str]]:
    """(markdown tables, recovery bars, budget curves or None, [CSV path]); readable group names throughout."""
    header, rows, rec = recovery_table(engine, model, source, uploaded, optimised)
    md = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    md += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    sess = engine.session(model)
    name = public_name(sess.name)  # a folder by its last part: no server path leaves in the file or its name
    text = f"# model,{name}\n# noise,{source}\n" + table_csv(header, rows)
    path = write_named(scratch.folder(), f"sua_batch_{safe_stem(name)}", text.encode("utf-8"), ".csv")
    curves = (sess.report or {}).get("budget")
    return "\n".join(md), recovery_figure(rec), budget_figure(curves) if curves else None, [str(path)]
