"""What a page action asks about one image, as one value: built once where the page's values are (`app.py`, or an
API tool), read by every stage of its answer (`sua_demo.engine.look`). Plain data: importing it loads nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(kw_only=True)
class Request:
    """What the page holds for one image: which model, image, question, noise and denoiser, and for a model of
    the user's own its before-unlearning and retrain-control models. Built once per action, by keyword only (a
    reordered field cannot silently swap two inputs)."""

    model: str
    person: str = ""
    photo: Any = 5
    upload: str | None = None
    question: str = ""
    noise_source: str = "shipped"
    noise_file: str | None = None
    optimised: str | None = None
    denoiser: str = "gaussian"
    vanilla: str = ""
    retrain: str = ""
