"""The Attack tab: pick a person or photo, apply δ, read the answers beside their controls, see the noise and the
embedding map, optimise a δ of one's own. `build` lays it out inside the current `gr.Tab` and returns its widgets;
`wire` connects them once every tab exists (Batch and Audit read this tab's model and person)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import gradio as gr

from sua_demo.core.shipped import label
from sua_demo.engine.request import Request
from sua_demo.ui.attack import actions, handlers
from sua_demo.ui.attack import views as page
from sua_demo.ui.serving.gradio_parts import FileInput, PhotoInput, handler, shown
from sua_demo.ui.serving.launch import HEAVY
from sua_demo.ui.shared import state
from sua_demo.ui.shared import words as text
from sua_demo.ui.shared.page import Page

STILL = {"allow_preview": False, "object_fit": "contain"}  # galleries to look at, not to browse
FILES = {"file_count": "multiple", "interactive": False}  # downloads offered, not uploads asked for
QUIET = {"api_name": False, "show_progress": "hidden"}


class AttackTab(SimpleNamespace):
    """The tab's widgets by name (`tab.model`, `tab.person`, ...), as `build` made them."""

    def request_inputs(self) -> dict[str, Any]:
        """Request's fields, by name, and the widget each is read from (one Request per page action)."""
        names = ("model", "person", "photo", "upload", "question", "denoiser", "noise_source", "noise_file")
        return {n: getattr(self, n) for n in (*names, "optimised", "vanilla", "retrain")}

    def optimise_inputs(self) -> list[Any]:
        """What an optimisation reads: the model, ε, steps, the loss's denoiser and the stealth weight."""
        return [self.model, self.eps, self.steps, self.opt_denoiser, self.stealth]


def build(page: Page) -> AttackTab:
    """Lays the tab out from the page's defaults (`ui.defaults.Defaults`)."""
    d = page.defaults
    t = AttackTab(optimised=gr.State(None), loaded=gr.State(d.model), load_ok=gr.State(True))
    with gr.Row(equal_height=True):
        models = [(label(m), m) for m in d.models]  # readable names; the value is the model's own name
        t.model = gr.Dropdown(models, value=d.model, elem_id="model", scale=2, **text.MODEL_BOX)
        t.noise_source = handlers.sources_box(d.sources)
        t.run_btn = gr.Button("Apply δ and compare", variant="primary", elem_id="run", scale=1)
    t.message = gr.HTML("", elem_id="message")
    # HTML, not Textbox or Markdown: their samples are cut at 60 characters, and with them the chip's role
    t.examples = gr.Dataset(components=[gr.HTML(visible=False)], type="index", **text.EXAMPLES_BOX)
    with gr.Row():
        with gr.Column(scale=2, min_width=260):
            t.preview = gr.Gallery(label="the photo", columns=1, height=300, elem_id="preview", **STILL)
            t.person = gr.Dropdown(d.people, value=d.person, label="person", elem_id="person", allow_custom_value=True)
            t.photo = gr.Slider(0, 6, value=d.photo, step=1, label="photo", info=text.PHOTO_HELP, elem_id="photo")
        with gr.Column(scale=5, min_width=300):
            t.verdict = gr.HTML(text.EMPTY, elem_id="verdict")
            t.table = gr.HTML(elem_id="answers")
            gr.HTML(text.LEGEND, elem_id="legend")
            t.note, t.status = gr.Markdown(elem_id="note"), gr.Markdown(elem_id="model-status")
    with gr.Accordion("Choose a person", open=True):
        gr.HTML("<a href='#verdict' class='skip'>Skip the gallery</a>")
        t.role = gr.Radio(d.roles, value=d.roles[0], label="show", elem_id="role-filter")
        t.gallery = gr.Gallery(columns=8, height=290, elem_id="people", **text.PEOPLE_BOX, **STILL)
    _own_inputs(t)
    _noise_views(t, d)
    _stealth_maps(t)
    _optimise(t, d)
    return t


def _own_inputs(t: AttackTab) -> None:
    with gr.Accordion("Your own photo, question, noise file or model", open=False):
        t.banner = gr.HTML(elem_id="banner")
        t.upload = PhotoInput(type="filepath", sources=["upload", "webcam", "clipboard"], **text.UPLOAD_BOX)
        t.question = gr.Textbox("", label=text.QUESTION_LABEL)
        t.noise_file = FileInput(elem_id="noise-file", **text.NOISE_FILE_BOX)
        t.vanilla = gr.Textbox("", label="your model's version before unlearning (folder or Hub id)")
        t.retrain = gr.Textbox("", label="your model's retrain control (never saw the forget set)")


def _noise_views(t: AttackTab, d: Any) -> None:
    with gr.Accordion("See the noise", open=False):
        t.denoiser = gr.Dropdown(d.denoisers, value=d.denoiser, label=text.DENOISER_LABEL)
        t.slider = gr.ImageSlider(label="clean ↔ with δ (drag)", height=300, type="pil", elem_id="slider")
        t.views = gr.Gallery(label="what δ does", columns=4, height=290, elem_id="views", **STILL)
        gr.Markdown(text.noise_help(d.image_size))
        before = [[name, "shown with the first answers"] for name in page.METRICS]  # never an empty table
        gr.Markdown("**How visible is δ**")
        t.metrics = gr.HTML(page.metrics_html(before), elem_id="visible")
        t.exports = gr.File(label="these answers as CSV and JSON", **FILES)


def _stealth_maps(t: AttackTab) -> None:
    with gr.Accordion("Stealth: the embedding map", open=False) as t.stealth_box:
        with gr.Row():
            t.umap_plot = gr.Plot(label="embedding map: this photo with the noise in use", elem_id="map")
            t.map_text = gr.Markdown(elem_id="map-text")
        with gr.Row():
            t.stealthy_map = gr.Plot(label="the shipped δ, with the stealth term", elem_id="stealthy-map")
            t.stealthy_text = gr.Markdown(elem_id="stealthy-text")
        with gr.Row():
            t.plain_map = gr.Plot(label="the same budget, without the stealth term", elem_id="plain-map")
            t.plain_text = gr.Markdown(elem_id="plain-text")


def _optimise(t: AttackTab, d: Any) -> None:
    with gr.Accordion("Optimise a noise now", open=False):
        with gr.Row():
            t.eps = gr.Slider(1, 32, value=d.eps, step=1, label="ε (/255)")
            t.steps = gr.Slider(5, 300, value=d.steps, step=5, label="steps", elem_id="opt-steps")
            t.stealth = gr.Slider(0, 200, value=d.stealth, step=10, label="stealth weight λ")
            t.opt_denoiser = gr.Dropdown(d.denoisers, value=d.denoiser, label="denoiser in the loss")
        with gr.Row():
            t.opt_btn, t.stop_btn = gr.Button("Optimise", variant="primary"), gr.Button("Stop")
        t.opt_status = gr.Markdown(actions.estimate(state(), d.model, d.steps), elem_id="opt-status")
        t.run_id = gr.Textbox(visible=False, label="run")  # API callers: the run id `stop` takes
        with gr.Row():
            t.loss_plot, t.delta_view = gr.Plot(label="loss"), gr.Image(label=text.DELTA_LABEL, height=220)
        t.download = gr.File(label="the noise: last and lowest-loss δ", **FILES)


def wire(page: Page) -> None:
    """Every page event of the tab. Each action that changes what is asked clears the stale results, then shows
    the answers (fast), the verdict over the photos and the map, each as it lands."""
    t, demo = page.tabs["attack"], page.blocks
    apply = _applier(t)
    load_in, load_out = [t.model, t.person, t.role, t.loaded], [t.model, t.status, t.gallery, t.person, t.photo]
    for event in (demo.load, t.model.input):  # a failed load puts the last model back (handlers.load_for_page)
        loaded = [*load_out, t.examples, t.loaded, t.message, t.load_ok]
        went = event(handlers.load_for_page, load_in, loaded, api_name=False, trigger_mode="always_last")
        apply(went.then(handlers.loaded_well, t.load_ok, None, **QUIET), only_after_success=True)
    pick = shown(handler(lambda m, i: (*actions.example(state(), m, i), None)), 3)  # an example: its person and photo
    apply(t.examples.click(pick, [t.model, t.examples], [t.person, t.photo, t.upload, t.message], api_name=False))
    thumb = shown(handlers.pick_thumbnail, 2)
    apply(t.gallery.select(thumb, [t.model, t.role], [t.person, t.upload, t.message], api_name=False))
    for event in (t.person.input, t.photo.input):  # a bench person or photo picked: your own photo goes
        apply(event(lambda: (None, ""), None, [t.upload, t.message], trigger_mode="always_last", **QUIET))
    asked = (t.noise_source.input, t.denoiser.input, t.upload.upload, t.upload.clear, t.question.submit)
    for event in (*asked, t.run_btn.click):
        apply(event(lambda: "", None, t.message, trigger_mode="always_last", **QUIET))  # the last message goes
    uploaded = lambda f, o: (handlers.sources_update(f, o, "uploaded"), "")  # noqa: E731
    apply(t.noise_file.upload(uploaded, [t.noise_file, t.optimised], [t.noise_source, t.message], **QUIET))
    cleared = lambda s, o: (handlers.sources_update(None, o, s), "")  # noqa: E731
    apply(t.noise_file.clear(cleared, [t.noise_source, t.optimised], [t.noise_source, t.message], **QUIET))
    thumbs = shown(handler(lambda m, r: actions.thumbs(state(), m, r)), 1)
    t.role.change(thumbs, [t.model, t.role], [t.gallery, t.message], api_name=False)
    maps = shown(handler(handlers.stealth_maps), 4)
    stealth_out = [t.stealthy_map, t.stealthy_text, t.plain_map, t.plain_text, t.message]
    t.stealth_box.expand(maps, [t.model, t.denoiser, t.noise_source], stealth_out, api_name=False)
    _wire_optimise(t, apply)


def _applier(t: AttackTab) -> Any:
    """`apply(event)`: after `event`, the stale results go, then the page's one Request is answered."""
    fields = t.request_inputs()
    outputs = [t.table, t.note, t.preview, t.views, t.slider, t.metrics, t.exports, t.banner]
    blank = (text.WORKING, "", "", None, None, None, None, None, "", None, "")

    def show(values: dict) -> Any:
        """A page action's one request, built from what the page holds, and its one call."""
        yield from handlers.show_page(Request(**{name: values[c] for name, c in fields.items()}))

    clear = f"() => {json.dumps(blank)}"  # in the browser: a step less on the server for every action (classroom.py)
    page = shown(handler(show), 11, keep={8: text.NO_RESULT})  # a mistake: the message box, no stale verdict
    stale = [t.verdict, *outputs, t.umap_plot, t.map_text]
    fresh = [*outputs, t.verdict, t.umap_plot, t.map_text, t.message]

    def apply(event: Any, only_after_success: bool = False) -> None:
        after = event.success if only_after_success else event.then
        after(None, None, stale, js=clear, **QUIET).then(page, set(fields.values()), fresh, api_name=False)

    return apply


def _wire_optimise(t: AttackTab, apply: Any) -> None:
    """Optimise (sized by the steps slider's estimate), its Stop, and the new δ applied at once."""
    estimate = shown(handler(lambda m, n: actions.estimate(state(), m, n)), 1, at=0)
    t.steps.release(estimate, [t.model, t.steps], t.opt_status, api_name=False)
    adopt = lambda files, f: (files[0], handlers.sources_update(f, files[0], "optimised"))  # noqa: E731  (new δ)
    opt_in, opt_out = t.optimise_inputs(), [t.loss_plot, t.opt_status, t.delta_view, t.download]
    run = t.opt_btn.click(handlers.arm_stop, None, None, queue=False, api_name=False).then(
        shown(handlers.optimise_on_page, 4, at=1), opt_in, opt_out, api_name=False, **HEAVY
    )
    run = run.success(adopt, [t.download, t.noise_file], [t.optimised, t.noise_source], **QUIET)
    apply(run.success(None, None, None, js=text.SCROLL_TO_VERDICT, api_name=False))  # its verdict, in view
    t.stop_btn.click(handlers.stop_on_page, None, t.opt_status, api_name=False, queue=False)
