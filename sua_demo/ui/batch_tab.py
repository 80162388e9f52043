"""The Batch tab: the whole protocol over the bench, per group against random noise, ending with the sentence the
paired test draws (`ui/batch.py`). It reads the Attack tab's model and noise."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import gradio as gr

from sua_demo.ui import text, tools
from sua_demo.ui.gradio_glue import shown


def build() -> SimpleNamespace:
    """Lays the tab out inside the current `gr.Tab`."""
    gr.Markdown(text.BATCH_HELP)
    run = gr.Button("Run the protocol", variant="primary")
    table_plot, budget_plot, table = gr.Plot(), gr.Plot(), gr.Markdown()
    return SimpleNamespace(run=run, plot=table_plot, budget=budget_plot, table=table, csv=gr.File(label="CSV"))


def wire(b: SimpleNamespace, attack: Any) -> None:
    inputs = [attack.model, attack.noise_source, attack.noise_file, attack.optimised]
    b.run.click(shown(tools.batch, 4, at=0), inputs, [b.table, b.plot, b.budget, b.csv], api_name=False)
