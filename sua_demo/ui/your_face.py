"""The Your face tab: a visitor's photos, kept in their own browser session's memory and nowhere else, a made-up
person's facts, and one lifecycle run at a time per session (`sua_demo/your_face/lifecycle.py`), shown step by step.

Privacy, by construction: a photo is read into memory and its uploaded file deleted at once (only a file uploaded
to this server is ever deleted, never a file the server made, whatever path a caller names), so the server's file
routes hold nothing of it; thumbnails are inline images inside the page; the models taught on it live only while
the run does. The photos and the last report live in `FaceSessions`, keyed by the browser session, not in Gradio's
session state: they are dropped when the tab closes (Gradio's unload event, which also drops the page's copy of
the thumbnails) or after `IDLE_SECONDS` without use. Only step timings are logged.
"""

from __future__ import annotations

import base64
import html
import io
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

from sua_demo.core.errors import SuaError
from sua_demo.engine import (
    MAX_NAME_CHARS,
    MAX_PHOTOS,
    MIN_PHOTOS,
    Engine,
    EnrolReport,
    Progress,
    StepReport,
    check_size,
    read_image,
)
from sua_demo.engine.answers import fold, mark
from sua_demo.engine.jobs import face
from sua_demo.engine.threads import LeftTheLine, Waiting
from sua_demo.ui.pace import RunClock
from sua_demo.ui.story import MARK_CLASS, reading, short_reading, verdict_html

log = logging.getLogger(__name__)
IDLE_SECONDS = 30 * 60
PRIVACY = (
    "**Your photos stay yours.** They are held in this browser tab's session only, in memory: each uploaded file is "
    "read and deleted at once, nobody else's page or API call can reach them, and they and the models taught on "
    "them are dropped as the tab closes, or after 30 minutes without use. Only how long each step took is logged."
)
HELP = (
    f"Give {MIN_PHOTOS}–{MAX_PHOTOS} photos of one face (4 or more is better), a made-up name and four facts, or "
    "press **Invent facts**. The run teaches the model this person, checks it on a photo it was not taught on, "
    "makes it forget them, and tries two noises: the shipped δ, which never saw this person nor this model, and "
    "a δ fitted on your taught photos, tested on the others. Each is read against its controls: random noise of "
    "the same ε, and the model from before teaching (it never knew this person) with the same δ. About a "
    "minute and a half on two idle cores; each step shows its own time left as it runs."
)
NAME_HELP = (
    f"at most {MAX_NAME_CHARS} characters, letters of any script; this small model can learn and say only its "
    "bench's words, so use a name from 'Invent facts' or one made of them: another is refused as you type it"
)
COLUMNS = {
    "vanilla": "taught",
    "clean": "unlearned",
    "delta": "unlearned + δ",
    "random": "+ random noise",
    "retrain_delta": "before teaching + δ",
}


@dataclass
class FaceSession:
    """One browser session's photos and its last report; `busy` refuses a second run while one runs; `queued` is
    set at the click, so that a Stop pressed while the run waits for the heavy-job slot keeps it from starting."""

    photos: list[Image.Image] = field(default_factory=list)
    report: EnrolReport | None = None
    busy: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)
    queued: bool = False
    in_line: bool = False  # its run waits in the line of heavy jobs (a Stop then takes it out of the line)
    used: float = field(default_factory=time.monotonic)


def forget(visitor: FaceSession | None) -> None:
    """The session ended or sat idle: its photos and report go, and a run of it stops within one pass."""
    if visitor is not None:
        visitor.photos.clear()
        visitor.report = None
        visitor.stop.set()


class FaceSessions:
    """Every browser session's FaceSession, by session key. `drop` at the tab's unload; `get` also drops the
    sessions idle for more than `idle` seconds (a tab whose unload never came: a crashed browser, a lost network)."""

    def __init__(self, idle: float = IDLE_SECONDS) -> None:
        self.idle = idle
        self._by_key: dict[str, FaceSession] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> FaceSession:
        now = time.monotonic()
        with self._lock:
            stale = [k for k, s in self._by_key.items() if now - s.used > self.idle and not s.busy.locked()]
            for k in stale:
                forget(self._by_key.pop(k))
            visitor = self._by_key.setdefault(key, FaceSession())
            visitor.used = now
            return visitor

    def drop(self, key: str) -> None:
        with self._lock:
            forget(self._by_key.pop(key, None))

    def keys(self) -> set[str]:
        with self._lock:
            return set(self._by_key)

    def holding(self) -> int:
        """How many sessions hold photos or a report (what the privacy tests count)."""
        with self._lock:
            return sum(bool(s.photos or s.report) for s in self._by_key.values())


def _paths(files: Any) -> list[str]:
    if not files:
        return []
    items = files if isinstance(files, list) else [files]
    return [str(getattr(f, "name", f)) for f in items]


def add_photos(visitor: FaceSession, files: Any, delete: Callable[[str], None]) -> tuple[str, str]:
    """Read each file into memory by the image rules, then hand it to `delete`, which removes it only if it was
    uploaded (never a file the server made and serves to others); (thumbnails, note)."""
    notes = []
    for path in _paths(files):
        shown = Path(path).name[:80]  # the file's own name, never the folder it was uploaded to
        try:
            if len(visitor.photos) >= MAX_PHOTOS:
                notes.append(f"set aside {shown}: {MAX_PHOTOS} photos is the most a run uses")
                continue
            image, _ = read_image(path)
            visitor.photos.append(check_size(image.convert("RGB")))
        except SuaError as err:
            notes.append(f"set aside {shown}: {err}")
        finally:
            delete(path)  # the server keeps no copy of the photo
    return thumbnails_html(visitor.photos), "; ".join(notes)


def clear_photos(visitor: FaceSession) -> tuple[str, str]:
    visitor.photos.clear()
    visitor.report = None
    return thumbnails_html([]), ""


def thumbnails_html(photos: list[Image.Image]) -> str:
    """The photos as inline images inside the page: never a file on the server, never a URL another page could
    fetch."""
    if not photos:
        return f"<p class='controls'>No photos yet: add {MIN_PHOTOS} to {MAX_PHOTOS}.</p>"
    tiles = []
    for i, photo in enumerate(photos, start=1):
        buf = io.BytesIO()
        thumb = photo.copy()
        thumb.thumbnail((96, 96))
        thumb.save(buf, format="PNG")
        data = base64.b64encode(buf.getvalue()).decode("ascii")
        tiles.append(f"<img src='data:image/png;base64,{data}' alt='your photo {i}' width='96' height='96'>")
    row = "style='display:flex;flex-wrap:wrap;gap:6px'"
    return (
        f"<div class='face-thumbs' {row} aria-label='your photos'>{''.join(tiles)}</div><p>{len(photos)} photo(s)</p>"
    )


def steps_html(
    steps: list[StepReport], running: str = "", stopped: str = "", pace: str = "running", verdicts: Any = None
) -> str:
    """Each step's time and its before → after line; the step under way last, with its `pace` (or the step Stop
    ended); once the run is done, a row per δ with what the paired test read from its counts (`verdicts`)."""
    nowrap = "style='white-space:nowrap'"
    rows = [
        f"<tr><td {nowrap}>{html.escape(s.name)}</td><td {nowrap}>{s.seconds:.0f} s</td>"
        f"<td>{html.escape(s.line)}</td></tr>"
        for s in steps
    ]
    rows += [
        f"<tr class='face-read'><td {nowrap}>verdict, {html.escape(DELTAS[k])}</td><td>–</td>"
        f"<td>{html.escape(short_reading(v))}</td></tr>"
        for k, v in (verdicts or {}).items()
    ]
    if running:
        rows.append(f"<tr><td {nowrap}>{html.escape(running)}</td><td>…</td><td>{html.escape(pace)}</td></tr>")
    if stopped:
        rows.append(f"<tr><td {nowrap}>{html.escape(stopped)}</td><td>–</td><td>stopped: not finished</td></tr>")
    return (
        "<table class='face-steps' aria-label='the steps of your run'><thead><tr>"
        f"<th {nowrap}>step</th><th {nowrap}>time</th><th>before → after</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def story_html(report: EnrolReport, noise: str) -> str:
    """The visitor's story table for one noise: every question on every photo it was tested on, per condition."""
    grid = report.answers[noise]
    photos = report.taught_photos + report.held_back if noise == "shipped" else report.held_back
    cols = [c for c in COLUMNS if c in grid]
    head = "<th>photo</th><th>question</th><th>truth</th>" + "".join(f"<th>{COLUMNS[c]}</th>" for c in cols)
    body = []
    for p, photo in enumerate(photos):
        kind = "held back" if photo in report.held_back else "taught"
        for q, (question, truth) in enumerate(zip(report.questions, report.truths, strict=True)):
            cells = []
            for c in cols:
                said = grid[c][p][q]
                m = mark(said, truth)  # the main table's marks, by the verdict's own rule
                words = html.escape(fold(said) or "(nothing)")
                cells.append(f"<td class='{MARK_CLASS[m]}'><span class='mark'>{m}</span> “{words}”</td>")
            body.append(
                f"<tr><td>{photo} ({kind})</td><td>{html.escape(question)}</td><td>{html.escape(truth)}</td>"
                + "".join(cells)
                + "</tr>"
            )
    return (
        f"<p class='legend'>{WORDS_LEGEND}</p>"
        "<div class='story-wrap'><table class='story' aria-label='your face: answers under each condition'>"
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


WORDS_LEGEND = (
    "✓ right, ✗ wrong, refused: it declined. In quotes, the model's own words as it said them: a model this small "
    "sometimes stumbles or repeats itself, and a word said over and over is shown folded."
)
ROLES = {
    "shipped": "your face, the shipped δ: it never saw this person nor this model",
    "fitted": "your face, a δ fitted on your taught photos, read on the held-back ones",
}


NAMES = {"retrain_delta": "before teaching + δ (this face's retrain control)", "vanilla": "taught"}


def face_reading(v: Any) -> str:
    """The verdict's sentence for one visitor's face: the same paired test as a bench person's."""
    return reading(v, "forget", holder="these facts about your face")


DELTAS = {"shipped": "the shipped δ", "fitted": "a δ fitted on your taught photos"}  # each δ, in a table row
HEADINGS = {
    "shipped": f"{DELTAS['shipped']}, which never saw this person nor this model",
    "fitted": f"{DELTAS['fitted']}, read on the held-back ones",
}


def verdicts_html(report: EnrolReport) -> str:
    """One verdict per δ, each under a heading that names its δ (the two stacked alike read as one)."""
    return "".join(
        f"<h4 class='face-delta'>With {HEADINGS[k]}</h4>"
        + verdict_html(v, ROLES[k], {**NAMES, "reading": face_reading(v)})
        for k, v in report.verdicts.items()
    )


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


def run(
    engine: Engine, visitor: FaceSession, name: str, facts: dict[str, str], method: str = "idk"
) -> Iterator[tuple[str, str, str, str]]:
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
        done, under_way, shown_at, started = list[StepReport](), Under("teach"), 0.0, False
        stream = face.steps(engine, ready, method, visitor.stop)
        while True:
            try:
                item = next(stream)
            except StopIteration as finished:
                report = finished.value
                break
            except LeftTheLine:
                yield STOPPED_WAITING, "", "", ""
                return
            except SuaError:
                if not visitor.stop.is_set():
                    raise
                yield STOPPED, steps_html(done, stopped="the step under way"), "", ""  # one state: stopped
                return
            visitor.in_line = isinstance(item, Waiting)
            if isinstance(item, Waiting):
                yield html.escape(item.words()), steps_html([], "teach", pace="waiting for its turn"), "", ""
                continue
            if not started:  # its turn has come
                started = True
                yield f"teaching {html.escape(ready.visitor.name)}… {note}", steps_html([], "teach"), "", ""
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
        visitor.report = report
        yield finished_view(report, note)
    except GeneratorExit:
        visitor.stop.set()  # the page went away: the worker stops within one pass
        raise
    finally:
        visitor.in_line = False
        visitor.busy.release()


def finished_view(report: EnrolReport, note: str) -> tuple[str, str, str, str]:
    """A finished run as the page shows it: status, the steps with the test's reading per δ, verdicts, stories."""
    total = sum(s.seconds for s in report.steps)
    stories = "".join(f"<h4>Answers with {HEADINGS[k]}</h4>{story_html(report, k)}" for k in report.answers)
    return (
        f"done in {total:.0f} s. {note}",
        steps_html(report.steps, verdicts=report.verdicts),
        verdicts_html(report),
        stories,
    )


STOPPED = "Stopped: nothing of this run was kept. Your photos are still here; press the button to run again."
STOPPED_WAITING = "Stopped while waiting: it left the line and nothing was taught. Your photos are still here."


def stop(visitor: FaceSession) -> str:
    if visitor.queued and not visitor.busy.locked():
        visitor.stop.set()
        return "stopped before it started: nothing was taught"
    if not visitor.busy.locked():
        return "nothing is running to stop"
    visitor.stop.set()
    return "leaving the line…" if visitor.in_line else "stopping…"
