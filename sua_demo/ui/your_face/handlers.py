"""*Your face*'s handlers: page handlers only, never an API endpoint (a visitor's photos stay in their own session).
Importing this loads no model: the process's state is built on the first call (`shared.server`)."""

from __future__ import annotations

import secrets
from typing import Any

import gradio as gr

from sua_demo.core.errors import SuaError
from sua_demo.ui.serving.gradio_parts import caller, handler, message_html
from sua_demo.ui.shared import state
from sua_demo.ui.shared.server import NOTHING_TO_STOP
from sua_demo.ui.your_face import intake, run


def _face(request: gr.Request) -> Any:
    """This browser session's Your face state (photos, last report), kept by the server, keyed by the session."""
    return state().faces.get(caller(request))


@handler
def face_add(files: Any, delete: Any, request: gr.Request) -> tuple[None, str, str]:
    """Read the uploaded photos into this session's memory; each uploaded file is deleted at once (`delete`
    removes uploads only). The file box is emptied: the thumbnails are the photos in use."""
    thumbs, notes = intake.add_photos(_face(request), files, delete)
    return None, thumbs, message_html(notes)


def face_clear(request: gr.Request) -> tuple[None, None, str, str]:
    """Remove my photos: the photos in use, and both upload boxes, so what is listed is what is used."""
    return None, None, *intake.clear_photos(_face(request))


def face_free(request: gr.Request) -> None:
    """Runs unqueued at the click: a second run while this session's first still runs is refused at once, with
    the reason, instead of waiting in the queue to run again; otherwise the run is armed, so a Stop pressed while
    it waits for its turn keeps it from starting."""
    try:
        run.arm(_face(request))
    except SuaError as err:
        raise gr.Error(str(err), print_exception=False) from None


def face_stop(request: gr.Request) -> Any:
    """Stop this session's run; the run then says so, and how it ended, in its own status line (this click writes
    there only when nothing runs: an answer to it that came back late used to cover the run's last words)."""
    said = run.stop(_face(request))
    return said if said == NOTHING_TO_STOP else gr.skip()


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

    from sua_demo.engine.jobs.face import invent

    return invent(state().engine, secrets.randbelow(2**31))


@handler
def face_run(name: str, birthplace: str, occupation: str, hobby: str, food: str, method: str, request: gr.Request):  # type: ignore[no-untyped-def]
    """Teach, check, unlearn and attack this session's person, each step as it lands."""
    facts = {"birthplace": birthplace, "occupation": occupation, "hobby": hobby, "food": food}
    yield from run.run(state().engine, _face(request), name or "", {k: v or "" for k, v in facts.items()}, method)
