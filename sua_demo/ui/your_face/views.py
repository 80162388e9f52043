"""*Your face*'s words and views: the privacy note and help, the steps table, each δ's verdict and the story
tables, and the last view of a run."""

from __future__ import annotations

import html
from typing import Any

from sua_demo.engine import (
    MAX_NAME_CHARS,
    MAX_PHOTOS,
    MIN_PHOTOS,
    EnrolReport,
    StepReport,
)
from sua_demo.engine.answers import fold, mark
from sua_demo.ui.shared.story_table import MARK_CLASS, reading, short_reading, verdict_html

PRIVACY = (
    "**Your photos stay yours.** They are held in this browser tab's session only, in memory: each uploaded file is "
    "read and deleted at once, nobody else's page or API call can reach them, and they and the models taught on "
    "them are dropped as the tab closes, or after 30 minutes without use. Only how long each step took is logged."
)


HELP = (
    f"Give {MIN_PHOTOS}–{MAX_PHOTOS} photos of one face (4 or more is better), a made-up name and four facts, or "
    "press **Invent facts**. The run teaches the model this person, checks it on a photo it was not taught on, "
    "makes it forget them, and tries two noises: the shipped δ, which never saw this person nor this model, and "
    "a δ fitted on your taught photos, tested on the others. Each is read against its controls: random noise of "
    "the same ε, and the model from before teaching (it never knew this person) with the same δ. About a "
    "minute and a half on two idle cores; each step shows its own time left as it runs."
)


NAME_HELP = (
    f"at most {MAX_NAME_CHARS} characters, letters of any script; this small model can learn and say only its "
    "bench's words, so use a name from 'Invent facts' or one made of them: another is refused as you type it"
)


COLUMNS = {
    "vanilla": "taught",
    "clean": "unlearned",
    "delta": "unlearned + δ",
    "random": "+ random noise",
    "retrain_delta": "before teaching + δ",
}


def steps_html(
    steps: list[StepReport], running: str = "", stopped: str = "", pace: str = "running", verdicts: Any = None
) -> str:
    """Each step's time and its before → after line; the step under way last, with its `pace` (or the step Stop
    ended); once the run is done, a row per δ with what the paired test read from its counts (`verdicts`)."""
    nowrap = "style='white-space:nowrap'"
    rows = [
        f"<tr><td {nowrap}>{html.escape(s.name)}</td><td {nowrap}>{s.seconds:.0f} s</td>"
        f"<td>{html.escape(s.line)}</td></tr>"
        for s in steps
    ]
    rows += [
        f"<tr class='face-read'><td {nowrap}>verdict, {html.escape(DELTAS[k])}</td><td>–</td>"
        f"<td>{html.escape(short_reading(v))}</td></tr>"
        for k, v in (verdicts or {}).items()
    ]
    if running:
        rows.append(f"<tr><td {nowrap}>{html.escape(running)}</td><td>…</td><td>{html.escape(pace)}</td></tr>")
    if stopped:
        rows.append(f"<tr><td {nowrap}>{html.escape(stopped)}</td><td>–</td><td>stopped: not finished</td></tr>")
    return (
        "<table class='face-steps' aria-label='the steps of your run'><thead><tr>"
        f"<th {nowrap}>step</th><th {nowrap}>time</th><th>before → after</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def story_html(report: EnrolReport, noise: str) -> str:
    """The visitor's story table for one noise: every question on every photo it was tested on, per condition."""
    grid = report.answers[noise]
    photos = report.taught_photos + report.held_back if noise == "shipped" else report.held_back
    cols = [c for c in COLUMNS if c in grid]
    head = "<th>photo</th><th>question</th><th>truth</th>" + "".join(f"<th>{COLUMNS[c]}</th>" for c in cols)
    body = []
    for p, photo in enumerate(photos):
        kind = "held back" if photo in report.held_back else "taught"
        for q, (question, truth) in enumerate(zip(report.questions, report.truths, strict=True)):
            cells = []
            for c in cols:
                said = grid[c][p][q]
                m = mark(said, truth)  # the main table's marks, by the verdict's own rule
                words = html.escape(fold(said) or "(nothing)")
                cells.append(f"<td class='{MARK_CLASS[m]}'><span class='mark'>{m}</span> “{words}”</td>")
            body.append(
                f"<tr><td>{photo} ({kind})</td><td>{html.escape(question)}</td><td>{html.escape(truth)}</td>"
                + "".join(cells)
                + "</tr>"
            )
    return (
        f"<p class='legend'>{WORDS_LEGEND}</p>"
        "<div class='story-wrap'><table class='story' aria-label='your face: answers under each condition'>"
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


WORDS_LEGEND = (
    "✓ right, ✗ wrong, refused: it declined. In quotes, the model's own words as it said them: a model this small "
    "sometimes stumbles or repeats itself, and a word said over and over is shown folded."
)


ROLES = {
    "shipped": "your face, the shipped δ: it never saw this person nor this model",
    "fitted": "your face, a δ fitted on your taught photos, read on the held-back ones",
}


NAMES = {"retrain_delta": "before teaching + δ (this face's retrain control)", "vanilla": "taught"}


def face_reading(v: Any) -> str:
    """The verdict's sentence for one visitor's face: the same paired test as a bench person's."""
    return reading(v, "forget", holder="these facts about your face")


DELTAS = {"shipped": "the shipped δ", "fitted": "a δ fitted on your taught photos"}  # each δ, in a table row


HEADINGS = {
    "shipped": f"{DELTAS['shipped']}, which never saw this person nor this model",
    "fitted": f"{DELTAS['fitted']}, read on the held-back ones",
}


def verdicts_html(report: EnrolReport) -> str:
    """One verdict per δ, each under a heading that names its δ (the two stacked alike read as one)."""
    return "".join(
        f"<h4 class='face-delta'>With {HEADINGS[k]}</h4>"
        + verdict_html(v, ROLES[k], {**NAMES, "reading": face_reading(v)})
        for k, v in report.verdicts.items()
    )


def finished_view(report: EnrolReport, note: str) -> tuple[str, str, str, str]:
    """A finished run as the page shows it: status, the steps with the test's reading per δ, verdicts, stories."""
    total = sum(s.seconds for s in report.steps)
    stories = "".join(f"<h4>Answers with {HEADINGS[k]}</h4>{story_html(report, k)}" for k in report.answers)
    return (
        f"done in {total:.0f} s. {note}",
        steps_html(report.steps, verdicts=report.verdicts),
        verdicts_html(report),
        stories,
    )


STOPPED = "Stopped: nothing of this run was kept. Your photos are still here; press the button to run again."


STOPPED_WAITING = "Stopped while waiting: it left the line and nothing was taught. Your photos are still here."
