"""SUA Lab, the Gradio app (Hugging Face Spaces ready): layout and wiring over `sua_demo.ui`. Importing it builds
and loads nothing; `python app.py` (or a Space) calls `main()`. Handlers pass UI values to the library and back."""

from __future__ import annotations

import logging
import threading
from typing import Any

import gradio as gr

from sua_demo.request import Request
from sua_demo.ui import api, tools
from sua_demo.ui.gradio_glue import FileInput, PhotoInput, PublicBlocks, handler, shown
from sua_demo.ui.launch import HEAVY

STILL = {"allow_preview": False, "object_fit": "contain"}  # galleries to look at, not to browse
FILES = {"file_count": "multiple", "interactive": False}  # downloads offered, not uploads asked for


def build_app() -> gr.Blocks:
    from sua_demo.config import CHECKPOINTS
    from sua_demo.ui import text
    from sua_demo.ui.about import about_markdown
    from sua_demo.ui.face_tab import build_face_tab
    from sua_demo.ui.launch import CACHE_SWEEP
    from sua_demo.ui.session import defaults

    d, state = defaults(tools.state()), tools.state
    with PublicBlocks(title=text.TITLE, delete_cache=CACHE_SWEEP) as demo:
        gr.Markdown(f"# {text.TITLE}\n{text.GUIDE}", elem_classes="guide")
        optimised, loaded = gr.State(None), gr.State(d.model)
        with gr.Tabs(overflow_behavior="wrap"):  # on a phone every tab shows, none hides in a menu
            with gr.Tab("Attack"):
                with gr.Row(equal_height=True):
                    model = gr.Dropdown(d.models, value=d.model, elem_id="model", scale=2, **text.MODEL_BOX)
                    noise_source = tools.sources_box(d.sources)
                    run_btn = gr.Button("Apply δ and compare", variant="primary", elem_id="run", scale=1)
                message = gr.HTML("", elem_id="message")
                examples = gr.Dataset(components=[gr.Textbox(visible=False)], type="index", **text.EXAMPLES_BOX)
                with gr.Row():
                    with gr.Column(scale=2, min_width=260):
                        preview = gr.Gallery(label="the photo", columns=1, height=300, elem_id="preview", **STILL)
                        person = gr.Dropdown(
                            d.people, value=d.person, label="person", elem_id="person", allow_custom_value=True
                        )
                        photo = gr.Slider(0, 6, value=5, step=1, label="photo", info=text.PHOTO_HELP, elem_id="photo")
                    with gr.Column(scale=5, min_width=300):
                        verdict_box = gr.HTML(text.EMPTY, elem_id="verdict")
                        table = gr.HTML(elem_id="answers")
                        gr.HTML(text.LEGEND, elem_id="legend")
                        note, status = gr.Markdown(elem_id="note"), gr.Markdown(elem_id="model-status")
                with gr.Accordion("Choose a person", open=True):
                    gr.HTML("<a href='#verdict' class='skip'>Skip the gallery</a>")
                    role = gr.Radio(d.roles, value=d.roles[0], label="show", elem_id="role-filter")
                    gallery = gr.Gallery(columns=8, height=290, elem_id="people", **text.PEOPLE_BOX, **STILL)
                with gr.Accordion("Your own photo, question, noise file or model", open=False):
                    banner = gr.HTML(elem_id="banner")
                    upload = PhotoInput(type="filepath", sources=["upload", "webcam", "clipboard"], **text.UPLOAD_BOX)
                    question = gr.Textbox("", label=text.QUESTION_LABEL)
                    noise_file = FileInput(elem_id="noise-file", **text.NOISE_FILE_BOX)
                    vanilla = gr.Textbox("", label="your model's version before unlearning (folder or Hub id)")
                    retrain = gr.Textbox("", label="your model's retrain control (never saw the forget set)")
                with gr.Accordion("See the noise", open=False):
                    denoiser = gr.Dropdown(d.denoisers, value=d.denoiser, label=text.DENOISER_LABEL)
                    slider = gr.ImageSlider(label="clean ↔ with δ (drag)", height=300, type="pil", elem_id="slider")
                    views = gr.Gallery(label="what δ does", columns=4, height=290, elem_id="views", **STILL)
                    gr.Markdown(text.NOISE_HELP)
                    metrics = gr.Dataframe(headers=["metric", "value"], label="how visible is δ", interactive=False)
                    exports = gr.File(label="these answers as CSV and JSON", **FILES)
                with gr.Accordion("Stealth: the embedding map", open=False) as stealth_box:
                    with gr.Row():
                        umap_plot = gr.Plot(label="embedding map", elem_id="map")
                        map_text = gr.Markdown(elem_id="map-text")
                    with gr.Row():
                        stealthy_map = gr.Plot(elem_id="stealthy-map")
                        stealthy_text = gr.Markdown(elem_id="stealthy-text")
                    with gr.Row():
                        plain_map, plain_text = gr.Plot(elem_id="plain-map"), gr.Markdown(elem_id="plain-text")
                with gr.Accordion("Optimise a noise now", open=False):
                    with gr.Row():
                        eps = gr.Slider(1, 32, value=d.eps, step=1, label="ε (/255)")
                        steps = gr.Slider(5, 300, value=d.steps, step=5, label="steps", elem_id="opt-steps")
                        stealth = gr.Slider(0, 200, value=d.stealth, step=10, label="stealth weight λ")
                        opt_denoiser = gr.Dropdown(d.denoisers, value=d.denoiser, label="denoiser in the loss")
                    with gr.Row():
                        opt_btn, stop_btn = gr.Button("Optimise", variant="primary"), gr.Button("Stop")
                    opt_status = gr.Markdown(state().estimate(d.model, d.steps), elem_id="opt-status")
                    run_id = gr.Textbox(visible=False, label="run")  # API callers: the run id `stop` takes
                    with gr.Row():
                        loss_plot, delta_view = gr.Plot(label="loss"), gr.Image(label=text.DELTA_LABEL, height=220)
                    download = gr.File(label="the noise: last and lowest-loss δ", **FILES)
            with gr.Tab("Batch"):
                gr.Markdown(text.BATCH_HELP)
                batch_btn = gr.Button("Run the protocol", variant="primary")
                batch_plot, budget_plot, batch_table = gr.Plot(), gr.Plot(), gr.Markdown()
                batch_csv = gr.File(label="CSV")
            with gr.Tab("Audit") as audit_tab:
                gr.Markdown(text.AUDIT_HELP)
                audit_btn = gr.Button("Audit the chosen person now", variant="primary", elem_id="audit-run")
                audit_person = gr.Dropdown([("the shipped audit", ""), *d.people], value="", visible=False, label="who")
                audit_text = gr.Markdown(elem_id="audit-table", elem_classes="wide-tables")
                audit_plot = gr.Plot(label="recovered per person and fact")
                card_text, card_plot = gr.Markdown(elem_id="report-card", elem_classes="wide-tables"), gr.Plot()
            with gr.Tab("Your face"):
                build_face_tab(d.facts, demo)
            with gr.Tab("About"):
                gr.HTML(text.STORY_DIAGRAM, elem_id="story-diagram")
                gr.Markdown(about_markdown(CHECKPOINTS / "noise"), elem_id="about", elem_classes="wide-tables")

        # what each API handler reads; the page reads all of it, with its own optimised δ, as one Request
        noise_in, image_in = [noise_source, noise_file], [model, person, photo, upload]
        answer_in = [*image_in, question, *noise_in, denoiser, vanilla, retrain]
        verdict_in, map_in = [*image_in, *noise_in, vanilla, retrain], [*image_in, *noise_in, denoiser]
        batch_in, opt_in = [model, *noise_in], [model, eps, steps, opt_denoiser, stealth]
        outputs = [table, note, preview, views, slider, metrics, exports, banner]
        opt_out = [loss_plot, opt_status, delta_view, download]
        batch_out = [batch_table, batch_plot, budget_plot, batch_csv]
        request_in = {  # Request's fields, by name
            **dict(model=model, person=person, photo=photo, upload=upload, question=question, denoiser=denoiser),
            **dict(noise_source=noise_source, noise_file=noise_file, optimised=optimised),
            **dict(vanilla=vanilla, retrain=retrain),
        }
        blank = (text.WORKING, "", "", None, None, None, None, None, "", None, "")
        quiet = {"api_name": False, "show_progress": "hidden"}

        def show(values: dict) -> Any:
            """A page action's one request, built here from what the page holds, and its one call."""
            yield from tools.show_page(Request(**{name: values[c] for name, c in request_in.items()}))

        page = shown(handler(show), 11, keep={8: text.NO_RESULT})  # a mistake: the message box, no stale verdict

        def apply(event: Any) -> None:
            """Stale results go first; then the answers (fast), the verdict over the photos, the map."""
            event.then(lambda: blank, None, [verdict_box, *outputs, umap_plot, map_text], **quiet).then(
                page, set(request_in.values()), [*outputs, verdict_box, umap_plot, map_text, message], api_name=False
            )

        load_in, load_out = [model, person, role, loaded], [model, status, gallery, person, photo, examples, loaded]
        for event in (demo.load, model.input):  # a failed load puts the last model back (tools.load_for_page)
            apply(event(tools.load_for_page, load_in, [*load_out, message], api_name=False, trigger_mode="always_last"))
        pick = shown(handler(lambda m, i: (*state().example(m, i), None)), 3)  # an example: its person and photo
        apply(examples.click(pick, [model, examples], [person, photo, upload, message], api_name=False))
        thumb = shown(tools.pick_thumbnail, 2)
        apply(gallery.select(thumb, [model, role], [person, upload, message], api_name=False))
        for event in (person.input, photo.input):  # a bench person or photo picked: your own photo goes
            apply(event(lambda: (None, ""), None, [upload, message], trigger_mode="always_last", **quiet))
        for event in (noise_source.input, denoiser.input, upload.upload, upload.clear, question.submit, run_btn.click):
            apply(event(lambda: "", None, message, trigger_mode="always_last", **quiet))  # the last message goes
        uploaded = lambda f, o: (tools.sources_update(f, o, "uploaded"), "")  # noqa: E731
        apply(noise_file.upload(uploaded, [noise_file, optimised], [noise_source, message], **quiet))
        cleared = lambda s, o: (tools.sources_update(None, o, s), "")  # noqa: E731
        apply(noise_file.clear(cleared, [noise_source, optimised], [noise_source, message], **quiet))
        thumbs = shown(handler(lambda m, r: state().thumbs(m, r)), 1)
        role.change(thumbs, [model, role], [gallery, message], api_name=False)
        maps = shown(handler(lambda m, d: state().stealth_maps(m, d)), 4)
        stealth_out = [stealthy_map, stealthy_text, plain_map, plain_text, message]
        stealth_box.expand(maps, [model, denoiser], stealth_out, api_name=False)
        estimate = shown(handler(lambda m, n: state().estimate(m, n)), 1, at=0)
        steps.release(estimate, [model, steps], opt_status, api_name=False)
        adopt = lambda files, f: (files[0], tools.sources_update(f, files[0], "optimised"))  # noqa: E731  (new δ)
        run = opt_btn.click(tools.arm_stop, None, None, queue=False, api_name=False).then(
            shown(tools.optimise_on_page, 4, at=1), opt_in, opt_out, api_name=False, **HEAVY
        )
        run = run.success(adopt, [download, noise_file], [optimised, noise_source], **quiet)
        apply(run.success(None, None, None, js=text.SCROLL_TO_VERDICT, api_name=False))  # its verdict, in view
        stop_btn.click(tools.stop_on_page, None, opt_status, api_name=False, queue=False)
        audit_tab.select(shown(tools.audit, 2, at=0), [model], [audit_text, audit_plot], api_name=False)
        audit_tab.select(shown(tools.report_card, 2, at=0), None, [card_text, card_plot], api_name=False)
        live = shown(tools.audit, 2, at=0)
        audit_btn.click(live, [model, person], [audit_text, audit_plot], api_name=False, **HEAVY)
        batch_btn.click(shown(tools.batch, 4, at=0), [*batch_in, optimised], batch_out, api_name=False)

        # the API and the MCP tools (sua_demo/ui/api.py): words and JSON, on no trigger of the page
        to_load, audit_in = [model, person, role], [model, audit_person]
        api_in = (to_load, answer_in, verdict_in, map_in, [*opt_in, run_id], audit_in, batch_in)
        api.register(dict(zip(api.TOOLS, api_in, strict=True)), run_id)
    return demo


def main() -> None:
    from sua_demo.ui import launch

    args = launch.app_arguments()  # first: `--help` prints and exits before any model loads
    launch.check_world()  # a mistyped SUA_WORLD: one line, before anything starts
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    launch.cap_log_lines()
    launch.serve_pages_on_one_thread()
    demo = build_app()  # first: it times an attack step (to size Optimise), which the warm-up would slow down
    threading.Thread(target=launch.warm_up, args=(tools.state(),), daemon=True).start()
    launch.queued(demo).launch(**launch.launch_kwargs(tools.state().scratch.root, args.host, args.port))


if __name__ == "__main__":
    main()
