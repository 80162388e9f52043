"""SUA Lab, the Gradio app (Hugging Face Spaces ready): layout and wiring over `sua_demo.engine`.

Importing this file builds nothing and loads nothing; `python app.py` (or a Space) calls `main()`.
Every handler turns UI values into engine calls and engine results into UI values, nothing more.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gradio as gr

try:  # On a ZeroGPU Space, `spaces.GPU` books a GPU for the call; elsewhere it is a no-op.
    import spaces

    gpu = spaces.GPU
except ImportError:

    def gpu(fn: Callable | None = None, **_: Any) -> Any:
        return fn if fn is not None else (lambda f: f)


NOISE_SOURCES = ("shipped", "uploaded", "optimised")
DISPLAY_SIDE = 256
PHOTO_HELP = "photo 0–4: train photos · 5–6: held-out photos that no training or attack ever used"
_STOPS: dict[str, threading.Event] = {}

ABOUT = """
## What this is
Unlearning fine-tunes a multimodal LLM so that it stops revealing facts about people in photos.
**SUA (Stealthy Unlearning Attack)** tests whether the facts are gone or only hidden: one *universal*
noise pattern δ, ‖δ‖∞ ≤ ε, optimised with PGD on a few forget-set photos, is added to any photo. If the
unlearned model then answers again, the knowledge was still in the weights.

**Stealth.** The attack also keeps the model's embedding of x+δ close to that of a *denoised* x+δ, so a
detector that compares an input with its denoised copy sees nothing odd (see the embedding map).

## The controls, and why they matter
A noise could also *write* an answer into the image. Every figure is therefore read against:
- **random noise** of the same ε (should change nothing);
- **the same δ on the retrain control**, a model that never saw the forget people (should stay at chance);
- **a δ optimised against the retrain control itself**, which measures how much δ can write in on its own;
- **people δ never saw** (marked *unseen by δ* in the gallery): recovery there is the paper's
  generalisation claim, measured rather than assumed.

The shipped figures (`checkpoints/noise/*/report.md`) come from running these models: on the
refusal-style IDK model and on full-parameter GradDiff, δ brings back answers about forget people it
never saw (+17 and +19 points, against at most +4 for the same δ on the retrain control); the LoRA
models unlearned to 0–1 % (GA, KL, NPO) give back about what a δ writes in by itself. That
contrast is a finding, not a bug.

## Ethics
The 100 people here are fictitious: faces drawn by a program, names and facts sampled at random.
Point the tool at real models only to *audit* unlearning you are responsible for, or that its owners
asked you to test. Do not use it to extract personal data about real people.
"""


_ENGINE_LOCK = threading.Lock()


@functools.lru_cache(maxsize=1)
def _engine():  # type: ignore[no-untyped-def]
    from sua_demo.engine import Engine

    return Engine()


def engine():  # type: ignore[no-untyped-def]
    """The one engine of this process, built on first use (not at import), once even when threads race."""
    with _ENGINE_LOCK:
        return _engine()


def user_errors(fn: Callable) -> Callable:
    """A SuaError becomes a red message in the UI; the app keeps serving."""
    from sua_demo.errors import SuaError

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except SuaError as err:
            raise gr.Error(str(err)) from err

    return wrapped


def _source(model: str, custom: str) -> str:
    return (custom or "").strip() or model


def _person_id(label: str | None) -> int:
    match = re.match(r"\s*#?(\d+)", label or "")  # "#12 Name (...)" from the UI, or "12" from the API
    if not match:
        from sua_demo.errors import SuaError

        raise SuaError("pick a person from the gallery, or upload a photo")
    return int(match.group(1))


def _display(x: Any) -> Any:
    from sua_demo.images import to_pil

    return to_pil(x, scale=max(1, DISPLAY_SIDE // int(x.shape[-1])))


# -- handlers --------------------------------------------------------------------------------
@user_errors
def load_model(model: str, custom: str) -> tuple[str, Any, list]:
    """Load (or reuse) a model; refresh the gallery, marking who the shipped noise was optimised on."""
    eng = engine()
    sess = eng.session(_source(model, custom))
    people = eng.people(sess.shipped_noise)
    gallery = [(eng.photo(pid, 0), label) for pid, label in people]
    status = (
        f"**{sess.name}**: `{type(sess.adapter.model).__name__}`, {sess.image_size} px input. "
        f"Shipped noise: {sess.noise_note}."
    )
    labels = [label for _, label in people]
    return status, gr.update(choices=labels, value=labels[0]), gallery


@user_errors
def pick_from_gallery(evt: gr.SelectData) -> tuple[str, None]:
    """The clicked thumbnail's caption is the person's label; picking a person clears an uploaded photo."""
    value = evt.value if isinstance(evt.value, dict) else {}
    return str(value.get("caption") or ""), None


@user_errors
def show_person(person: str, photo: int) -> tuple[Any, str]:
    eng = engine()
    pid = _person_id(person)
    facts = "\n".join(f"- **{k}**: {v}" for k, v in eng.facts(pid).items())
    return eng.photo(pid, int(photo)), f"{person}\n\n{facts}"


def _noise(sess: Any, source: str, noise_file: str | None, optimised: str | None) -> Any:
    from sua_demo.attacks import load_noise
    from sua_demo.errors import SuaError

    if source == "shipped":
        if sess.shipped_noise is None:
            raise SuaError(f"{sess.name} has no shipped noise; upload one or optimise one")
        return sess.shipped_noise
    path = noise_file if source == "uploaded" else optimised
    if not path:
        what = "upload a .safetensors noise file" if source == "uploaded" else "optimise a noise first"
        raise SuaError(f"noise source is '{source}': {what}")
    return load_noise(path, sess.image_size)


def _image(sess: Any, person: str, photo: int, upload: str | None) -> tuple[Any, int | None, list[str]]:
    """The input picture at the model's resolution, whose person it is (None for an upload), and notes."""
    from sua_demo.images import read_image

    eng = engine()
    if upload:
        pil, notes = read_image(upload)
        return eng.prepare(sess, pil), None, notes
    pid = _person_id(person)
    return eng.prepare(sess, eng.photo(pid, int(photo))), pid, []


@gpu
@user_errors
def answer(
    model: str,
    custom: str,
    person: str,
    photo: int,
    upload: str | None,
    question: str,
    noise_source: str,
    noise_file: str | None,
    optimised: str | None,
    denoiser: str,
) -> tuple[list, list[list[str]], list[list[str]], str]:
    """Answers on clean / noisy / denoised images, the pictures, and how visible the noise is."""
    from sua_demo.engine import check_question

    eng = engine()
    sess = eng.session(_source(model, custom))
    noise = _noise(sess, noise_source, noise_file, optimised)
    x, pid, notes = _image(sess, person, photo, upload)
    questions = eng.questions(pid)
    if question and question.strip():
        questions.append((check_question(question), None))
    cmp = eng.compare(sess, x, questions, noise, denoiser)
    images = [
        (_display(cmp.clean), "clean x"),
        (_display(cmp.noisy), "noisy x + δ"),
        (_display(cmp.denoised), f"denoised D(x + δ), {denoiser}"),
        (_display(cmp.delta_view), f"δ amplified (±{noise.eps * 255:.0f}/255 → full range)"),
        (_display(cmp.diff_view), "|x + δ − x| heatmap"),
    ]
    rows = []
    for r in cmp.rows:
        v = r.verdicts()
        cells = [f"{a} ({mark})" if mark else a for a, mark in zip((r.clean, r.noisy, r.denoised), v, strict=True)]
        rows.append([r.question, r.truth or "?", *cells])
    p, c = cmp.pixels, cmp.cosines
    metrics = [
        ["L∞ (×255)", f"{255 * p['linf']:.1f}"],
        ["L2", f"{p['l2']:.2f}"],
        ["PSNR (dB)", f"{p['psnr']:.1f}"],
        ["SSIM", f"{p['ssim']:.3f}"],
        ["cos(E(x+δ), E(D(x+δ)))", f"{c['cos_noisy_denoised']:.4f}"],
        ["cos(E(x+δ), E(x))", f"{c['cos_noisy_clean']:.4f}"],
    ]
    who = "your photo" if pid is None else eng.person_label(pid, noise)
    note = f"Answering about **{who}** with **{sess.name}**, noise: {noise_source}."
    return images, rows, metrics, " ".join([note, *notes])


@gpu
@user_errors
def embedding_map(
    model: str,
    custom: str,
    person: str,
    photo: int,
    upload: str | None,
    noise_source: str,
    noise_file: str | None,
    optimised: str | None,
    denoiser: str,
) -> Any:
    from sua_demo.plots import embedding_figure

    eng = engine()
    sess = eng.session(_source(model, custom))
    noise = _noise(sess, noise_source, noise_file, optimised)
    x, _, _ = _image(sess, person, photo, upload)
    return embedding_figure(eng.embedding_map(sess, noise, denoiser, user_image=x))


@gpu
def optimise(
    model: str,
    custom: str,
    eps: float,
    steps: int,
    denoiser: str,
    stealth: float,
    request: gr.Request,
    progress: gr.Progress = gr.Progress(),  # noqa: B008  (Gradio's documented way to ask for a progress bar)
) -> Iterator[tuple[Any, str, list[str] | None, str | None, Any]]:
    """Optimise a noise in a worker thread, streaming the loss curve; Stop keeps the delta so far."""
    from sua_demo.attacks import save_noise
    from sua_demo.errors import SuaError
    from sua_demo.images import amplified, to_pil
    from sua_demo.plots import loss_figure

    try:
        sess = engine().session(_source(model, custom))
    except SuaError as err:
        raise gr.Error(str(err)) from err
    steps = int(steps)
    key = request.session_hash or "local"
    stop = _STOPS.setdefault(key, threading.Event())  # armed at the click (arm_stop), or now for API callers
    if stop.is_set():  # Stop was pressed while this run waited in the queue
        if _STOPS.get(key) is stop:
            _STOPS.pop(key)
        yield gr.skip(), "stopped before it started", gr.skip(), gr.skip(), gr.skip()
        return
    out_dir = Path(tempfile.mkdtemp(prefix="sua_noise_"))
    history: list[tuple[int, float]] = []
    last = 0.0
    try:
        for item in engine().optimise_stream(sess, eps, steps, denoiser, stealth, stop, out_dir):
            if isinstance(item, tuple):
                history.append(item)
                progress(item[0] / steps, desc=f"step {item[0]}/{steps}")
                if time.time() - last > 0.5:
                    last = time.time()
                    # skip: the previous noise stays offered and selectable until this one is ready
                    yield loss_figure(history, steps), f"step {item[0]}/{steps}", gr.skip(), gr.skip(), gr.skip()
            else:
                noise = item
    except Exception as err:
        shutil.rmtree(out_dir, ignore_errors=True)
        if isinstance(err, SuaError):
            raise gr.Error(str(err)) from err
        raise
    finally:
        if _STOPS.get(key) is stop:
            _STOPS.pop(key)
    path = save_noise(noise, out_dir / f"sua_{sess.name}_eps{eps:g}.safetensors")
    png = out_dir / f"sua_{sess.name}_eps{eps:g}_amplified.png"
    to_pil(amplified(noise.delta, noise.eps)).save(png)
    done = "stopped early" if noise.meta.get("stopped_early") else "done"
    status = f"{done}: {int(noise.meta.get('step', 0))} steps, final loss {noise.meta.get('loss', float('nan')):.3f}"
    yield loss_figure(history, steps), status, [str(path), str(png)], str(path), gr.update(value="optimised")


def arm_stop(request: gr.Request) -> None:
    """Runs unqueued at the Optimise click, so that a Stop pressed while the run still waits in the queue
    (one optimisation runs at a time) cancels it when its turn comes."""
    key = request.session_hash or "local"
    if key not in _STOPS or _STOPS[key].is_set():
        _STOPS[key] = threading.Event()


def stop_optimising(request: gr.Request) -> str:
    stop = _STOPS.get(request.session_hash or "local")
    if stop is None:
        return "nothing is being optimised"
    stop.set()
    return "stopping after the current step…"


@gpu
@user_errors
def batch(model: str, custom: str, noise_source: str, noise_file: str | None, optimised: str | None) -> tuple[str, Any]:
    from sua_demo.plots import recovery_figure

    eng = engine()
    sess = eng.session(_source(model, custom))
    rec, tables = eng.batch_report(sess, _noise(sess, noise_source, noise_file, optimised))
    return tables, recovery_figure(rec)


# -- layout ----------------------------------------------------------------------------------
def build_app() -> gr.Blocks:
    from sua_demo.attacks import AttackConfig
    from sua_demo.denoisers import DENOISERS
    from sua_demo.engine import DEFAULT_MODEL, SHIPPED_MODELS
    from sua_demo.plots import STEALTH_CAPTION

    recipe = AttackConfig()  # the sliders start where the CLI and the shipped noises do

    denoisers = [d for d in DENOISERS.names() if d != "ddpm"]  # the DDPM purifier ships no weights
    with gr.Blocks(title="SUA Lab") as demo:
        gr.Markdown("# SUA Lab: did the unlearned model really forget?")
        optimised = gr.State(None)
        with gr.Tab("Attack"):
            with gr.Row():
                with gr.Column(scale=2):
                    with gr.Row():
                        model = gr.Dropdown(list(SHIPPED_MODELS), value=DEFAULT_MODEL, label="shipped model")
                        custom = gr.Textbox(
                            label="or a model id / local folder", placeholder="llava-hf/llava-1.5-7b-hf"
                        )
                    load_btn = gr.Button("Load model")
                    status = gr.Markdown(elem_id="model-status")
                    gallery = gr.Gallery(
                        label="people (click to pick)", columns=8, height=220, allow_preview=False, elem_id="people"
                    )
                    person = gr.Dropdown(label="person", elem_id="person", allow_custom_value=True)
                    with gr.Row():
                        preview = gr.Image(label="photo", height=150, interactive=False)
                        facts = gr.Markdown()
                    photo = gr.Slider(0, 6, value=5, step=1, label=PHOTO_HELP)
                    with gr.Row():
                        noise_source = gr.Radio(list(NOISE_SOURCES), value="shipped", label="noise")
                        denoiser = gr.Dropdown(denoisers, value="gaussian", label="denoiser")
                    run_btn = gr.Button("Apply noise and answer", variant="primary", elem_id="run")
                    with gr.Accordion("Your own photo, question or noise file", open=False):
                        upload = gr.File(label="upload a photo (JPEG, PNG, WebP, GIF…)", type="filepath")
                        question = gr.Textbox(label="your own question (the preset questions are always asked)")
                        noise_file = gr.File(label="noise .safetensors (for 'uploaded')", type="filepath")
                    with gr.Accordion("Optimise a noise now", open=False):
                        with gr.Row():
                            eps = gr.Slider(1, 32, value=round(recipe.eps * 255), step=1, label="ε (/255)")
                            steps = gr.Slider(5, 300, value=60, step=5, label="PGD steps")
                            stealth = gr.Slider(0, 200, value=recipe.stealth_weight, step=10, label="stealth weight λ")
                        opt_denoiser = gr.Dropdown(denoisers, value=recipe.denoiser, label="denoiser in the loss")
                        with gr.Row():
                            opt_btn = gr.Button("Optimise", variant="primary")
                            stop_btn = gr.Button("Stop")
                        loss_plot = gr.Plot(label="loss")
                        opt_status = gr.Markdown()
                        download = gr.File(label="download the noise", file_count="multiple", interactive=False)
                with gr.Column(scale=3):
                    note = gr.Markdown(elem_id="note")
                    views = gr.Gallery(label="clean · noisy · denoised · δ · |diff|", columns=5, height=240)
                    answers = gr.Dataframe(
                        headers=["question", "truth", "clean", "noisy", "denoised"],
                        label="answers",
                        wrap=True,
                        interactive=False,
                        column_widths=["30%", "14%", "18%", "19%", "19%"],
                        elem_id="answers",
                    )
                    metrics = gr.Dataframe(headers=["metric", "value"], label="how visible is δ", interactive=False)
                    umap_plot = gr.Plot(label="embedding map")
                    gr.Markdown(STEALTH_CAPTION)
        with gr.Tab("Batch"):
            gr.Markdown(
                "The recovery protocol for the chosen model and noise: generation exact match on each group, "
                "clean, with the noise, and with random noise of the same ε."
            )
            batch_btn = gr.Button("Run the protocol", variant="primary")
            batch_plot = gr.Plot()
            batch_table = gr.Markdown()
        with gr.Tab("About"):
            gr.Markdown(ABOUT)

        model_in = [model, custom]
        image_in = [person, photo, upload]
        noise_in = [noise_source, noise_file, optimised]
        load_out = [status, person, gallery]
        load_btn.click(load_model, model_in, load_out, api_name="load_model")
        demo.load(load_model, model_in, load_out, api_name=False)
        gallery.select(pick_from_gallery, None, [person, upload], api_name=False)
        person.change(show_person, [person, photo], [preview, facts], api_name=False)
        photo.change(show_person, [person, photo], [preview, facts], api_name=False)
        run_btn.click(
            answer,
            [*model_in, *image_in, question, *noise_in, denoiser],
            [views, answers, metrics, note],
            api_name="answer",
        ).success(embedding_map, [*model_in, *image_in, *noise_in, denoiser], umap_plot, api_name="embedding_map")
        opt_btn.click(arm_stop, None, None, queue=False, api_name=False).then(
            optimise,
            [*model_in, eps, steps, opt_denoiser, stealth],
            [loss_plot, opt_status, download, optimised, noise_source],
            api_name="optimise",
            concurrency_limit=1,
            concurrency_id="optimise",
        )
        stop_btn.click(stop_optimising, None, opt_status, api_name=False)
        batch_btn.click(batch, [*model_in, *noise_in], [batch_table, batch_plot], api_name="batch")
    return demo


def warm_up() -> None:
    """Load the default model and compile UMAP's kernels in the background, so the first click is quick."""
    from sua_demo.engine import DEFAULT_MODEL

    eng = engine()
    sess = eng.session(DEFAULT_MODEL)
    if sess.shipped_noise is not None:
        eng.embedding_map(sess, sess.shipped_noise, user_image=eng.prepare(sess, eng.photo(1, 0)))


def main() -> None:
    threading.Thread(target=warm_up, daemon=True).start()
    port = int(os.environ.get("PORT", os.environ.get("GRADIO_SERVER_PORT", 7860)))
    build_app().queue(default_concurrency_limit=2).launch(
        server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"), server_port=port, show_error=True
    )


if __name__ == "__main__":
    main()
