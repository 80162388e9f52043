"""The page's one door: what the app and the CLI call. The engine's jobs are the modules of this package (`api`:
`Engine`, every job on one object; `look`: one page action, one call; `jobs/`: the page's whole workflows; `threads`:
the line of heavy jobs), and the names below are the rest of the library the page may hold: the values it shows
or passes back (a noise, a verdict, a trend), and the helpers that draw them. `sua_demo.ui` imports this package
and nothing else of the library but `core.errors` and `core.shipped` (an import-linter allow-list,
`pyproject.toml`).

The names are loaded on first use (PEP 562), as diffusers does: importing the page costs no torch until a
call needs it. The TYPE_CHECKING block is the same list written as imports, for type checkers and import-linter.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_PUBLIC = {
    "sua_demo.engine.api": ["Engine"],
    "sua_demo.engine.story": ["COLUMNS", "Story", "StoryRow"],
    "sua_demo.engine.checks": ["MAX_STEPS", "check_question", "finite"],
    "sua_demo.engine.model_cache": ["DEFAULT_MODEL", "SHIPPED_MODELS", "LoadedModel"],
    "sua_demo.attacks": ["AttackConfig", "Noise"],
    "sua_demo.attacks.noise": ["noise_bytes", "noise_digest"],
    "sua_demo.denoisers": ["DENOISERS"],
    "sua_demo.analysis": ["embedding_map"],
    "sua_demo.analysis.paired": ["ALPHA", "Paired"],
    "sua_demo.analysis.verdict": ["Verdict"],
    "sua_demo.analysis.scale_trend": ["Trend"],
    "sua_demo.core.config": ["CHECKPOINTS", "served_world"],
    "sua_demo.core.images": ["amplified", "read_image", "to_pil"],
    "sua_demo.core.io": ["atomic_write_bytes"],
    "sua_demo.dataset.profiles": ["FACT_POOLS"],
    "sua_demo.your_face.lifecycle": ["EnrolReport", "Progress", "StepReport"],
    "sua_demo.your_face.photos": ["MAX_PHOTOS", "MIN_PHOTOS", "check_size"],
    "sua_demo.your_face.visitor": ["MAX_NAME_CHARS"],
}
_WHERE = {name: module for module, names in _PUBLIC.items() for name in names}
__all__ = sorted(_WHERE)

if TYPE_CHECKING:  # the same names as imports (ruff: they are the door's, not this module's)
    from sua_demo.analysis import embedding_map  # noqa: F401
    from sua_demo.analysis.paired import ALPHA, Paired  # noqa: F401
    from sua_demo.analysis.scale_trend import Trend  # noqa: F401
    from sua_demo.analysis.verdict import Verdict  # noqa: F401
    from sua_demo.attacks import AttackConfig, Noise  # noqa: F401
    from sua_demo.attacks.noise import noise_bytes, noise_digest  # noqa: F401
    from sua_demo.core.config import CHECKPOINTS, served_world  # noqa: F401
    from sua_demo.core.images import amplified, read_image, to_pil  # noqa: F401
    from sua_demo.core.io import atomic_write_bytes  # noqa: F401
    from sua_demo.dataset.profiles import FACT_POOLS  # noqa: F401
    from sua_demo.denoisers import DENOISERS  # noqa: F401
    from sua_demo.engine.api import Engine  # noqa: F401
    from sua_demo.engine.checks import MAX_STEPS, check_question, finite  # noqa: F401
    from sua_demo.engine.model_cache import DEFAULT_MODEL, SHIPPED_MODELS, LoadedModel  # noqa: F401
    from sua_demo.engine.story import COLUMNS, Story, StoryRow  # noqa: F401
    from sua_demo.your_face.lifecycle import EnrolReport, Progress, StepReport  # noqa: F401
    from sua_demo.your_face.photos import MAX_PHOTOS, MIN_PHOTOS, check_size  # noqa: F401
    from sua_demo.your_face.visitor import MAX_NAME_CHARS  # noqa: F401


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(_WHERE[name])
    value = getattr(module, name) if hasattr(module, name) else importlib.import_module(f"{_WHERE[name]}.{name}")
    globals()[name] = value  # once loaded, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
