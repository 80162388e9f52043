"""The Attack tab's handlers: widget values in, widget values out (HTML, pictures, plots). Importing this loads no
model: the process's state is built on the first call (`shared.server`)."""

from __future__ import annotations

from typing import Any

import gradio as gr

from sua_demo.core.shipped import label, public_name
from sua_demo.ui.attack import actions
from sua_demo.ui.serving.gradio_parts import caller, handler, message_html, sentence
from sua_demo.ui.shared import state
from sua_demo.ui.shared.server import NOTHING_TO_STOP


@handler
def load_widgets(model: str, person: str = "", role_filter: str = "unseen by δ") -> tuple[str, Any, Any, Any, Any]:
    """A model loaded for the page: its status, gallery, people box, photo and example chips."""
    p = actions.load(state(), model, person, role_filter)
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
    for answers, verdict_html, map_view in actions.show(state(), req):
        if answers is not None:
            yield (*page_outputs(answers), gr.skip(), gr.skip(), gr.skip())
        elif verdict_html is not None:
            yield (*[gr.skip()] * 8, verdict_html, gr.skip(), gr.skip())
        else:
            yield (*[gr.skip()] * 9, *map_view)


@handler
def optimise_on_page(model: str, eps: float, steps: float, denoiser: str, stealth: float, request: gr.Request):  # type: ignore[no-untyped-def]
    """The page's Optimise: the same run, stopped by the page's own Stop button (no run id to show)."""
    for v in actions.optimise(state(), model, eps, steps, denoiser, stealth, caller(request)):
        if v.files is None:
            yield v.figure, v.status, v.preview, gr.skip()
        else:  # the page applies its δ at once (app.py sets the noise source)
            yield v.figure, f"{v.status}; noise source set to 'optimised'", v.preview, v.files


def stealth_maps(model: str, denoiser: str, noise_source: str = "") -> tuple[Any, str, Any, str]:
    """The stealth comparison's two maps; a map not drawn hides its frame (an empty plot drew a broken frame): the
    stealthy one when the page's map above shows the shipped δ already, the plain one when the model has no δ
    trained without the stealth term (its caption says why)."""
    left, left_caption, right, right_caption = actions.stealth_maps(state(), model, denoiser, noise_source)
    shown_if = lambda fig: gr.update(value=fig, visible=fig is not None)  # noqa: E731
    return shown_if(left), left_caption, shown_if(right), right_caption


def arm_stop(request: gr.Request) -> None:
    """Runs unqueued at the Optimise click, so a Stop pressed while the run waits cancels it at its turn."""
    state().stops.arm(caller(request))


def stop_on_page(request: gr.Request) -> Any:
    """The page's Stop button: this browser session's run, which then says it is stopping, and how it ended, in
    its own status line. This click writes there only when nothing runs: with two writers, an answer to the click
    that came back late (a loaded server) covered the run's last words ("stopping…" left on a run long over)."""
    said = state().stop(caller(request))
    return said if said == NOTHING_TO_STOP else gr.skip()


@handler
def pick_thumbnail(model: str, role_filter: str, evt: gr.SelectData) -> tuple[str, None]:
    """A gallery click: that person (their number), and your own photo goes."""
    return actions.person_of_thumb(state(), model, role_filter, evt.index), None


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
    from sua_demo.ui.attack.noise_source import greyed_out, sources_help

    return gr.Radio(sources, value="shipped", label="noise δ", elem_id="source", scale=2,
                    info=sources_help(None, None), elem_classes=greyed_out(None, None))  # fmt: skip


def sources_update(noise_file: str | None, optimised: str | None, value: str | None = "shipped") -> Any:
    """The noise box with the sources that have nothing to use yet greyed out, and its help saying what each needs."""
    from sua_demo.ui.attack.noise_source import greyed_out, missing_sources, sources_help

    value = value if value not in missing_sources(noise_file, optimised) else "shipped"
    info, greyed = sources_help(noise_file, optimised), greyed_out(noise_file, optimised)
    return gr.update(value=value, info=info, elem_classes=greyed)
