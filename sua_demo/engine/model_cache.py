"""Loaded models and what the app keeps beside each (its image bank, its shipped noises and report, its maps).

Shipped models are small and shared by every visitor, so they stay loaded once loaded. Models named by a
visitor (a folder or a Hub id) are off on a public Space unless the operator allows them
(`SUA_ALLOW_MODELS`: a comma-separated allow-list, or `*`), and live in a small cache of their own, so
one visitor's model never evicts the shipped ones everybody else is using.
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from sua_demo.attacks import Noise, load_noise
from sua_demo.core import shipped
from sua_demo.core.config import World
from sua_demo.core.errors import SuaError
from sua_demo.dataset.records import Bench
from sua_demo.models import VisionLanguageAdapter, load_adapter
from sua_demo.models.examples import ImageBank

# every model a world may ship, in the model box's order; a world serves those its folder holds
SHIPPED_MODELS = shipped.MODELS
DEFAULT_MODEL = shipped.DEFAULT
NOISE_FALLBACK = shipped.DEFAULT  # vanilla and the retrain control get the IDK noise: the "same delta" control
MAX_NAME_CHARS = 200
ALLOW_ENV = "SUA_ALLOW_MODELS"


@dataclass
class LoadedModel:
    """One loaded model with everything the app keeps beside it."""

    name: str
    adapter: VisionLanguageAdapter
    bank: ImageBank
    shipped_noise: Noise | None
    noise_note: str
    noise_owner: str = ""  # the model the shipped noise was optimised on (vanilla and retrain borrow IDK's)
    plain_noise: Noise | None = None  # the same-budget delta without the stealth term, where shipped
    report: dict[str, Any] | None = None  # the shipped recovery report (report.json), where there is one
    examples: list[dict[str, Any]] | None = None  # measured guided examples (examples.json); None: not measured yet
    maps: OrderedDict[str, Any] = field(default_factory=OrderedDict)  # noise fingerprint -> fitted map
    attack_lock: threading.Lock = field(default_factory=threading.Lock)
    shipped: bool = False  # loaded from the served world's own models (its controls are the world's too)

    @property
    def image_size(self) -> int:
        return self.adapter.image_size


def custom_models_allowed(name: str, env: dict[str, str] | None = None) -> bool:
    """Locally any folder or Hub id may be loaded; on a Space (SPACE_ID set) only what SUA_ALLOW_MODELS lists."""
    env = dict(os.environ) if env is None else env
    allowed = env.get(ALLOW_ENV)
    if allowed is None:
        return "SPACE_ID" not in env
    items = {a.strip() for a in allowed.split(",") if a.strip()}
    return "*" in items or name in items


class LoadedModels:
    """name -> LoadedModel, loaded once under a per-model lock (users of other models are not held up)."""

    def __init__(self, world: World, bench: Bench, max_custom: int = 2) -> None:
        self.world = world
        self.shipped = tuple(n for n in SHIPPED_MODELS if (world.models / n).is_dir())
        self.bench = bench
        self.max_custom = max_custom
        self._shipped: dict[str, LoadedModel] = {}
        self._custom: OrderedDict[str, LoadedModel] = OrderedDict()
        self._lock = threading.Lock()
        self._loading: dict[str, threading.Lock] = {}

    def get(self, model: str) -> LoadedModel:
        name = self.shipped_name((model or "").strip())
        if not name:
            raise SuaError("choose a model, or type a model id or local folder")
        if len(name) > MAX_NAME_CHARS:
            raise SuaError(f"a model name of {len(name)} characters is too long; keep it under {MAX_NAME_CHARS}")
        if name not in self.shipped and not custom_models_allowed(name):
            raise SuaError(
                f"this server loads only its shipped models ({', '.join(self.shipped)}); "
                f"the operator can allow others with {ALLOW_ENV}"
            )
        cache = self._shipped if name in self.shipped else self._custom
        with self._lock:
            if name in cache:
                if cache is self._custom:
                    self._custom.move_to_end(name)
                return cache[name]
            loading = self._loading.setdefault(name, threading.Lock())
        with loading:
            with self._lock:
                if name in cache:
                    return cache[name]
            sess = self._load(name)
            with self._lock:
                cache[name] = sess
                while len(self._custom) > self.max_custom:
                    self._custom.popitem(last=False)
            return sess

    def shipped_name(self, name: str) -> str:
        """A shipped model named by its folder (checkpoints/tiny-llava/idk, ./checkpoints/...) is that shipped
        model, with its noise and controls; any other name is itself."""
        if name in self.shipped or len(name) > MAX_NAME_CHARS or not name:
            return name
        try:
            folder = Path(name).resolve()
        except (OSError, ValueError):
            return name
        return self._shipped_folders.get(folder, name)

    @cached_property
    def _shipped_folders(self) -> dict[Path, str]:
        """Each shipped model's folder, resolved once: a name that is a path is looked up, not resolved again."""
        return {(self.world.models / n).resolve(): n for n in self.shipped}

    def _load(self, name: str) -> LoadedModel:
        ours = name in self.shipped
        adapter = load_adapter(self.world.models / name if ours else name)
        root = self.world.noise
        folder = root / name if (root / name / "delta_split0.safetensors").is_file() else None
        if folder is None and ours and (root / NOISE_FALLBACK / "delta_split0.safetensors").is_file():
            folder = root / NOISE_FALLBACK
        bank = ImageBank(self.bench, adapter)
        if folder is None:
            note = "no shipped noise for this model: upload one or optimise one"
            return LoadedModel(name, adapter, bank, None, note, shipped=ours)
        own = folder.name == name
        noise = load_noise(folder / "delta_split0.safetensors", adapter.image_size)
        owner = shipped.short_label(folder.name)
        note = f"the shipped δ, fitted on {owner}" if own else f"{owner}'s shipped δ (the same-δ control)"
        plain_file = folder / "delta_plain_split0.safetensors"
        plain = load_noise(plain_file, adapter.image_size) if plain_file.is_file() else None
        measured = _json(folder / "examples.json") if own else None
        examples = measured.get("examples", []) if measured else None
        report = _json(folder / "report.json")
        return LoadedModel(name, adapter, bank, noise, note, folder.name, plain, report, examples, shipped=ours)


def _json(path: Path) -> Any:
    return json.loads(path.read_text()) if path.is_file() else None
