"""The Your face tab's layout and wiring, called by `app.py` inside its tab. It is its own module because it is
its own flow: its events are page events only (no `api_name`, no MCP tool), so a visitor's photos, facts and
models never reach an API endpoint, and its one state lives per browser session (`your_face.FaceSession`)."""

from __future__ import annotations

import gradio as gr

from sua_demo.ui import tools, your_face
from sua_demo.ui.gradio_glue import PhotoInput, shown

PAGE_ONLY = {"api_name": False, "show_progress": "hidden"}


def build_face_tab(fact_choices: dict[str, list[str]]) -> None:
    """Lays the tab out in the current `gr.Tab` and wires it; the lifecycle shares the Optimise queue slot
    (`concurrency_id="optimise"`), since both keep the two cores busy."""
    face = gr.State(None, time_to_live=your_face.IDLE_SECONDS, delete_callback=your_face.forget)
    gr.Markdown(your_face.PRIVACY, elem_id="face-privacy")
    gr.Markdown(your_face.HELP)
    with gr.Row():
        files = gr.File(file_count="multiple", file_types=["image"], label="your photos", elem_id="face-files")
        cam = PhotoInput(type="filepath", sources=["webcam", "clipboard"], label="or take or paste one")
    thumbs = gr.HTML(your_face.thumbnails_html([]), elem_id="face-thumbs")
    clear = gr.Button("Remove my photos", size="sm")
    with gr.Row():
        name = gr.Textbox(label="made-up name", elem_id="face-name", max_length=80)
        facts = [gr.Dropdown(c, label=k, allow_custom_value=True, elem_id=f"face-{k}") for k, c in fact_choices.items()]
    with gr.Row():
        invent = gr.Button("Invent facts", elem_id="face-invent")
        method = gr.Radio(["idk", "grad_diff"], value="idk", label="how it forgets", elem_id="face-method")
        go = gr.Button("Teach, unlearn, attack", variant="primary", elem_id="face-run")
        stop = gr.Button("Stop", elem_id="face-stop")
    message = gr.HTML("", elem_id="face-message")
    status, steps = gr.Markdown(elem_id="face-status"), gr.HTML(elem_id="face-steps")
    verdict, story = gr.HTML(elem_id="face-verdict"), gr.HTML(elem_id="face-story")

    for box in (files, cam):  # each photo read into the session's memory, its file deleted
        box.upload(shown(tools.face_add, 3, at=2), [face, box], [face, thumbs, message], **PAGE_ONLY)
    clear.click(your_face.clear_photos, face, [face, thumbs, message], **PAGE_ONLY)
    invent.click(shown(tools.face_invent, 5), None, [name, *facts, message], **PAGE_ONLY)
    started = go.click(tools.face_free, face, None, queue=False, api_name=False)  # a second run: refused here
    started.success(
        shown(tools.face_run, 4),
        [face, name, *facts, method],
        [status, steps, verdict, story, message],
        api_name=False,
        concurrency_id="optimise",
    )
    stop.click(your_face.stop, face, status, api_name=False, queue=False)
