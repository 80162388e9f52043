"""What one app process holds (the engine, a scratch folder for downloads, the stop flags) and what each page
action computes. The Gradio handlers in app.py call these methods and nothing else."""

from __future__ import annotations

import atexit
import html
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from sua_demo.core.errors import SuaError
from sua_demo.core.shipped import label
from sua_demo.engine import Engine
from sua_demo.engine.look import STAGES, Look, Request, look, person_id
from sua_demo.engine.threads import LeftTheLine, Waiting
from sua_demo.ui import page, stealth
from sua_demo.ui.exports import Scratch
from sua_demo.ui.optimise import STEP_RANGE, OptimiseView, StepTimer, app_steps, progress_view
from sua_demo.ui.pace import RunClock
from sua_demo.ui.stops import StopRegistry
from sua_demo.ui.your_face import FaceSessions

ROLES = ["unseen by δ", "attacker set", "retain", "all"]


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
        first = state.load(DEFAULT_MODEL)
        people, person, photo = first.people, first.person, first.photo if first.photo is not None else 5
        facts = fact_choices(state.engine)
    models = list(state.engine.sessions.shipped if state is not None else SHIPPED_MODELS)
    size = state.engine.session(DEFAULT_MODEL).image_size if state is not None else 0
    return Defaults(
        models, DEFAULT_MODEL, list(SOURCES), ROLES, DENOISERS.names(), cfg.denoiser,
        round(cfg.eps * 255), steps, cfg.stealth_weight, people, person, photo, facts, size,
    )  # fmt: skip


@dataclass
class Loaded:
    status: str
    thumbs: list[tuple[Any, str]]
    people: list[tuple[str, str]]  # (label shown, value sent): the value is the person's number, as the API takes it
    person: str
    photo: int | None  # the example's photo when the person comes from an example, else unchanged
    samples: list[list[str]] = field(default_factory=list)
    badges: str = ""  # whose split the gallery's badges (attacker set / unseen by δ) follow
    examples_label: str = ""  # what the chips are, true to them (page.examples_label)

    @property
    def labels(self) -> list[str]:
        return [label for label, _ in self.people]


class AppState:
    def __init__(self, engine: Engine | None = None, scratch: Scratch | None = None) -> None:
        self.engine = engine or Engine()
        self.scratch = scratch or Scratch()
        atexit.register(self.scratch.close)  # downloads live as long as the server; nothing is left behind
        self.stops = StopRegistry()
        self.faces = FaceSessions()  # Your face: each browser session's photos, dropped when its tab closes
        self.timer = StepTimer()

    # -- people -----------------------------------------------------------------------------------------------
    def load(self, model: str, person: str = "", role_filter: str = ROLES[0]) -> Loaded:
        """A model change keeps the chosen person; a first load starts on the best measured example."""
        eng = self.engine
        thumbs, labels = page.gallery(eng, model, role_filter, self.scratch)
        people = [(label, str(person_id(label))) for label in labels]
        examples = page.examples(eng, model)
        wanted = _person_or_none(person)
        if wanted is not None and str(wanted) in {value for _, value in people}:
            chosen, photo = str(wanted), None
        elif examples:
            chosen, photo = str(examples[0]["person"]), int(examples[0]["photo"])
        else:
            chosen, photo = people[0][1], None
        samples = [[html.escape(e["text"])] for e in examples]  # chips are HTML (attack_tab: shown whole)
        sess = eng.session(model)
        badges = (
            f"badges for the δ shipped for {label(sess.noise_owner)}"
            if sess.shipped_noise is not None
            else "badges for split 0, the one 'Optimise' fits on"
        )
        status = page.load_status(eng, model)
        return Loaded(status, thumbs, people, chosen, photo, samples, badges, page.examples_label(examples))

    def thumbs(self, model: str, role_filter: str) -> list[tuple[Any, str]]:
        return page.gallery(self.engine, model, role_filter, self.scratch)[0]

    def person_of_thumb(self, model: str, role_filter: str, index: int) -> str:
        """The person's number (the person box's value) for a gallery click."""
        thumbs, _ = page.gallery(self.engine, model, role_filter, self.scratch)
        return str(person_id(thumbs[int(index)][1]))

    def example(self, model: str, index: int) -> tuple[str, int]:
        chosen = page.examples(self.engine, model)[int(index)]
        return str(chosen["person"]), int(chosen["photo"])

    # -- results: one request, one call; each stage shown as it lands -------------------------------------
    def show(self, req: Request) -> Iterator[tuple[page.Page | None, str | None, tuple[Any, str] | None]]:
        """A page action: (answers, verdict, map) as each is ready, the story computed once for all three."""
        for stage, seen in zip(STAGES, look(self.engine, req), strict=True):
            if stage == "story":
                yield page.answers_view(seen, self.scratch), None, None
            elif stage == "verdict":
                yield None, page.verdict_view(seen), None
            else:
                yield None, None, stealth.map_view(seen)

    def look(self, req: Request, stage: str) -> Look:
        """One stage of a request (story, verdict or map) for an API caller: the Look with what that stage found."""
        return next(look(self.engine, req, (stage,)))

    def stealth_maps(self, model: str, denoiser: str, noise_source: str = "") -> tuple[Any, str, Any, str]:
        """The stealthy δ's map and caption (no map when the page's own map shows the shipped δ already), then the
        same-budget δ's without the stealth term."""
        above = noise_source == "shipped"
        left, right, left_caption, right_caption = stealth.stealth_comparison(self.engine, model, denoiser, above)
        return left, left_caption, right, right_caption

    def batch(self, model: str, noise_source: str, noise_file: str | None, optimised: str | None) -> tuple:
        from sua_demo.ui.batch import batch_view

        return batch_view(self.engine, self.scratch, model, noise_source, noise_file, optimised)

    # -- optimise now -----------------------------------------------------------------------------------------
    def estimate(self, model: str, steps: Any) -> str:
        """Before a run: its length at the step time last measured here (at start-up, or the last run's pace)."""
        from sua_demo.engine import MAX_STEPS, finite

        n = int(finite("steps", steps, 1, MAX_STEPS))
        seconds = self.timer.seconds_per_step(self.engine, self.engine.session(model))
        return (
            f"about {n * seconds:.0f} s for {n} steps at the last pace measured here ({seconds:.2f} s a step); "
            "once it runs, the time left comes from the run's own steps"
        )

    def optimise(
        self, model: str, eps: Any, steps: Any, denoiser: str, stealth: Any, key: str, run: str | None = None
    ) -> Iterator[OptimiseView]:
        """Stream the run: a view every second (each costs the attack thread GIL time), then the final one with
        the files (last and best δ). The time left is this run's own pace (RunClock); the pace it ends on sizes
        the next run's up-front estimate. API callers pass `run` (a name of their choosing, or "" for a new
        secret one); the first view then names it: `stop` with it stops this run, and no other, from any connection.
        The page passes None: its Stop button stops its own session's run."""
        sess = self.engine.session(model)
        announce = run is not None
        flag, run = self.stops.current(key, (run or "").strip()[:200])
        history: list[tuple[int, float]] = []
        from sua_demo.engine import MAX_STEPS, finite

        clock, delta = RunClock(int(finite("steps", steps, 1, MAX_STEPS))), None
        shown, started = 0.0, False
        try:
            if flag.is_set():  # Stop was pressed while this run waited in the queue
                yield OptimiseView(None, "stopped before it started", None)
                return
            kwargs = {"eps_255": eps, "steps": steps, "denoiser": denoiser, "stealth_weight": stealth}
            expected = clock.steps * self.timer.seconds_per_step(self.engine, sess)
            named = f" Run {run}: stop with run={run}." if announce else ""  # an API caller's handle on it
            for item in self.engine.optimise_stream(sess, flag, tick=1.0, expected=expected, **kwargs):
                if isinstance(item, Waiting):  # the API and the page say the same words
                    yield OptimiseView(None, item.words() + named, None)
                    continue
                if not started:  # its turn has come: its clock starts now, not at the click
                    started, clock = True, RunClock(clock.steps)
                    if announce:
                        yield OptimiseView(None, f"started: run {run} (stop with run={run})", None)
                if item is not None and len(item) == 2:
                    last, best = item
                    break
                if item is not None:
                    history.append(item[:2])
                    clock.step(item[0])
                    delta = item[2]
                if delta is not None and time.monotonic() - shown > 1.0:
                    shown = time.monotonic()
                    yield progress_view(history, clock.steps, delta, float(eps), 0.0, clock=clock)
            if (pace := clock.seconds_per_step()) is not None:
                self.timer.record(sess.name, pace)
            files = page.optimised_files(self.scratch.folder(), last, best, sess.name, float(eps))
            elapsed = time.monotonic() - clock.start
            final = progress_view(history, clock.steps, last.delta, float(eps), elapsed, last.meta)
            yield OptimiseView(final.figure, final.status, final.preview, files)
        except LeftTheLine:
            yield OptimiseView(None, "stopped while waiting: it left the line and nothing of it ran", None)
        finally:
            self.stops.release(key, flag, run)

    def stop(self, key: str, run: str = "") -> str:
        """Ask this caller's run (or the run with this secret id) to stop after its current step; it keeps the δ so
        far. Nobody else's run is touched."""
        if self.stops.stop(key, run.strip()):
            return "stopping after the current step…"
        return "no run of yours with that id is running" if run.strip() else "nothing is running to stop"


def _person_or_none(label: str | None) -> int | None:
    try:
        return person_id(label)
    except SuaError:
        return None


_SHARED: list[AppState] = []
_LOCK = threading.Lock()


def shared() -> AppState:
    """The one AppState of this process, built at first use, once even when threads race."""
    with _LOCK:
        if not _SHARED:
            _SHARED.append(AppState())
        return _SHARED[0]
