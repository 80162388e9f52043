"""What each of the Attack tab's actions computes, over the process's state: a model loaded for the page, its
gallery and examples, one request's answers, verdict and map as each lands, the stealth comparison, and Optimise.
Plain values in and out, no Gradio: the tab's handlers (`handlers.py`) and the API (`ui/api.py`) call these."""

from __future__ import annotations

import html
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from sua_demo.core.errors import SuaError
from sua_demo.core.shipped import label
from sua_demo.engine.look import STAGES, Look, Request, person_id
from sua_demo.engine.look import look as look_at
from sua_demo.engine.threads import LeftTheLine, Waiting
from sua_demo.ui.attack import stealth
from sua_demo.ui.attack import views as page
from sua_demo.ui.attack.optimise import OptimiseView, progress_view
from sua_demo.ui.shared.clock import RunClock
from sua_demo.ui.shared.server import STOPPING, AppState

ROLES = ["unseen by δ", "attacker set", "retain", "all"]


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


def load(state: AppState, model: str, person: str = "", role_filter: str = ROLES[0]) -> Loaded:
    """A model change keeps the chosen person; a first load starts on the best measured example."""
    eng = state.engine
    thumbs, labels = page.gallery(eng, model, role_filter, state.scratch)
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


def thumbs(state: AppState, model: str, role_filter: str) -> list[tuple[Any, str]]:
    return page.gallery(state.engine, model, role_filter, state.scratch)[0]


def person_of_thumb(state: AppState, model: str, role_filter: str, index: int) -> str:
    """The person's number (the person box's value) for a gallery click."""
    thumbs, _ = page.gallery(state.engine, model, role_filter, state.scratch)
    return str(person_id(thumbs[int(index)][1]))


def example(state: AppState, model: str, index: int) -> tuple[str, int]:
    chosen = page.examples(state.engine, model)[int(index)]
    return str(chosen["person"]), int(chosen["photo"])


def show(state: AppState, req: Request) -> Iterator[tuple[page.Page | None, str | None, tuple[Any, str] | None]]:
    """A page action: (answers, verdict, map) as each is ready, the story computed once for all three."""
    for stage, seen in zip(STAGES, look_at(state.engine, req), strict=True):
        if stage == "story":
            yield page.answers_view(seen, state.scratch), None, None
        elif stage == "verdict":
            yield None, page.verdict_view(seen), None
        else:
            yield None, None, stealth.map_view(seen)


def look(state: AppState, req: Request, stage: str) -> Look:
    """One stage of a request (story, verdict or map) for an API caller: the Look with what that stage found."""
    return next(look_at(state.engine, req, (stage,)))


def stealth_maps(state: AppState, model: str, denoiser: str, noise_source: str = "") -> tuple[Any, str, Any, str]:
    """The stealthy δ's map and caption (no map when the page's own map shows the shipped δ already), then the
    same-budget δ's without the stealth term."""
    above = noise_source == "shipped"
    left, right, left_caption, right_caption = stealth.stealth_comparison(state.engine, model, denoiser, above)
    return left, left_caption, right, right_caption


def estimate(state: AppState, model: str, steps: Any) -> str:
    """Before a run: its length at the step time last measured here (at start-up, or the last run's pace)."""
    from sua_demo.engine import MAX_STEPS, finite

    n = int(finite("steps", steps, 1, MAX_STEPS))
    seconds = state.timer.seconds_per_step(state.engine, state.engine.session(model))
    return (
        f"about {n * seconds:.0f} s for {n} steps at the last pace measured here ({seconds:.2f} s a step); "
        "once it runs, the time left comes from the run's own steps"
    )


def optimise(
    state: AppState, model: str, eps: Any, steps: Any, denoiser: str, stealth: Any, key: str, run: str | None = None
) -> Iterator[OptimiseView]:
    """Stream the run: a view every second (each costs the attack thread GIL time), then the final one with
    the files (last and best δ). The time left is this run's own pace (RunClock); the pace it ends on sizes
    the next run's up-front estimate. API callers pass `run` (a name of their choosing, or "" for a new
    secret one); the first view then names it: `stop` with it stops this run, and no other, from any connection.
    The page passes None: its Stop button stops its own session's run."""
    sess = state.engine.session(model)
    announce = run is not None
    flag, run = state.stops.current(key, (run or "").strip()[:200])
    history: list[tuple[int, float]] = []
    from sua_demo.engine import MAX_STEPS, finite

    clock, delta = RunClock(int(finite("steps", steps, 1, MAX_STEPS))), None
    shown, started = 0.0, False
    try:
        if flag.is_set():  # Stop was pressed while this run waited in the queue
            yield OptimiseView(None, "stopped before it started", None)
            return
        kwargs = {"eps_255": eps, "steps": steps, "denoiser": denoiser, "stealth_weight": stealth}
        expected = clock.steps * state.timer.seconds_per_step(state.engine, sess)
        named = f" Run {run}: stop with run={run}." if announce else ""  # an API caller's handle on it
        for item in state.engine.optimise_stream(sess, flag, tick=1.0, expected=expected, **kwargs):
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
                view = progress_view(history, clock.steps, delta, float(eps), 0.0, clock=clock)
                yield replace(view, status=f"{STOPPING} ({view.status})") if flag.is_set() else view
        if (pace := clock.seconds_per_step()) is not None:
            state.timer.record(sess.name, pace)
        files = page.optimised_files(state.scratch.folder(), last, best, sess.name, float(eps))
        elapsed = time.monotonic() - clock.start
        final = progress_view(history, clock.steps, last.delta, float(eps), elapsed, last.meta)
        yield OptimiseView(final.figure, final.status, final.preview, files)
    except LeftTheLine as left:
        yield OptimiseView(None, str(left), None)
    finally:
        state.stops.release(key, flag, run)


def _person_or_none(label: str | None) -> int | None:
    try:
        return person_id(label)
    except SuaError:
        return None
