"""The engine's one validation module: every value a page, an API caller or the CLI hands the engine is checked
here, refused with a sentence that says which value and why (a SuaError, shown in one line)."""

from __future__ import annotations

import math
from typing import Any

from sua_demo.attacks import Noise
from sua_demo.core.errors import BadValueError, SuaError, UnknownNameError
from sua_demo.denoisers import DENOISERS
from sua_demo.engine.model_cache import LoadedModel

MAX_QUESTION_CHARS = 300
MAX_STEPS = 2000


def finite(name: str, value: Any, low: float, high: float, open_low: bool = False) -> float:
    """A number from the UI or the API, refused with a message if it is not one, NaN, or out of range."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise BadValueError(f"{name} must be a number, got {str(value)[:40]!r}") from None
    if not math.isfinite(v) or v < low or v > high or (open_low and v == low):
        bound = f"({low:g}, {high:g}]" if open_low else f"[{low:g}, {high:g}]"
        raise BadValueError(f"{name} must be a number in {bound}, got {str(value)[:40]}")
    return v


def check_question(question: str) -> str:
    q = " ".join((question or "").split())
    if not q:
        raise SuaError("the question is empty")
    if len(q) > MAX_QUESTION_CHARS:
        raise SuaError(f"the question has {len(q)} characters; keep it under {MAX_QUESTION_CHARS}")
    return q


def check_denoiser(name: str) -> str:
    if name not in DENOISERS:
        raise UnknownNameError(f"unknown denoiser {str(name)[:40]!r}; choose one of: {', '.join(DENOISERS.names())}")
    return name


def check_noise(sess: LoadedModel, noise: Noise) -> None:
    if noise.resolution != sess.image_size:
        raise SuaError(
            f"the noise is {noise.resolution} px but {sess.name} takes {sess.image_size} px; "
            "optimise a noise for this model"
        )
