"""The Audit tab: the shipped audit of a model at once, and a live audit of one person."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

from sua_demo.audit.base import AUDITS
from sua_demo.audit.run import METHODS, EnoughForNow, audit_figure, audit_models, markdown
from sua_demo.engine import Engine
from sua_demo.errors import SuaError
from sua_demo.look import person_id
from sua_demo.threads import ticking_on_fresh_thread
from sua_demo.ui.pace import WorkClock

NOTE = (
    "Each method asks the forget people's facts its own way and is run again, the same way, on the retrain "
    "control, which never knew them: read the *above control* column. A method whose control recovers as "
    "much wrote the answers in by itself."
)


def shipped_report(engine: Engine, model: str) -> dict | None:
    """checkpoints/audit/<model>/audit.json, if this model ships one."""
    path = engine.world.audit / model / "audit.json"
    return json.loads(path.read_text()) if path.is_file() else None


def shipped_audit(engine: Engine, model: str) -> tuple[str, Any]:
    """The shipped audit as a table and a heatmap, with no model run."""
    report = shipped_report(engine, model)
    if report is None:
        return f"No shipped audit for {model}: run one with the button above, or `sua audit` in a terminal.", None
    return NOTE + "\n\n" + markdown(report), audit_figure(report)


def audit_shown(status: str, report: dict | None) -> tuple[str, Any]:
    """A live audit's progress line, or its end: the line, the table and the heatmap."""
    if report is None:
        return status, None
    return status + "\n\n" + markdown(report), audit_figure(report)


def report_card_view(engine: Engine) -> tuple[str, Any]:
    """Every shipped audit as one card: methods against probes, as a sentence per method and a heatmap."""
    from sua_demo.audit.report_card import card_figure, card_markdown, report_card

    folder = engine.world.audit
    # membership.json lives beside the audits or beside the world's models (sua membership writes it there)
    membership = next((p for p in (folder, folder.parent) if (p / "membership.json").is_file()), None)
    card = report_card(folder, membership / "membership.json" if membership else None)
    if not card["rows"]:
        return "No shipped audits to set side by side.", None
    return card_markdown(card), card_figure(card)


class Abandoned(Exception):
    """Raised in the audit's worker when its caller went away: the work stops after the method under way."""


def live_audit(
    engine: Engine, model: str, person: str, deadline: float | None = None
) -> Iterator[tuple[str, dict | None, tuple[int, int]]]:
    """Every method on one forget person (quick settings), beside its control; yields a progress line every second
    with the time left at this audit's own pace (its first method, which loads and warms up, is left out) and the
    methods done of all, then the closing line and the report. If the caller goes away (the generator is
    closed), the audit stops after the method under way instead of keeping the cores busy for nobody; at
    `deadline` (time.monotonic()), it stops the same way and reports the methods it finished."""
    sess = engine.session(model)
    pid = person_id(person)
    if engine.bench.split_of(pid) != "forget":
        raise SuaError(f"#{pid} is not in the forget set: the audit asks what unlearning should have removed")
    _, retrain = engine.controls(sess)
    if retrain is None:
        raise SuaError("a live audit needs the retrain control (name it under 'Your own photo, ... or model')")
    split = engine.split_of_noise(sess.shipped_noise)
    noise_dir = engine.world.noise / sess.noise_owner if sess.noise_owner else None
    models = {"unlearned": (sess.adapter, sess.bank), "retrain": (retrain.adapter, retrain.bank)}
    clock = WorkClock([AUDITS.get(name)().work(True) for name in METHODS])
    gone = threading.Event()

    def step(done: int) -> None:
        if gone.is_set():
            raise Abandoned
        if deadline is not None and time.monotonic() > deadline:
            raise EnoughForNow
        clock.step(done)

    with sess.attack_lock:  # relearning and soft prompts run on copies, but share the threads with attacks
        run = ticking_on_fresh_thread(audit_models, 1.0, models, engine.bench, noise_dir, None, (split.seed,),
                                      people=[pid], progress=False, quick=True, names=(sess.name, retrain.name),
                                      on_progress=step)  # fmt: skip
        try:
            while True:
                next(run)
                yield f"Live audit of #{pid}: {clock.status('method')}", None, (clock.done, len(METHODS))
        except StopIteration as done:
            report = done.value
        except GeneratorExit:  # the caller left: the method under way ends, then the worker, before the slot frees
            gone.set()
            with contextlib.suppress(Abandoned):
                for _ in run:
                    pass
            raise
    partial = "" if report["complete"] else f", stopped at its time bound with {len(report['summary'])} methods done"
    yield f"Live audit of #{pid}, {report['seconds']:.0f} s{partial}.", report, (clock.done, len(METHODS))
