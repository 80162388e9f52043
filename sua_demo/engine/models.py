"""The engine's models: a world's loaded models by name, the controls beside each, and the random-noise control."""

from __future__ import annotations

import threading
from typing import Any

from sua_demo.attacks import ATTACKS, AttackConfig, Noise
from sua_demo.core.config import World, served_world
from sua_demo.dataset import build_bench
from sua_demo.dataset.records import Bench
from sua_demo.engine.memo import Memo
from sua_demo.engine.model_cache import LoadedModel, LoadedModels


class Models:
    """Loads and caches models; the other parts of the engine read `bench`, `world` and these models."""

    def __init__(self, world: World | None = None, bench: Bench | None = None) -> None:
        self.world = world or served_world()  # SUA_WORLD=faithful serves the faithful world (docs/world.md)
        self.bench = bench or build_bench(self.world.bench)
        self._ids = {p.id for p in self.bench.people}
        self.sessions = LoadedModels(self.world, self.bench)
        self._random: dict[tuple[int, float], Noise] = {}
        self._map_lock = threading.Lock()
        # a story holds five pictures (about 0.75 MB): fewer of them are kept than of verdicts, which hold counts
        self._stories: Memo[Any] = Memo(64)
        self._verdicts: Memo[Any] = Memo(1024)
        self._placed: Memo[Any] = Memo(256)  # an image's points on a fitted map (engine/maps.py)

    def session(self, model: str) -> LoadedModel:
        """A shipped model's name, or (where allowed) any folder / Hub id the adapters can load."""
        return self.sessions.get(model)

    def controls(
        self, sess: LoadedModel, vanilla: str = "", retrain: str = ""
    ) -> tuple[LoadedModel | None, LoadedModel | None]:
        """The before-unlearning and retrain-control models beside `sess`: the shipped ones for a shipped model,
        those the user names for their own model, None (shown as not available) otherwise."""
        if sess.shipped:
            vanilla, retrain = vanilla or "vanilla", retrain or "retrain"
        return (self.session(vanilla) if vanilla else None, self.session(retrain) if retrain else None)

    def random_noise(self, sess: LoadedModel, eps: float) -> Noise:
        """Uniform noise of the same eps (seed 0), the control every figure is read against."""
        key = (sess.image_size, round(eps, 8))
        if key not in self._random:
            with sess.attack_lock:  # its run switches kernels on the shared model too: never beside another attack
                if key not in self._random:
                    attack = ATTACKS.get("random")(sess.adapter, AttackConfig(eps=eps))
                    self._random[key] = attack.run(sess.bank, [], progress=False)
        return self._random[key]
