"""The few Gradio-specific parts the app wires together: how user errors reach the page, the photo input."""

from __future__ import annotations

import functools
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


def _logged(fn: Callable, err: Exception) -> str:
    log.warning("user error in %s: %s", fn.__name__, err)
    return str(err)


def handler(fn: Callable) -> Callable:
    """A SuaError becomes a red message in the UI, logged in one line; anything else is a bug and shows as one.
    On a ZeroGPU Space the call books a GPU."""

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        from sua_demo.attacks.speed import SERVING_THREADS, torch_threads  # torch only once a call comes

        try:
            with torch_threads(SERVING_THREADS):  # heavy jobs run on a fresh thread of their own (speed.py)
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
