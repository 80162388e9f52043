"""The About tab: the story's diagram and how every figure on the page was measured."""

from __future__ import annotations

import gradio as gr

from sua_demo.ui import text
from sua_demo.ui.about import about_markdown


def build() -> None:
    from sua_demo.config import CHECKPOINTS

    gr.HTML(text.STORY_DIAGRAM, elem_id="story-diagram")
    gr.Markdown(about_markdown(CHECKPOINTS / "noise"), elem_id="about", elem_classes="wide-tables")
