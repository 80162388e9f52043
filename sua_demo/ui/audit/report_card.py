"""The report card as the page shows it: one line per method at desktop width (readable method names, the
technical name and each number's spread in a tooltip, every column in view), each method's sentence below, and on a
phone one card per method instead of the table. Built from the card `jobs.audit.card` reads; plain HTML out."""

from __future__ import annotations

from html import escape
from typing import Any

from sua_demo.core.shipped import label
from sua_demo.engine.jobs.audit import recovers

# the probes' column heads, short enough for one line of numbers beneath (the full name is the head's tooltip)
SHORT = {
    "text_only": "text only", "rephrased": "rephrased", "sua": "SUA δ", "random_noise": "random noise",
    "quant8": "8-bit", "quant4": "4-bit", "relearn5": "relearn 5", "relearn20": "relearn 20",
    "relearn50": "relearn 50", "soft_prompt1": "soft prompt 1", "soft_prompt5": "soft prompt 5",
    "typographic": "name in photo", "rephrased_image": "new pose",
}  # fmt: skip
NOTE = (
    "Each number: points of forgotten facts a probe brings back on people it never saw, above the same probe on "
    "the retrain control (mean over attacker splits; hover for the spread). <b>Bold</b>: the probe recovers "
    "(≥ {recovers:.0f} points, two standard errors above zero). Retain: the model's score on retain people."
)


def card_html(card: dict[str, Any], labels: dict[str, str]) -> str:
    """The card's table and its sentences; `labels` are the probes' full names (the audit's LABELS)."""
    rows = card["rows"]
    probes = [p for p in card["probes"] if any(p in r["cells"] for r in rows)]
    head = "".join(f"<th scope='col' title='{escape(labels[p])}'>{escape(SHORT.get(p, p))}</th>" for p in probes)
    body = []
    for r in rows:
        cells = []
        for p in probes:
            c = r["cells"].get(p)
            if c is None:
                cells.append("<td class='na'>–</td>")
                continue
            spread = f"{labels[p]}: {c['mean']:+.1f} ± {c['sd']:.1f} over {c['n']} splits"
            strong = " class='recovers'" if recovers(c) else ""
            cells.append(f"<td{strong} title='{escape(spread)}'>{c['mean']:+.1f}</td>")
        word, _, why = r["reading"].partition(": ")
        body.append(
            f"<tr><th scope='row' title='{escape(r['model'])}'>{escape(label(r['model']))}</th>{''.join(cells)}"
            f"<td>{r['retain']:.0f} %</td><td class='word' title='{escape(why)}'>{escape(word)}</td></tr>"
        )
    table = (
        "<div class='card-wrap'><table class='card' aria-label='report card: methods against probes'>"
        f"<thead><tr><th scope='col'>method</th>{head}<th scope='col'>retain</th><th scope='col'>reading</th>"
        f"</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )
    note = NOTE.format(recovers=card["rule"]["recovers"])
    return f"<p class='card-note'>{note}</p>{table}{_cards(rows, labels)}"


def _cards(rows: list[dict[str, Any]], labels: dict[str, str]) -> str:
    """Each method's sentence, as a list under the table; on a phone, where the table hides, one card each."""
    items = []
    for r in rows:
        found = sorted(((c["mean"], p) for p, c in r["cells"].items() if recovers(c)), reverse=True)
        chips = "".join(f"<span class='chip'>{escape(labels[p])} {m:+.0f}</span>" for m, p in found)
        items.append(
            f"<li><b title='{escape(r['model'])}'>{escape(label(r['model']))}</b> <i>{escape(r['reading'])}</i>. "
            f"Retain {r['retain']:.0f} %.<div class='chips'>{chips}</div></li>"
        )
    return f"<ul class='card-list' aria-label='each method in one sentence'>{''.join(items)}</ul>"
