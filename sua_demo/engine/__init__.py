"""What the app and the CLI call: one engine API, split by job into the modules of this package: `models` (loaded
models and their controls), `people` (people, roles, photos, questions), `story` (the story of one photo, a
person's verdict, guided examples), `optimise`, `maps` (the embedding map), `batch`, and `checks` (every value
checked once). `Engine` is all of them on one object, so one cache of models and maps serves every job. Plain
values in, plain values out; the page reaches the library through this package and `jobs/` only.

Everything expensive is cached per model (the image bank, the map of the bench sample per noise), because a
person clicking around should wait for the model, not for bookkeeping.
"""

from __future__ import annotations

from sua_demo.attacks import AttackConfig, Noise
from sua_demo.attacks.noise import noise_bytes, noise_digest
from sua_demo.engine.batch import Batches
from sua_demo.engine.checks import MAX_STEPS, check_question, finite
from sua_demo.engine.maps import Maps
from sua_demo.engine.model_cache import DEFAULT_MODEL, SHIPPED_MODELS, LoadedModel
from sua_demo.engine.optimise import Optimising
from sua_demo.engine.story import COLUMNS, Stories, Story, StoryRow

# what the page reaches through the engine and nothing below it (the ui contract in pyproject.toml)
__all__ = ["COLUMNS", "DEFAULT_MODEL", "MAX_STEPS", "SHIPPED_MODELS", "AttackConfig", "Engine", "LoadedModel", "Noise",
           "Story", "StoryRow", "check_question", "finite", "noise_bytes", "noise_digest"]  # fmt: skip


class Engine(Stories, Batches, Optimising, Maps):
    """Every job of the engine on one object: the models and caches are shared, each job is its own module."""
