"""*Your face* as the page runs it: a visitor's photos and facts checked, made a person, and taught, unlearned and
attacked on a private copy of the served world's model, one step at a time, in the line of heavy jobs."""

from __future__ import annotations

import threading
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from PIL import Image

from sua_demo.dataset.profiles import FACT_POOLS
from sua_demo.engine import Engine
from sua_demo.engine.threads import Waiting, heavy_stream
from sua_demo.your_face import Visitor, invent_visitor, usable_photos
from sua_demo.your_face.lifecycle import EnrolReport, LifecycleConfig, Progress, StepReport, rule_steps, run_lifecycle
from sua_demo.your_face.visitor import check_name as check_name_for
from sua_demo.your_face.visitor import check_visitor, sayable

FACTS = tuple(FACT_POOLS)


def fact_choices(engine: Engine) -> dict[str, list[str]]:
    """For each fact, the values the default model can say (the dropdowns offer them; typing another is checked)."""
    tokenizer = engine.session("vanilla").adapter.tokenizer
    return {k: sayable(tokenizer, FACT_POOLS[k]) for k in FACTS}


def check_name(engine: Engine, name: str) -> str:
    """The typed name, cleaned, if the default model can learn and say it (else a BadValueError saying why)."""
    return check_name_for(name, engine.session("vanilla").adapter.tokenizer)


def invent(engine: Engine, seed: int = 0) -> tuple[str, ...]:
    """A name no bench person has and four facts, all words the model can say."""
    name, facts = invent_visitor(engine.bench, int(seed), engine.session("vanilla").adapter.tokenizer)
    return (name, *(facts[k] for k in FACTS))


@dataclass
class Ready:
    """A run about to join the line: the visitor (checked), what reading the photos said, and the shipped δ it is
    attacked with. The model is copied only once the run starts: a class waiting in line holds no copies."""

    visitor: Visitor
    notes: list[str]
    shipped: Any


def prepare(engine: Engine, photos: list[Image.Image], name: str, facts: dict[str, str]) -> Ready:
    """Check the photos and facts (a SuaError says what is wrong, before the run waits for its turn)."""
    usable, notes = usable_photos(photos)
    vanilla = engine.session("vanilla")
    name, facts = check_visitor(name, facts, vanilla.adapter.tokenizer)
    return Ready(Visitor(name, facts, usable), notes, engine.session("idk").shipped_noise)


def steps(
    engine: Engine, ready: Ready, method: str, stop: threading.Event
) -> Generator[Waiting | StepReport | Progress | None, None, EnrolReport]:
    """Wait in the line of heavy jobs (its place and wait every second, a `Waiting`), then teach, check, unlearn,
    fit δ, attack on a private copy of the model: each finished step as it lands and each pass of the step under
    way (None every second with nothing new), then the report. `stop` set leaves the line (`LeftTheLine`) or ends
    the run within one pass; nothing the run does touches the model other visitors use."""

    def work(emit: Any) -> EnrolReport:
        vanilla = engine.session("vanilla")
        with vanilla.attack_lock:
            before = vanilla.adapter.clone()
        cfg = LifecycleConfig(method=method, unlearn_stops=rule_steps(engine.world.models, method))
        return run_lifecycle(before, engine.bench, ready.visitor, ready.shipped, cfg, on_step=emit, stop=stop)

    return (yield from heavy_stream(work, "your face", tick=1.0, stop=stop))
