"""The few Gradio-specific parts the app wires together: how user errors reach the page, the photo input."""

from __future__ import annotations

import functools
import html
import importlib
import importlib.util
import inspect
import logging
from collections.abc import Callable
from typing import Any

import gradio as gr

from sua_demo.errors import SuaError

# On a ZeroGPU Space `spaces.GPU` books a GPU for each call; elsewhere calls run as they are.
gpu: Callable = importlib.import_module("spaces").GPU if importlib.util.find_spec("spaces") else (lambda fn: fn)
log = logging.getLogger("sua.app")


class PhotoInput(gr.Image):
    """gr.Image's preview, webcam and paste, but the file reaches sua_demo.images.read_image untouched: Gradio would
    decode it with PIL first, before our checks (bombs, strips, formats) could give their one-line reasons."""

    def preprocess(self, payload: Any) -> str | None:
        return None if payload is None else str(payload.path)

    def get_block_name(self) -> str:  # the browser side is gr.Image's own
        return "image"


PRIVATE = ("face_",)  # handlers whose errors may quote what a visitor typed about their person: logged by kind


def _logged(fn: Callable, err: Exception) -> str:
    if fn.__name__.startswith(PRIVATE):
        log.warning("user error in %s: %s", fn.__name__, type(err).__name__)
    else:
        log.warning("user error in %s: %s", fn.__name__, err)
    return str(err)


def handler(fn: Callable) -> Callable:
    """A SuaError becomes a gr.Error (what an API or MCP caller gets), logged in one line; anything else is a bug
    and shows as one. On a ZeroGPU Space the call books a GPU."""

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        from sua_demo.threads import SERVING_THREADS, torch_threads  # torch only once a call comes

        try:
            with torch_threads(SERVING_THREADS):  # heavy jobs run on a fresh thread of their own (threads.py)
                return fn(*args, **kwargs)
        except SuaError as err:
            raise gr.Error(_logged(fn, err), print_exception=False) from None

    @functools.wraps(fn)
    def streamed(*args: Any, **kwargs: Any) -> Any:
        try:
            yield from fn(*args, **kwargs)
        except SuaError as err:
            raise gr.Error(_logged(fn, err), print_exception=False) from None

    return gpu(streamed if inspect.isgeneratorfunction(fn) else wrapped)


def sentence(text: str) -> str:
    """A message as a sentence: capital first, full stop last (library messages and ours alike)."""
    text = text.strip()
    if not text:
        return ""
    return text[0].upper() + text[1:] + ("" if text[-1] in ".!?" else ".")


def message_html(text: str) -> str:
    """The page's message box: one sentence that stays until the next action (a toast would vanish)."""
    return f"<div class='message' role='alert'>⚠ {html.escape(sentence(text))}</div>" if text else ""


def shown(fn: Callable, outputs: int, at: int | None = None, keep: dict[int, Any] | None = None) -> Callable:
    """The page's own version of a handler. A gr.Error raised for a user's mistake would turn every output of the
    event into a red 'Error' pill (person and photo controls included) and say why in a toast that fades. Here its
    sentence goes to output `at` instead (None: one extra, last output, the page's message box); the other outputs
    keep what they show, or take the placeholder given for them in `keep`."""

    def failed(err: gr.Error) -> tuple[Any, ...]:
        out = [keep.get(i, gr.skip()) if keep else gr.skip() for i in range(outputs)]
        text = message_html(str(err.message))
        if at is None:
            return (*out, text)
        out[at] = text
        return tuple(out)

    def ok(value: Any) -> Any:
        value = value if isinstance(value, tuple) else (value,)
        value = (*value, gr.skip()) if at is None else value
        return value if len(value) > 1 else value[0]

    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def streamed(*args: Any, **kwargs: Any) -> Any:
            try:
                for value in fn(*args, **kwargs):
                    yield ok(value)
            except gr.Error as err:
                yield failed(err)

        return streamed

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            return ok(fn(*args, **kwargs))
        except gr.Error as err:
            out = failed(err)
            return out if len(out) > 1 else out[0]

    return wrapped


def caller(request: Any) -> str:
    """Whose run a Stop stops: the browser session; else one key for API callers and one for MCP clients (an MCP
    tool call carries no session, and its queued calls come back through Gradio's own client, marked 'mcp')."""
    headers = getattr(request, "headers", None) or {}
    if headers.get("x-gradio-user") == "mcp" or "/mcp" in str(getattr(request, "url", "") or ""):
        return "mcp"
    return str(getattr(request, "session_hash", None) or "api")
