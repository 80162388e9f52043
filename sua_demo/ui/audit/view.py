"""The Audit tab: the shipped audit of a model at once, a live audit of one person, and the report card."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from sua_demo.engine import Engine
from sua_demo.engine.jobs import audit
from sua_demo.engine.look import person_id
from sua_demo.engine.threads import Waiting
from sua_demo.ui.audit.report_card import card_html
from sua_demo.ui.shared.clock import WorkClock
from sua_demo.ui.shared.words import p_text

NOTE = (
    "Each method asks the forget people's facts its own way and is run again, the same way, on the retrain "
    "control, which never knew them: read the *above control* column. A method whose control recovers as "
    "much wrote the answers in by itself."
)


def shipped_audit(engine: Engine, model: str) -> tuple[str, Any]:
    """The shipped audit as a table and a heatmap, with no model run."""
    report = audit.shipped_report(engine, model)
    if report is None:
        return "No shipped audit for this model: run one with the button above.", None
    return NOTE + "\n\n" + audit.markdown(report, page=True), audit.audit_figure(report)


def audit_shown(status: str, report: dict | None) -> tuple[str, Any]:
    """A live audit's progress line, or its end: the line, the table and the heatmap."""
    if report is None:
        return status, None
    return status + "\n\n" + audit.markdown(report, page=True), audit.audit_figure(report)


def report_card_view(engine: Engine) -> tuple[str, Any]:
    """Every shipped audit as one card: methods against probes, as a sentence per method and a heatmap."""
    card = audit.card(engine)
    if not card["rows"]:
        return "No shipped audits to set side by side.", None
    return card_html(card, audit.LABELS), audit.card_figure(card)


def live_audit(
    engine: Engine, model: str, person: str, deadline: float | None = None
) -> Iterator[tuple[str, dict | None, tuple[int, int]]]:
    """The live audit (`jobs.audit.live`) in words: a progress line every second with the time left at this
    audit's own pace (its first method, which loads and warms up, is left out) and the methods done of all, then
    the closing line and the report. A caller that leaves stops it; a deadline bounds it."""
    clock, total = None, len(audit.METHODS)
    pid = person_id(person)
    with contextlib.closing(audit.live(engine, model, person, deadline)) as run:  # a caller that leaves closes it
        for item in run:
            if isinstance(item, Waiting):
                yield f"Live audit of #{pid}: {item.words()}", None, (0, total)
                continue
            done, report = item
            clock = clock or WorkClock(audit.method_work())  # its pace from when it started, not from its wait
            clock.step(done)
            if report is None:
                yield f"Live audit of #{pid}: {clock.status('method')}", None, (done, total)
            else:
                methods = len(report["summary"])
                partial = "" if report["complete"] else f", stopped at its time bound with {methods} methods done"
                said = f"Live audit of #{pid}, {report['seconds']:.0f} s{partial}. {closing_sentence(report)}"
                yield said.strip(), report, (done, total)


def closing_sentence(report: dict[str, Any]) -> str:
    """What the verdict's paired test says of the strongest probe against the retrain control on the same questions
    of the forget people, its p-value adjusted for the number of probes tried (`audit.strongest_probe`)."""
    strongest = audit.strongest_probe(report)
    if strongest is None:
        return ""
    label, t, n = audit.LABELS[strongest.name], strongest.test, strongest.tried
    if strongest.recovers:
        return (
            f"{label.capitalize()} brings back {t.only_first} answers that the retrain control does not "
            f"({p_text(strongest.p)}, adjusted for the {n} probes tried)."
        )
    return (
        f"No probe brings back more than the retrain control on the same questions: the strongest, "
        f"{label}, {t.only_first} against {t.only_second} ({p_text(strongest.p)}, adjusted for the {n} probes)."
    )
