"""The Your face tab's layout and wiring, called by `app.py` inside its tab. It is its own module because it is
its own flow: its events are page events only (no `api_name`, no MCP tool), so a visitor's photos, facts and
models never reach an API endpoint; its state lives on the server per browser session (`shared.face_sessions`)
and goes when the tab closes."""

from __future__ import annotations

from typing import Any

import gradio as gr

from sua_demo.core import shipped
from sua_demo.engine import MAX_NAME_CHARS
from sua_demo.ui.serving.gradio_parts import FileInput, PhotoInput, delete_if_uploaded, drop_page_state, shown
from sua_demo.ui.serving.launch import HEAVY
from sua_demo.ui.shared.page import Page
from sua_demo.ui.your_face import handlers, views
from sua_demo.ui.your_face.intake import thumbnails_html

PAGE_ONLY = {"api_name": False, "show_progress": "hidden"}
# after an upload, its note (or, with none, the thumbnails) is scrolled into view: on a phone it is below the box
IN_VIEW = """() => { const m = document.querySelector('#face-added .message') || document.querySelector('#face-thumbs');
  if (m) m.scrollIntoView({block: 'center'}); }"""


def build(page: Page) -> None:
    """Lays the tab out in the current `gr.Tab` of the page and wires it; the lifecycle shares the Optimise queue
    slot (`launch.HEAVY`), since both keep the two cores busy. When the tab closes, the session's photos and
    Gradio's copy of its page (the thumbnails) are dropped."""
    demo, fact_choices = page.blocks, page.defaults.facts
    delete = delete_if_uploaded(demo)

    def add(files: Any, request: gr.Request) -> tuple[None, str, str]:
        return handlers.face_add(files, delete, request)

    def closed(request: gr.Request) -> None:
        handlers.face_forget(request)
        drop_page_state(demo, request.session_hash)

    demo.unload(closed)
    gr.Markdown(views.PRIVACY, elem_id="face-privacy")
    gr.Markdown(views.HELP)
    with gr.Row():
        with gr.Column(min_width=260):
            files = FileInput(file_count="multiple", file_types=["image"], label="your photos", elem_id="face-files")
            added = gr.HTML("", elem_id="face-added")  # what happened to each photo, under the box it came in by
        cam = PhotoInput(type="filepath", sources=["webcam", "clipboard"], label="or take or paste one")
    thumbs = gr.HTML(thumbnails_html([]), elem_id="face-thumbs")
    clear = gr.Button("Remove my photos", size="sm")
    with gr.Row():
        name = gr.Textbox(
            label="made-up name",
            info=views.NAME_HELP,
            elem_id="face-name",
            max_length=MAX_NAME_CHARS,
        )
        facts = [gr.Dropdown(c, label=k, allow_custom_value=True, elem_id=f"face-{k}") for k, c in fact_choices.items()]
    with gr.Row():
        invent = gr.Button("Invent facts", elem_id="face-invent")
        ways = [(shipped.label(m), m) for m in shipped.DEMO]
        method = gr.Radio(ways, value=shipped.DEFAULT, label="how it forgets", elem_id="face-method")
        go = gr.Button("Teach, unlearn, attack", variant="primary", elem_id="face-run")
        stop = gr.Button("Stop", elem_id="face-stop")
    message = gr.HTML("", elem_id="face-message")
    status, steps = gr.Markdown(elem_id="face-status"), gr.HTML(elem_id="face-steps")
    verdict, story = gr.HTML(elem_id="face-verdict"), gr.HTML(elem_id="face-story")

    for box in (files, cam):  # each photo read into the session's memory, its file deleted, the box emptied
        said = box.upload(shown(add, 3, at=2), box, [box, thumbs, added], **PAGE_ONLY)
        said.then(None, None, None, js=IN_VIEW, **PAGE_ONLY)
    clear.click(handlers.face_clear, None, [files, cam, thumbs, added], **PAGE_ONLY)
    invent.click(shown(handlers.face_invent, 5), None, [name, *facts, message], **PAGE_ONLY)
    for typed in (name.blur, name.submit):  # the vocabulary limit, told before the run it would stop
        typed(shown(handlers.face_name, 1, at=0), name, message, trigger_mode="always_last", **PAGE_ONLY)
    started = go.click(handlers.face_free, None, None, queue=False, api_name=False)  # a second run: refused here
    started.success(
        shown(handlers.face_run, 4),
        [name, *facts, method],
        [status, steps, verdict, story, message],
        api_name=False,
        **HEAVY,
    )
    stop.click(handlers.face_stop, None, status, api_name=False, queue=False)
