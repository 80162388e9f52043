"""SUA Lab, the Gradio app (Hugging Face Spaces ready): layout and wiring over `sua_demo.ui`. Importing it builds
and loads nothing; `python app.py` (or a Space) calls `main()`. Handlers pass UI values to the library and back."""

from __future__ import annotations

import logging
import threading
from typing import Any

import gradio as gr

from sua_demo.ui.gradio_glue import PhotoInput, handler


def state() -> Any:
    """The engine, scratch folder and stop registry of this process, built on first use (not at import)."""
    from sua_demo.ui.session import shared

    return shared()


# -- handlers: UI values in, library results out (typed and documented: they are also API and MCP tools) ----
@handler
def load_model(model: str, person: str = "", role_filter: str = "unseen by δ") -> tuple[str, list, Any, Any, Any]:
    """Load a model (shipped name, or a folder / Hub id where allowed): status, gallery, people and examples."""
    p = state().load(model, person, role_filter)
    people = gr.update(choices=p.labels, value=p.person)
    thumbs = gr.update(value=p.thumbs, label=f"people: {p.badges} (click to pick)")
    photo = gr.update() if p.photo is None else gr.update(value=p.photo)  # a model change keeps the photo too
    return p.status, thumbs, people, photo, gr.update(samples=p.samples)


@handler
def pick_thumbnail(model: str, role_filter: str, evt: gr.SelectData) -> tuple[str, None]:
    return state().label_of_thumb(model, role_filter, evt.index), None


@handler
def answer(
    model: str, person: str, photo: int, upload: str | None, question: str, noise_source: str,
    noise_file: str | None, optimised: str | None, denoiser: str, vanilla: str = "", retrain: str = "",
) -> tuple[str, str, list, list, Any, list, list[str], str]:  # fmt: skip
    """Answers on one image under every condition (before unlearning; unlearned clean, + δ, + random noise of the
    same ε, + δ then denoised; the retrain control + δ), the pictures, how visible δ is, and CSV / JSON files."""
    p = state().render(model, person, photo, upload, question, noise_source, noise_file, optimised, denoiser,
                       vanilla, retrain)  # fmt: skip
    return p.table, p.note, [(p.preview, p.preview_caption)], p.views, p.slider, p.metrics, p.files, p.banner


@handler
def verdict(
    model: str, person: str, photo: int, upload: str | None, noise_source: str, noise_file: str | None,
    optimised: str | None, vanilla: str = "", retrain: str = "",
) -> str:  # fmt: skip
    """The headline over all of the person's photos: how many answers δ brought back, beside its controls."""
    return state().verdict(model, person, photo, upload, noise_source, noise_file, optimised, vanilla, retrain)


@handler
def embedding_map(
    model: str, person: str, photo: int, upload: str | None, noise_source: str, noise_file: str | None,
    optimised: str | None, denoiser: str,
) -> tuple[Any, str]:  # fmt: skip
    """2-D map of clean, noisy and denoised image embeddings (bench sample + this image), with a text summary."""
    return state().map(model, person, photo, upload, noise_source, noise_file, optimised, denoiser)


@handler
def optimise(model: str, eps: float, steps: float, denoiser: str, stealth: float, request: gr.Request):  # type: ignore[no-untyped-def]
    """Optimise a universal noise, streaming the loss, a δ preview and the time left; Stop keeps the δ so far."""
    for v in state().optimise(model, eps, steps, denoiser, stealth, request.session_hash or "api"):
        done = v.files is not None
        yield (v.figure, v.status, v.preview, v.files if done else gr.skip(), v.files[0] if done else gr.skip(),
               "optimised" if done else gr.skip())  # fmt: skip


def arm_stop(request: gr.Request) -> None:
    """Runs unqueued at the Optimise click, so a Stop pressed while the run waits cancels it at its turn."""
    state().stops.arm(request.session_hash or "api")


def stop(request: gr.Request) -> str:
    """Stop this browser session's (or API caller's) optimisation after its current step."""
    return state().stop(request.session_hash or "api") or gr.skip()


@handler
def audit(model: str, person: str = "") -> tuple[str, Any]:
    """The residual-knowledge audit: the shipped one for this model, or (with a person) a live one of them."""
    from sua_demo.ui import audit_view

    eng = state().engine
    return audit_view.live_audit(eng, model, person) if person else audit_view.shipped_audit(eng, model)


@handler
def batch(model: str, noise_source: str, noise_file: str | None, optimised: str | None) -> tuple[str, Any, Any, list]:
    """The recovery protocol for the chosen model and noise: tables, bars, the shipped budget curves and CSV."""
    return state().batch(model, noise_source, noise_file, optimised)


# -- layout --------------------------------------------------------------------------------------------------
def build_app() -> gr.Blocks:
    from sua_demo.config import CHECKPOINTS
    from sua_demo.ui import text
    from sua_demo.ui.about import about_markdown
    from sua_demo.ui.launch import CACHE_SWEEP
    from sua_demo.ui.session import defaults

    d = defaults(state())
    with gr.Blocks(title=text.TITLE, delete_cache=CACHE_SWEEP) as demo:
        gr.Markdown(f"# {text.TITLE}\n{text.GUIDE}", elem_classes="guide")
        optimised = gr.State(None)
        with gr.Tab("Attack"):
            with gr.Row(equal_height=True):
                model = gr.Dropdown(d.models, value=d.model, label="unlearned model", allow_custom_value=True,
                                    info=text.MODEL_HELP, elem_id="model", scale=2)  # fmt: skip
                noise_source = gr.Radio(d.sources, value="shipped", label="noise δ", elem_id="source", scale=2)
                run_btn = gr.Button("Apply δ and compare", variant="primary", elem_id="run", scale=1)
            examples = gr.Dataset(components=[gr.Textbox(visible=False)], samples=[], type="index",
                                  label="examples: unseen people on whom the shipped δ beats its controls most",
                                  elem_id="examples", samples_per_page=4)  # fmt: skip
            with gr.Row():
                with gr.Column(scale=2, min_width=260):
                    preview = gr.Gallery(label="the photo", columns=1, height=300, allow_preview=False,
                                         object_fit="contain", elem_id="preview")  # fmt: skip
                    person = gr.Dropdown(label="person", elem_id="person", allow_custom_value=True)
                    photo = gr.Slider(0, 6, value=5, step=1, label="photo", info=text.PHOTO_HELP, elem_id="photo")
                with gr.Column(scale=5, min_width=300):
                    verdict_box = gr.HTML(text.EMPTY, elem_id="verdict")
                    table = gr.HTML(elem_id="answers")
                    note, status = gr.Markdown(elem_id="note"), gr.Markdown(elem_id="model-status")
            with gr.Accordion("Choose a person", open=True):
                gr.HTML("<a href='#verdict' class='skip'>Skip the gallery</a>")
                role = gr.Radio(d.roles, value=d.roles[0], label="show", elem_id="role-filter")
                gallery = gr.Gallery(columns=8, height=290, allow_preview=False, object_fit="contain",
                                     elem_id="people", label="people (click to pick)")  # fmt: skip
            with gr.Accordion("Your own photo, question, noise file or model", open=False):
                banner = gr.HTML(elem_id="banner")
                upload = PhotoInput(type="filepath", sources=["upload", "webcam", "clipboard"], label="your photo",
                                  elem_id="upload", height=240)  # fmt: skip
                question = gr.Textbox("", label="your own question (the preset questions are always asked)")
                noise_file = gr.File(label="a noise .safetensors (source 'uploaded')", file_types=[".safetensors"],
                                     elem_id="noise-file")  # fmt: skip
                vanilla = gr.Textbox(
                    "", label="your model's version before unlearning (folder or Hub id), for that column"
                )
                retrain = gr.Textbox(
                    "", label="your model's retrain control (never saw the forget set), for that column"
                )
            with gr.Accordion("See the noise", open=False):
                denoiser = gr.Dropdown(d.denoisers, value=d.denoiser, label="denoiser (the denoised column, the map)")
                slider = gr.ImageSlider(label="clean ↔ with δ (drag)", height=300, type="pil", elem_id="slider")
                views = gr.Gallery(label="what δ does", columns=4, height=290, object_fit="contain")
                gr.Markdown(text.NOISE_HELP)
                metrics = gr.Dataframe(headers=["metric", "value"], label="how visible is δ", interactive=False)
                exports = gr.File(label="these answers as CSV and JSON", file_count="multiple", interactive=False)
            with gr.Accordion("Stealth: the embedding map", open=False) as stealth_box:
                with gr.Row():
                    umap_plot, map_text = gr.Plot(label="embedding map", elem_id="map"), gr.Markdown()
                with gr.Row():
                    stealthy_map, plain_map, map_caption = gr.Plot(), gr.Plot(), gr.Markdown()
            with gr.Accordion("Optimise a noise now", open=False):
                with gr.Row():
                    eps = gr.Slider(1, 32, value=d.eps, step=1, label="ε (/255)")
                    steps = gr.Slider(5, 300, value=d.steps, step=5, label="steps", elem_id="opt-steps")
                    stealth = gr.Slider(0, 200, value=d.stealth, step=10, label="stealth weight λ")
                    opt_denoiser = gr.Dropdown(d.denoisers, value=d.denoiser, label="denoiser in the loss")
                with gr.Row():
                    opt_btn, stop_btn = gr.Button("Optimise", variant="primary"), gr.Button("Stop")
                opt_status = gr.Markdown(state().estimate(d.model, d.steps), elem_id="opt-status")
                with gr.Row():
                    loss_plot, delta_view = gr.Plot(label="loss"), gr.Image(label="δ so far (amplified)", height=220)
                download = gr.File(label="the noise: last and lowest-loss δ", file_count="multiple", interactive=False)
        with gr.Tab("Batch"):
            gr.Markdown(text.BATCH_HELP)
            batch_btn = gr.Button("Run the protocol", variant="primary")
            batch_plot, budget_plot, batch_table, batch_csv = gr.Plot(), gr.Plot(), gr.Markdown(), gr.File(label="CSV")
        with gr.Tab("Audit") as audit_tab:
            gr.Markdown("Beyond one attack: the same facts asked several ways, each beside its retrain control.")
            audit_btn = gr.Button("Audit the chosen person now (about a minute)", variant="primary")
            audit_text, audit_plot = gr.Markdown(elem_id="audit-table"), gr.Plot(label="recovered per person and fact")
        with gr.Tab("About"):
            gr.Markdown(about_markdown(CHECKPOINTS / "noise"))

        noise_in = [noise_source, noise_file, optimised]
        image_in = [model, person, photo, upload]
        load_out = [status, gallery, person, photo, examples]
        outputs = [table, note, preview, views, slider, metrics, exports, banner]

        def apply(event: Any, api: bool = False) -> None:
            """Stale results go first; then the answers (fast), the verdict over the photos, the map."""
            blank, name = (
                (text.EMPTY, "", "", None, None, None, None, None, "", None, ""),
                lambda n: n if api else False,
            )
            event.then(lambda: blank, None, [verdict_box, *outputs, umap_plot, map_text], api_name=False).then(
                answer, [*image_in, question, *noise_in, denoiser, vanilla, retrain], outputs, api_name=name("answer")
            ).success(verdict, [*image_in, *noise_in, vanilla, retrain], verdict_box, api_name=name("verdict")).success(
                embedding_map, [*image_in, *noise_in, denoiser], [umap_plot, map_text], api_name=name("embedding_map")
            )

        apply(demo.load(load_model, [model, person, role], load_out, api_name="load_model"))
        apply(model.change(load_model, [model, person, role], load_out, api_name=False, trigger_mode="always_last"))
        pick = handler(lambda m, i: (*state().example(m, i), None))  # an example: its person and photo, no upload
        apply(examples.click(pick, [model, examples], [person, photo, upload], api_name=False))
        apply(gallery.select(pick_thumbnail, [model, role], [person, upload], api_name=False))
        for event in (person.input, photo.release):  # a bench person or photo picked: your own photo goes
            apply(event(lambda: None, None, upload, api_name=False, trigger_mode="always_last"))
        for event in (noise_source.input, denoiser.input, upload.upload, upload.clear, question.submit):
            apply(event(lambda: None, None, None, api_name=False, trigger_mode="always_last"))
        unset = handler(lambda s: "shipped" if s == "uploaded" else s)  # a noise file given is the one meant
        apply(noise_file.upload(lambda: "uploaded", None, noise_source, api_name=False))
        apply(noise_file.clear(unset, noise_source, noise_source, api_name=False))
        apply(run_btn.click(lambda: None, None, None, api_name=False), api=True)
        role.change(handler(lambda m, r: state().thumbs(m, r)), [model, role], gallery, api_name=False)
        maps = handler(lambda m, d: state().stealth_maps(m, d))  # the stealthy δ beside the one without the term
        stealth_box.expand(maps, [model, denoiser], [stealthy_map, plain_map, map_caption], api_name=False)
        steps.release(handler(lambda m, n: state().estimate(m, n)), [model, steps], opt_status, api_name=False)
        apply(opt_btn.click(arm_stop, None, None, queue=False, api_name=False).then(
            optimise, [model, eps, steps, opt_denoiser, stealth], [loss_plot, opt_status, delta_view, download,
            optimised, noise_source], api_name="optimise", concurrency_limit=1, concurrency_id="optimise",
        ).success(lambda: None, None, None, api_name=False))  # the source is now the new δ: its answers  # fmt: skip
        stop_btn.click(stop, None, opt_status, api_name="stop", queue=False)
        audit_tab.select(audit, [model], [audit_text, audit_plot], api_name=False)
        audit_btn.click(audit, [model, person], [audit_text, audit_plot], api_name="audit", concurrency_id="optimise")
        batch_btn.click(batch, [model, *noise_in], [batch_table, batch_plot, budget_plot, batch_csv], api_name="batch")
    return demo


def main() -> None:
    from sua_demo.ui.launch import app_arguments, launch_kwargs, queued, serve_pages_on_one_thread, warm_up

    args = app_arguments()  # first: `--help` prints and exits before any model loads
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    serve_pages_on_one_thread()
    demo = build_app()  # first: it times an attack step (to size Optimise), which the warm-up would slow down
    threading.Thread(target=warm_up, args=(state(),), daemon=True).start()
    queued(demo).launch(**launch_kwargs(state().scratch.root, args.host, args.port))


if __name__ == "__main__":
    main()
