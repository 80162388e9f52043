"""The About tab: the story's diagram and how every figure on the page was measured."""

from __future__ import annotations

import json

import gradio as gr

from sua_demo.ui.about.words import about_markdown, people_words, robust_words, scale_words
from sua_demo.ui.shared import words as text
from sua_demo.ui.shared.page import Page


def build(page: Page) -> None:
    """The served world's About (its own figures, never another world's)."""
    from sua_demo.ui.shared import state

    world = state().engine.world
    gr.HTML(text.STORY_DIAGRAM, elem_id="story-diagram")
    about = about_markdown(world.noise, world.name, world.audit)
    gr.Markdown(about, elem_id="about", elem_classes="wide-tables")
    robust = robust_words(world.models)  # docs/robust.md: what training against δ fixed, once a robust model is read
    if robust:
        gr.Markdown(robust, elem_id="about-robust", elem_classes="wide-tables")
    trend = world.models / "scale" / "trend.json"  # the size study (docs/scale.md), built on the faithful world
    if trend.is_file():
        from sua_demo.ui.shared.plots import scale_figure

        found = json.loads(trend.read_text())
        gr.Markdown(scale_words(found), elem_id="about-scale")
        gr.Plot(scale_figure(found), elem_id="about-scale-plot")
    people = world.models / "scale" / "M" / "people.json"  # its second axis, on today's tower
    if people.is_file():
        from sua_demo.ui.shared.plots import people_figure

        found = json.loads(people.read_text())
        gr.Markdown(people_words(found), elem_id="about-people")
        gr.Plot(people_figure(found), elem_id="about-people-plot")
