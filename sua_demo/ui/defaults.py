"""Where the page's controls start: the library's own defaults, never copies of them, and Optimise's steps sized to
this machine. `app.py` builds them once and hands them to every tab (`shared.page.Page`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from sua_demo.ui.attack.actions import ROLES, load
from sua_demo.ui.attack.optimise import STEP_RANGE, app_steps
from sua_demo.ui.shared.server import AppState


@dataclass
class Defaults:
    """Where the page's controls start: the library's own defaults, never copies of them."""

    models: list[str]
    model: str
    sources: list[str]
    roles: list[str]
    denoisers: list[str]
    denoiser: str
    eps: int
    steps: int
    stealth: float
    people: list[tuple[str, str]] = field(default_factory=list)  # so the API and MCP schemas list the choices
    person: str | None = None
    photo: int = 5  # the first example's photo, so the first result is the example its chip names
    facts: dict[str, list[str]] = field(default_factory=dict)  # Your face: each fact's values the model can say
    image_size: int = 0  # the served world's photos, pixels a side (the page's words about them)


def defaults(state: AppState | None = None) -> Defaults:
    """The library's defaults; with `state`, Optimise's steps sized to about APP_SECONDS on this machine."""
    from sua_demo.engine import DENOISERS, FACT_POOLS, AttackConfig
    from sua_demo.engine.jobs.face import fact_choices
    from sua_demo.engine.look import SOURCES
    from sua_demo.engine.model_cache import DEFAULT_MODEL, SHIPPED_MODELS

    cfg = AttackConfig()
    steps, people, person, photo = STEP_RANGE[0], [], None, 5
    facts = {k: list(v) for k, v in FACT_POOLS.items()}
    if state is not None:
        steps = app_steps(state.timer.seconds_per_step(state.engine, state.engine.session(DEFAULT_MODEL)))
        first = load(state, DEFAULT_MODEL)
        people, person, photo = first.people, first.person, first.photo if first.photo is not None else 5
        facts = fact_choices(state.engine)
    models = list(state.engine.sessions.shipped if state is not None else SHIPPED_MODELS)
    size = state.engine.session(DEFAULT_MODEL).image_size if state is not None else 0
    return Defaults(
        models, DEFAULT_MODEL, list(SOURCES), ROLES, DENOISERS.names(), cfg.denoiser,
        round(cfg.eps * 255), steps, cfg.stealth_weight, people, person, photo, facts, size,
    )  # fmt: skip
