"""*Your face*'s run driver: one lifecycle run at a time per browser session (`sua_demo/your_face/lifecycle.py`),
shown step by step with an honest clock, stopped at the click or while it waits in the line. Only step timings are
logged."""

from __future__ import annotations

import html
import logging
import threading
import time
from collections.abc import Generator, Iterator
from typing import Any

from sua_demo.core.errors import SuaError
from sua_demo.engine import (
    Engine,
    EnrolReport,
    Progress,
    StepReport,
)
from sua_demo.engine.jobs import face
from sua_demo.engine.threads import LeftTheLine, Waiting
from sua_demo.ui.shared.clock import RunClock
from sua_demo.ui.shared.face_sessions import FaceSession
from sua_demo.ui.shared.server import NOTHING_TO_STOP
from sua_demo.ui.your_face.views import STOPPED, STOPPED_WAITING, finished_view, steps_html

log = logging.getLogger(__name__)


View = tuple[str, str, str, str]  # status, steps table, verdicts, story tables
WARM_UP = 5  # passes a step's clock leaves out: teaching's first ones ran faster than the rest (estimates 32 % short)


class Under:
    """The step under way and its own clock: the time left comes from this step's measured pace on this machine
    (its first passes left out), never from a figure measured elsewhere; for unlearning, whose rule ends it early,
    up to the pass where the rule held for measured visitors of this world (`lifecycle.rule_steps`)."""

    def __init__(self, name: str, clock: RunClock | None = None, total: int = 0) -> None:
        self.name, self.clock, self.note, self.total, self.expected, self.why = name, clock, "", total, None, ""

    def seen(self, progress: Progress) -> Under:
        """This step, one pass further; a new step starts a clock of its own."""
        clock = RunClock(progress.total, warm_up=max(WARM_UP, progress.every), every=progress.every)
        fresh = Under(progress.name, clock, progress.total)
        under = self if progress.name == self.name and self.clock else fresh
        under.expected, under.why = progress.expected, progress.expected_why
        under.clock.steps = progress.expected or progress.total
        under.clock.step(progress.done)
        under.note = progress.note or under.note
        return under

    def pace(self) -> str:
        """The step's passes and its time left, at this step's own pace; once its last pass is done,
        "finishing" (the step's before → after figures), never "0 s left"."""
        if self.clock is None:
            return "running"
        c, left = self.clock, self.clock.left()
        early = self.name.startswith("unlearn")  # its rule may end it long before its last pass
        if left is None:
            wait = "measuring the pace…"
        elif early and self.expected is None:
            wait = f"at most about {left:.0f} s left"
        elif early:
            wait = f"about {left:.0f} s left if it stops by pass {c.steps} ({self.why})"
        else:
            wait = f"about {left:.0f} s left"
        wait = "finishing: its before → after figures…" if c.done >= self.total else wait
        if early:
            rule = f"; {self.note}" if self.note else ""
            return f"running: pass {c.done} of at most {self.total}, {wait} (it stops once the face is forgotten{rule})"
        return f"running: pass {c.done} of {self.total}, {wait}"


def arm(visitor: FaceSession) -> None:
    """At the click, before the run waits for its turn: a fresh stop flag, and the run marked as queued."""
    if visitor.busy.locked():
        raise SuaError("a run of yours is already going; wait for it to finish or press Stop")
    visitor.stop = threading.Event()
    visitor.queued = True


def run(engine: Engine, visitor: FaceSession, name: str, facts: dict[str, str], method: str = "idk") -> Iterator[View]:
    """(status, steps table, verdicts, story tables) after each step; a `SuaError` for input that cannot run, with
    nothing lost: the photos stay in the session. A run stopped while it waited does not start; a run whose page
    went away (the generator closed) stops within one pass of its current step."""
    if not visitor.busy.acquire(blocking=False):
        raise SuaError("a run of yours is already going; wait for it to finish or press Stop")
    visitor.queued = False
    try:
        if visitor.stop.is_set():
            yield "stopped before it started: nothing was taught", "", "", ""
            return
        ready = face.prepare(engine, list(visitor.photos), name, facts)  # checked before it waits for its turn
        note = " ".join(ready.notes)
        report = yield from _follow(face.steps(engine, ready, method, visitor.stop), visitor, ready.visitor.name, note)
        if report is None:
            return
        visitor.report = report
        yield finished_view(report, note)
    except GeneratorExit:
        visitor.stop.set()  # the page went away: the worker stops within one pass
        raise
    finally:
        visitor.in_line = False
        visitor.busy.release()


def _follow(
    stream: Generator[Any, None, EnrolReport], visitor: FaceSession, name: str, note: str
) -> Generator[View, None, EnrolReport | None]:
    """The run's stream as the page shows it: its place in line, each step's pace (once a second) and result, a
    stop said once as it is seen; the report, or None once the run stopped (and said so)."""
    done, under_way, shown_at, started, told_stop = list[StepReport](), Under("teach"), 0.0, False, False
    while True:
        try:
            item = next(stream)
        except StopIteration as finished:
            return finished.value
        except LeftTheLine:
            yield STOPPED_WAITING, "", "", ""
            return None
        except SuaError:
            if not visitor.stop.is_set():
                raise
            yield STOPPED, steps_html(done, stopped="the step under way"), "", ""  # one state: stopped
            return None
        visitor.in_line = isinstance(item, Waiting)
        if visitor.stop.is_set() and not isinstance(item, StepReport):  # the page's Stop: said here, once
            if not told_stop:
                told_stop = True
                yield _stopping(visitor), steps_html(done, under_way.name, pace="stopping"), "", ""
            continue
        if isinstance(item, Waiting):
            yield html.escape(item.words()), steps_html([], "teach", pace="waiting for its turn"), "", ""
            continue
        if not started:  # its turn has come
            started = True
            yield f"teaching {html.escape(name)}… {note}", steps_html([], "teach"), "", ""
        if isinstance(item, StepReport):
            done.append(item)
            under_way = Under("next step")
            yield f"{item.name}: done in {item.seconds:.0f} s", steps_html(done, under_way.name), "", ""
            continue
        if isinstance(item, Progress):
            under_way = under_way.seen(item)
            if time.monotonic() - shown_at < 1.0:
                continue  # the clock moves with every pass; the page hears it once a second
        shown_at = time.monotonic()
        pace = under_way.pace()
        yield f"{under_way.name}: {pace}", steps_html(done, under_way.name, pace=pace), "", ""


def stop(visitor: FaceSession) -> str:
    if visitor.queued and not visitor.busy.locked():
        visitor.stop.set()
        return "stopped before it started: nothing was taught"
    if not visitor.busy.locked():
        return NOTHING_TO_STOP
    visitor.stop.set()
    return _stopping(visitor)


def _stopping(visitor: FaceSession) -> str:
    return "leaving the line…" if visitor.in_line else "stopping…"
