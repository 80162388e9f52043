"""The story table and the verdict, as HTML a browser renders and as rows a CSV holds.

Columns read left to right as the argument goes: the model before unlearning knew the answer; the unlearned
model refuses or errs on the clean photo; with delta it answers again; random noise of the same eps does not
do that; the retrain control, which never saw the person, does not answer with the same delta either.
"""

from __future__ import annotations

import html

from sua_demo.engine import COLUMNS, Story, Verdict
from sua_demo.ui.shared.words import p_text

TITLES = ("before unlearning", "unlearned, clean", "unlearned + δ", "unlearned + random noise (same ε)",
          "retrain control + δ", "unlearned + δ, denoised")  # fmt: skip
COLUMN_TITLES = dict(zip(COLUMNS, TITLES, strict=True))  # the story's conditions are named once, in the engine
MARK_CLASS = {"✓": "ok", "✗": "wrong", "refused": "refused", "": "plain"}
NOT_AVAILABLE = "not available: name a model for this column"


def cell(story: Story, row_index: int, column: str) -> tuple[str, str]:
    """(text, mark) of one cell; a column whose model was not given reads 'not available'."""
    row = story.rows[row_index]
    if column not in row.answers:
        return NOT_AVAILABLE, ""
    return row.reads(column)


def story_rows(story: Story) -> list[list[str]]:
    """Plain rows for CSV and JSON: question, truth, then 'answer (mark)' per column."""
    out = []
    for i, row in enumerate(story.rows):
        cells = []
        for column in COLUMN_TITLES:
            text, m = cell(story, i, column)
            cells.append(f"{text} ({m})" if m else text)
        out.append([row.question, row.truth or "?", *cells])
    return out


def story_header() -> list[str]:
    return ["question", "truth", *COLUMN_TITLES.values()]


def story_html(story: Story) -> str:
    """A table that wraps at word boundaries only, with ✓ / ✗ / refused coloured cells."""
    head = "".join(f"<th scope='col'>{html.escape(t)}</th>" for t in ["question", "truth", *COLUMN_TITLES.values()])
    body = []
    for i, row in enumerate(story.rows):
        cells = [f"<th scope='row'>{html.escape(row.question)}</th>", f"<td>{html.escape(row.truth or '?')}</td>"]
        for column in COLUMN_TITLES:
            text, m = cell(story, i, column)
            badge = f" <span class='mark'>{html.escape(m)}</span>" if m else ""
            cls = "na" if text == NOT_AVAILABLE else MARK_CLASS[m]
            cells.append(f"<td class='{cls}'>{html.escape(text)}{badge}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (
        "<div class='story-wrap'><table class='story' aria-label='answers under each condition'>"
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def reading(v: Verdict, role: str, holder: str = "these facts") -> str:
    """One sentence, drawn by the paired test (analysis/paired.py) and nothing else: δ brings answers back beyond
    its controls, there is no evidence of it, or δ damages; for a retain person, whether δ damages their answers."""
    if role == "retain":
        d = v.damage
        if d is not None and d.second_wins:
            return (
                f"This is a retain person, never unlearned: δ damages their answers, {d.only_second} right on the "
                f"clean photos are wrong with δ ({p_text(d.p)}). A good attack would leave them alone."
            )
        said = f" ({p_text(d.p)})" if d is not None else ""
        return f"This is a retain person, never unlearned: δ does not measurably get in the way of their answers{said}."
    t = v.beyond
    if t is None:
        return "There is no control to read δ against: name a retrain control to judge it."
    if t.first_wins:
        return (
            f"δ brings back {t.only_first} answers that no control does ({p_text(t.p)}): the unlearned model still "
            f"holds {holder}. Unlearning hid them rather than removed them, and δ opens the gate."
        )
    if t.second_wins:
        return f"δ damages: the controls get {t.only_second} answers right that δ gets wrong ({p_text(t.p)})."
    return (
        f"No evidence beyond the controls ({p_text(t.p)}): δ brings back {t.only_first} answers that no control "
        f"does and the controls get {t.only_second} that δ does not, which chance alone can do at this size."
    )


def short_reading(v: Verdict) -> str:
    """The paired test's answer in a few words, for a table row: what it found, then its count and p."""
    t = v.beyond
    if t is None:
        return "no control to read δ against"
    if t.first_wins:
        return f"δ brings back {t.only_first} answers beyond the controls ({p_text(t.p)})"
    if t.second_wins:
        return f"δ damages: {t.only_second} answers right under the controls are wrong with δ ({p_text(t.p)})"
    return f"no evidence beyond the controls ({p_text(t.p)}; {t.only_first} against {t.only_second})"


CONTROL_NAMES = {"retrain_delta": "retrain control + δ", "vanilla": "before unlearning"}


def headline(v: Verdict, role: str) -> tuple[str, str]:
    """(the headline's HTML, its class). The big number leads only where the paired test says δ brings answers
    back: "no evidence" and "damages" lead with those words, in smaller type, so a count within chance is never
    read as a finding."""
    who, c = html.escape(v.person), v.correct
    if role == "retain":
        said = f"right answers across {who}'s {v.photos} photos: clean <b>{c['clean']}</b>, with δ <b>{c['delta']}</b>"
        return f"{said} of {v.total}", "headline"
    t = v.beyond
    if t is not None and t.second_wins:
        return (f"δ damages: {t.only_second} answers across {who}'s {v.photos} photos are right under the controls "
                "and wrong with δ", "headline quiet")  # fmt: skip
    if t is not None and not t.first_wins:
        return (f"No evidence: δ brings back {v.count} of {v.total} answers across {who}'s {v.photos} photos that no "
                "control does, no more than chance would", "headline quiet")  # fmt: skip
    return (f"δ brings back <b>{v.count}</b> of {v.total} answers across {who}'s {v.photos} photos that no control "
            "does", "headline")  # fmt: skip


def verdict_html(v: Verdict, role: str, names: dict[str, str] | None = None, source: str = "") -> str:
    """The headline (large only for a finding), what it means in one sentence, what it is measured against, per
    fact, and `source`: which noise, model and world produced it."""
    c = v.correct
    parts = [f"clean <b>{c['clean']}</b>"]
    parts.append(f"random noise <b>{c['random']}</b>")
    names = {**CONTROL_NAMES, **(names or {})}  # Your face names its controls for what they are there
    parts.append(
        f"{names['retrain_delta']} <b>{c['retrain_delta']}</b>" if "retrain_delta" in c else "retrain control n/a"
    )
    if "vanilla" in c:
        parts.append(f"{names['vanilla']} <b>{c['vanilla']}</b>")
    facts = ", ".join(
        f"{html.escape(name)} {row['delta']}/{v.photos}" for name, row in v.facts.items() if row.get("delta", 0)
    )
    said, cls = headline(v, role)
    return (
        "<div class='verdict' role='status'>"
        + (f"<p class='source'>{html.escape(source)}</p>" if source else "")
        + f"<p class='{cls}'>{said}</p>"
        f"<p class='reading'>{html.escape(names.get('reading', reading(v, role)))}</p>"
        f"<p class='controls'>right answers out of {v.total}: with δ <b>{c['delta']}</b> · {' · '.join(parts)}"
        f" <span class='role'>({html.escape(role)})</span></p>"
        + (f"<p class='facts'>with δ, per fact (photos right): {facts}</p>" if facts else "")
        + "</div>"
    )


def changed_answers(story: Story) -> int:
    """How many of a photo's answers δ changed: all there is to read where no answer is known (an upload)."""
    return sum(r.answers["clean"] != r.answers["delta"] for r in story.rows)


def upload_verdict_html(story: Story, source: str = "") -> str:
    """For a photo with no known answers: whether delta changed them, which is all there is to read."""
    changed = changed_answers(story)
    return (
        "<div class='verdict' role='status'>"
        + (f"<p class='source'>{html.escape(source)}</p>" if source else "")
        + f"<p class='headline'>δ changed <b>{changed}</b> of {len(story.rows)} answers on your photo</p>"
        "<p class='reading'>This model knows only its 100 fictitious people, so there is no truth to check your "
        "photo's answers against: read whether the clean and noisy answers differ, and where your photo lands on "
        "the embedding map.</p></div>"
    )
