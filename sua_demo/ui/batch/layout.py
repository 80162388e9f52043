"""The Batch tab: the whole protocol over the bench, per group against random noise, ending with the sentence the
paired test draws (`ui/batch/view.py`). It reads the Attack tab's model and noise. Its plots stay hidden until there is
something to draw, and the table's place says what will appear while the protocol runs."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import gradio as gr

from sua_demo.ui.batch import handlers
from sua_demo.ui.serving.gradio_parts import shown
from sua_demo.ui.shared import words as text
from sua_demo.ui.shared.page import Page

WAITING = "Running the protocol on every group of people… its table, recovery bars and budget curves appear here."


def build(page: Page) -> SimpleNamespace:
    """Lays the tab out inside the current `gr.Tab`."""
    gr.Markdown(text.BATCH_HELP)
    run = gr.Button("Run the protocol", variant="primary")
    table = gr.Markdown("The protocol's table and its closing sentence appear here once it has run.", elem_id="batch")
    bars = gr.Plot(visible=False, elem_id="batch-bars")
    budget = gr.Plot(visible=False, elem_id="batch-budget")
    return SimpleNamespace(run=run, plot=bars, budget=budget, table=table, csv=gr.File(label="CSV"))


def drawn(model: str, noise_source: str, noise_file: str | None, optimised: str | None) -> tuple[Any, ...]:
    """The protocol's table, its plots shown where there is something to draw (in the same reply), and its CSV."""
    table, bars, curves, csv = handlers.batch(model, noise_source, noise_file, optimised)
    shown_if = lambda fig: gr.update(value=fig, visible=fig is not None)  # noqa: E731
    return table, shown_if(bars), shown_if(curves), csv


def wire(page: Page) -> None:
    b, attack = page.tabs["batch"], page.tabs["attack"]
    inputs = [attack.model, attack.noise_source, attack.noise_file, attack.optimised]
    started = b.run.click(lambda: WAITING, None, b.table, queue=False, api_name=False, show_progress="hidden")
    started.then(shown(drawn, 4, at=0), inputs, [b.table, b.plot, b.budget, b.csv], api_name=False)
