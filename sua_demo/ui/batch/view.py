"""The Batch tab: the recovery protocol for one model and noise, and the shipped budget curves."""

from __future__ import annotations

from typing import Any

from sua_demo.core.shipped import label, public_name
from sua_demo.engine import Engine, Paired
from sua_demo.engine.look import choose_noise, describe_noise
from sua_demo.ui.shared.exports import Scratch, safe_stem, table_csv, write_named
from sua_demo.ui.shared.plots import GROUP_LABELS, budget_figure, recovery_figure
from sua_demo.ui.shared.words import p_text

KEYS = (("gen_em", "exact match"), ("gen_refusal", "refusal"))
NO_CURVES = ("This model's world ships no budget curves (recovery and stealth against ε); `sua attack-eval "
             "--budgets` draws them for a model.")  # fmt: skip


def closing_sentence(tests: dict[str, Paired]) -> str:
    """What the paired test says per group, δ against random noise of the same ε on the same questions (the
    verdict's test, analysis/paired.py): brings back, no evidence, or damages."""
    parts = []
    for g, t in tests.items():
        if t.first_wins:
            said = f"δ brings back {t.only_first} answers that random noise does not ({p_text(t.p)})"
        elif t.second_wins:
            said = f"δ damages: random noise gets {t.only_second} right that δ gets wrong ({p_text(t.p)})"
        else:
            said = f"no evidence beyond random noise ({p_text(t.p)}; {t.only_first} against {t.only_second})"
        parts.append(f"{GROUP_LABELS.get(g, g)}: {said}")
    return "Against random noise of the same ε, on the same questions: " + "; ".join(parts) + "."


def recovery_table(
    engine: Engine, model: str, source: str, uploaded: str | None, optimised: str | None
) -> tuple[list[str], list[list[Any]], dict, str]:
    """The recovery protocol's header, rows (readable group names, percentages), its report and the closing
    sentence of its paired test, for the page and the API alike."""
    sess = engine.session(model)
    rec, _, tests = engine.batch_report(sess, choose_noise(sess, source, uploaded, optimised))
    header = ["condition", "group", *(name for _, name in KEYS), "n"]
    rows = [
        [cond, GROUP_LABELS.get(g, g), *(f"{100 * s[k]:.1f}" for k, _ in KEYS), int(s["gen_n"])]
        for cond, groups in rec.items()
        for g, s in groups.items()
    ]
    return header, rows, rec, closing_sentence(tests)


def batch_view(
    engine: Engine, scratch: Scratch, model: str, source: str, uploaded: str | None, optimised: str | None
) -> tuple[str, Any, Any, list[str]]:
    """(markdown tables, recovery bars, budget curves or None, [CSV path]); readable group names throughout."""
    header, rows, rec, sentence = recovery_table(engine, model, source, uploaded, optimised)
    sess = engine.session(model)
    name = public_name(sess.name)  # a folder by its last part: no server path leaves in the file or its name
    noise = describe_noise(sess, source, choose_noise(sess, source, uploaded, optimised))
    md = [f"Model **{label(name)}** · noise: {noise} · {engine.world.title}", ""]
    md += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    md += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows] + ["", sentence]
    curves = (sess.report or {}).get("budget")
    if not curves:
        md += ["", NO_CURVES]
    named = [["# world", engine.world.title], ["# model", name], ["# noise", noise]]
    text = table_csv(named[0], [*named[1:], header, *rows])
    path = write_named(scratch.folder(), f"sua_batch_{safe_stem(name)}", text.encode("utf-8"), ".csv")
    return "\n".join(md), recovery_figure(rec), budget_figure(curves) if curves else None, [str(path)]
