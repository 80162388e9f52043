"""The Audit tab's handlers: the shipped or a live audit, and the report card. Importing this loads no model: the
process's state is built on the first call (`shared.server`)."""

from __future__ import annotations

from sua_demo.ui.serving.gradio_parts import handler
from sua_demo.ui.shared import state


@handler
def audit(model: str, person: str = ""):  # type: ignore[no-untyped-def]
    """The residual-knowledge audit: the shipped one for this model, or, given a forget person, a live one of them
    (every method beside its retrain control; minutes on a CPU, with progress).

    Args:
        model: the unlearned model.
        person: a forget person's number for a live audit; empty for the shipped audit.
    """
    from sua_demo.ui.audit import view as audit_view

    eng = state().engine
    if not person:
        yield audit_view.shipped_audit(eng, model)
        return
    for status, report, _ in audit_view.live_audit(eng, model, person):
        yield audit_view.audit_shown(status, report)


@handler
def report_card():  # type: ignore[no-untyped-def]
    """Every shipped unlearning method against every probe: points recovered above the retrain control."""
    from sua_demo.ui.audit.view import report_card_view

    return report_card_view(state().engine)
