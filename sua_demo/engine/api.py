"""`Engine`: every job of the engine on one object, so one cache of models and maps serves them all. Each job is
its own module: `models` (loaded models and their controls), `story` (the story of one photo, a person's verdict,
guided examples), `optimise`, `maps` (the embedding map) and `batch`; `people` and `checks` are what they share.
Plain values in, plain values out.

Everything expensive is cached per model (the image bank, the map of the bench sample per noise), because a
person clicking around should wait for the model, not for bookkeeping.
"""

from __future__ import annotations

from sua_demo.engine.batch import Batches
from sua_demo.engine.maps import Maps
from sua_demo.engine.optimise import Optimising
from sua_demo.engine.story import Stories


class Engine(Stories, Batches, Optimising, Maps):
    """Every job of the engine on one object: the models and caches are shared, each job is its own module."""
