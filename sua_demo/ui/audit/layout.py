"""The Audit tab: the shipped audit and report card when the tab opens, and a live audit of the Attack tab's
chosen person on request (in the heavy queue slot, as Optimise)."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from sua_demo.ui.audit import handlers
from sua_demo.ui.serving.gradio_parts import shown
from sua_demo.ui.serving.launch import HEAVY
from sua_demo.ui.shared import words as text
from sua_demo.ui.shared.page import Page


def build(page: Page) -> SimpleNamespace:
    """Lays the tab out inside `page.tab` from the page's defaults. `who` is read by the API only (the page audits
    the Attack tab's person)."""
    d, tab = page.defaults, page.tab
    gr.Markdown(text.AUDIT_HELP)
    run = gr.Button("Audit the chosen person now", variant="primary", elem_id="audit-run")
    who = gr.Dropdown([("the shipped audit", ""), *d.people], value="", visible=False, label="who")
    table = gr.Markdown(elem_id="audit-table", elem_classes="wide-tables")
    plot = gr.Plot(label="recovered per person and fact", elem_id="audit-plot")
    gr.Markdown("## Report card")
    card, card_plot = gr.HTML(elem_id="report-card"), gr.Plot(elem_id="card-plot")
    return SimpleNamespace(tab=tab, run=run, who=who, table=table, plot=plot, card=card, card_plot=card_plot)


def wire(page: Page) -> None:
    a, attack = page.tabs["audit"], page.tabs["attack"]
    a.tab.select(shown(handlers.audit, 2, at=0), [attack.model], [a.table, a.plot], api_name=False)
    a.tab.select(shown(handlers.report_card, 2, at=0), None, [a.card, a.card_plot], api_name=False)
    live = shown(handlers.audit, 2, at=0)
    a.run.click(live, [attack.model, attack.person], [a.table, a.plot], api_name=False, **HEAVY)
