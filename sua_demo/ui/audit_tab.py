"""The Audit tab: the shipped audit and report card when the tab opens, and a live audit of the Attack tab's
chosen person on request (in the heavy queue slot, as Optimise)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import gradio as gr

from sua_demo.ui import text, tools
from sua_demo.ui.gradio_glue import shown
from sua_demo.ui.launch import HEAVY


def build(d: Any, tab: gr.Tab) -> SimpleNamespace:
    """Lays the tab out inside `tab` from the page's defaults `d`. `who` is read by the API only (the page audits
    the Attack tab's person)."""
    gr.Markdown(text.AUDIT_HELP)
    run = gr.Button("Audit the chosen person now", variant="primary", elem_id="audit-run")
    who = gr.Dropdown([("the shipped audit", ""), *d.people], value="", visible=False, label="who")
    table = gr.Markdown(elem_id="audit-table", elem_classes="wide-tables")
    plot = gr.Plot(label="recovered per person and fact", elem_id="audit-plot")
    gr.Markdown("## Report card")
    card, card_plot = gr.HTML(elem_id="report-card"), gr.Plot(elem_id="card-plot")
    return SimpleNamespace(tab=tab, run=run, who=who, table=table, plot=plot, card=card, card_plot=card_plot)


def wire(a: SimpleNamespace, attack: Any) -> None:
    a.tab.select(shown(tools.audit, 2, at=0), [attack.model], [a.table, a.plot], api_name=False)
    a.tab.select(shown(tools.report_card, 2, at=0), None, [a.card, a.card_plot], api_name=False)
    live = shown(tools.audit, 2, at=0)
    a.run.click(live, [attack.model, attack.person], [a.table, a.plot], api_name=False, **HEAVY)
