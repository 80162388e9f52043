"""The page's handlers: UI values in, widget values out (HTML, pictures, plots). API and MCP callers have their
own functions, words and JSON (`api.py`). Importing this loads no model: the process's state is built on the
first call."""

from __future__ import annotations

from typing import Any

import gradio as gr

from sua_demo.core.errors import SuaError
from sua_demo.core.shipped import label, public_name
from sua_demo.ui.gradio_glue import caller, handler, message_html, sentence


def state() -> Any:
    """The engine, scratch folder and stop registry of this process, built on first use (not at import)."""
    from sua_demo.ui.app_state import shared

    return shared()


@handler
def load_widgets(model: str, person: str = "", role_filter: str = "unseen by δ") -> tuple[str, Any, Any, Any, Any]:
    """A model loaded for the page: its status, gallery, people box, photo and example chips."""
    p = state().load(model, person, role_filter)
    people = gr.update(choices=p.people, value=p.person)
    thumbs = gr.update(value=p.thumbs, label=f"people: {p.badges} (click to pick)")
    photo = gr.update() if p.photo is None else gr.update(value=p.photo)  # a model change keeps the photo too
    return p.status, thumbs, people, photo, gr.update(samples=p.samples, label=p.examples_label)


def page_outputs(p: Any) -> tuple:
    """A story's view as the page's eight outputs (the table, note, photo, views, slider, metrics, files, banner)."""
    return p.table, p.note, [(p.preview, p.preview_caption)], p.views, p.slider, p.metrics, p.files, p.banner


def show_page(req: Any) -> Any:
    """One page action: the answers, then the verdict, then the map, each as it lands (eleven outputs; the parts
    not ready yet are left as they are)."""
    from sua_demo.engine.threads import serving

    with serving():  # one thread; a heavy job running leaves it a core (threads.py)
        yield from _page_stages(req)


def _page_stages(req: Any) -> Any:
    for answers, verdict_html, map_view in state().show(req):
        if answers is not None:
            yield (*page_outputs(answers), gr.skip(), gr.skip(), gr.skip())
        elif verdict_html is not None:
            yield (*[gr.skip()] * 8, verdict_html, gr.skip(), gr.skip())
        else:
            yield (*[gr.skip()] * 9, *map_view)


@handler
def optimise_on_page(model: str, eps: float, steps: float, denoiser: str, stealth: float, request: gr.Request):  # type: ignore[no-untyped-def]
    """The page's Optimise: the same run, stopped by the page's own Stop button (no run id to show)."""
    for v in state().optimise(model, eps, steps, denoiser, stealth, caller(request)):
        if v.files is None:
            yield v.figure, v.status, v.preview, gr.skip()
        else:  # the page applies its δ at once (app.py sets the noise source)
            yield v.figure, f"{v.status}; noise source set to 'optimised'", v.preview, v.files


def stealth_maps(model: str, denoiser: str, noise_source: str = "") -> tuple[Any, str, Any, str]:
    """The stealth comparison's two maps; a map not drawn hides its frame (an empty plot drew a broken frame): the
    stealthy one when the page's map above shows the shipped δ already, the plain one when the model has no δ
    trained without the stealth term (its caption says why)."""
    left, left_caption, right, right_caption = state().stealth_maps(model, denoiser, noise_source)
    shown_if = lambda fig: gr.update(value=fig, visible=fig is not None)  # noqa: E731
    return shown_if(left), left_caption, shown_if(right), right_caption


def arm_stop(request: gr.Request) -> None:
    """Runs unqueued at the Optimise click, so a Stop pressed while the run waits cancels it at its turn."""
    state().stops.arm(caller(request))


def stop_on_page(request: gr.Request) -> str:
    """The page's Stop button: this browser session's run."""
    return state().stop(caller(request))


@handler
def audit(model: str, person: str = ""):  # type: ignore[no-untyped-def]
    """The residual-knowledge audit: the shipped one for this model, or, given a forget person, a live one of them
    (every method beside its retrain control; minutes on a CPU, with progress).

    Args:
        model: the unlearned model.
        person: a forget person's number for a live audit; empty for the shipped audit.
    """
    from sua_demo.ui import audit_view

    eng = state().engine
    if not person:
        yield audit_view.shipped_audit(eng, model)
        return
    for status, report, _ in audit_view.live_audit(eng, model, person):
        yield audit_view.audit_shown(status, report)


@handler
def batch(model: str, noise_source: str = "shipped", noise_file: str | None = None, optimised: str | None = None):  # type: ignore[no-untyped-def]
    """The recovery protocol for the model and noise: tables, bars, the shipped budget curves and a CSV.

    Args:
        model: the unlearned model.
        noise_source: shipped, uploaded (noise_file) or optimised.
        noise_file: a noise .safetensors file, for noise_source 'uploaded' (over MCP: a base64 data URI, or the
            URL of a noise file this server serves, such as the one `optimise` returns).
        optimised: the page's optimised noise (not for API callers).
    """
    return state().batch(model, noise_source, noise_file, optimised)


@handler
def pick_thumbnail(model: str, role_filter: str, evt: gr.SelectData) -> tuple[str, None]:
    """A gallery click: that person (their number), and your own photo goes."""
    return state().person_of_thumb(model, role_filter, evt.index), None


def load_for_page(model: str, person: str, role_filter: str, last: str) -> tuple:
    """The page's load: a failure says why in the message box and puts the model box back on the last model that
    loaded, whose person, photo and results stay on the page."""
    try:
        return (_model_box(model), *load_widgets(model, person, role_filter), model, "", True)
    except gr.Error as err:
        said = message_html(f"{sentence(str(err.message))} Still showing {label(public_name(last))}.")
        return (last, *[gr.skip()] * 5, last, said, False)


def _model_box(model: str) -> Any:
    """The model box after a load: a model of the user's own (a folder or Hub id) is listed by its short name, as
    the shipped ones are by theirs, instead of showing the raw path typed."""
    shipped = state().engine.sessions.shipped
    if model in shipped:
        return gr.skip()
    choices = [(label(m), m) for m in shipped] + [(f"{public_name(model)} (yours)", model)]
    return gr.update(choices=choices, value=model)


def loaded_well(ok: bool) -> None:
    """After a load: a failed one ends its chain here (silently: its message is already on the page), so the
    last model's results are not asked again and cannot overwrite that message."""
    if not ok:
        raise gr.Error("the load failed", visible=False, print_exception=False)


def sources_box(sources: list[str]) -> gr.Radio:
    """The noise box as a page first shows it: every source listed, those with nothing to use yet greyed out."""
    from sua_demo.ui.noise_source import greyed_out, sources_help

    return gr.Radio(sources, value="shipped", label="noise δ", elem_id="source", scale=2,
                    info=sources_help(None, None), elem_classes=greyed_out(None, None))  # fmt: skip


def sources_update(noise_file: str | None, optimised: str | None, value: str | None = "shipped") -> Any:
    """The noise box with the sources that have nothing to use yet greyed out, and its help saying what each needs."""
    from sua_demo.ui.noise_source import greyed_out, missing_sources, sources_help

    value = value if value not in missing_sources(noise_file, optimised) else "shipped"
    info, greyed = sources_help(noise_file, optimised), greyed_out(noise_file, optimised)
    return gr.update(value=value, info=info, elem_classes=greyed)


# -- Your face: page handlers only (never an API endpoint: a visitor's photos stay in their own session) ------------
def _face(request: gr.Request) -> Any:
    """This browser session's Your face state (photos, last report), kept by the server, keyed by the session."""
    return state().faces.get(caller(request))


@handler
def face_add(files: Any, delete: Any, request: gr.Request) -> tuple[None, str, str]:
    """Read the uploaded photos into this session's memory; each uploaded file is deleted at once (`delete`
    removes uploads only). The file box is emptied: the thumbnails are the photos in use."""
    from sua_demo.ui import your_face

    thumbs, notes = your_face.add_photos(_face(request), files, delete)
    return None, thumbs, message_html(notes)


def face_clear(request: gr.Request) -> tuple[None, None, str, str]:
    """Remove my photos: the photos in use, and both upload boxes, so what is listed is what is used."""
    from sua_demo.ui import your_face

    return None, None, *your_face.clear_photos(_face(request))


def face_free(request: gr.Request) -> None:
    """Runs unqueued at the click: a second run while this session's first still runs is refused at once, with
    the reason, instead of waiting in the queue to run again; otherwise the run is armed, so a Stop pressed while
    it waits for its turn keeps it from starting."""
    from sua_demo.ui import your_face

    try:
        your_face.arm(_face(request))
    except SuaError as err:
        raise gr.Error(str(err), print_exception=False) from None


def face_stop(request: gr.Request) -> str:
    from sua_demo.ui import your_face

    return your_face.stop(_face(request))


def face_forget(request: gr.Request) -> None:
    """The tab closed (Gradio's unload): this session's photos and report go now, and a run of it stops."""
    state().faces.drop(caller(request))


@handler
def face_name(name: str) -> str:
    """The typed name checked as it is typed: the model's vocabulary limit is said before the run, not after it."""
    from sua_demo.engine.jobs.face import check_name

    if name and name.strip():
        check_name(state().engine, name)
    return ""


@handler
def face_invent() -> tuple[str, ...]:
    """A made-up name and four facts the model can say, new at every press."""
    import secrets

    from sua_demo.engine.jobs.face import invent

    return invent(state().engine, secrets.randbelow(2**31))


@handler
def face_run(name: str, birthplace: str, occupation: str, hobby: str, food: str, method: str, request: gr.Request):  # type: ignore[no-untyped-def]
    """Teach, check, unlearn and attack this session's person, each step as it lands."""
    from sua_demo.ui import your_face

    facts = {"birthplace": birthplace, "occupation": occupation, "hobby": hobby, "food": food}
    yield from your_face.run(state().engine, _face(request), name or "", {k: v or "" for k, v in facts.items()}, method)


@handler
def report_card():  # type: ignore[no-untyped-def]
    """Every shipped unlearning method against every probe: points recovered above the retrain control."""
    from sua_demo.ui.audit_view import report_card_view

    return report_card_view(state().engine)
