"""The audit as the page and the API run it: the shipped report of a model, a live audit of one forget person
(bounded, and stopped when its caller leaves), and the report card over every shipped audit."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sua_demo.analysis.paired import ALPHA, Paired, mcnemar
from sua_demo.audit.base import AUDITS
from sua_demo.audit.report_card import card_figure, card_markdown, recovers, report_card
from sua_demo.audit.run import LABELS, METHODS, EnoughForNow, audit_figure, audit_models, markdown
from sua_demo.core.errors import SuaError
from sua_demo.engine import Engine
from sua_demo.engine.look import person_id
from sua_demo.engine.threads import Waiting, heavy_ticking

__all__ = ["LABELS", "METHODS", "Abandoned", "audit_figure", "card", "card_figure", "card_markdown", "live", "markdown",
           "method_work", "recovers", "shipped_report"]  # fmt: skip


class Abandoned(Exception):
    """Raised in the audit's worker when its caller went away: the work stops after the method under way."""


def shipped_report(engine: Engine, model: str) -> dict | None:
    """checkpoints/audit/<model>/audit.json of the served world, if this model ships one."""
    path = engine.world.audit / model / "audit.json"
    return json.loads(path.read_text()) if path.is_file() else None


def card(engine: Engine) -> dict[str, Any]:
    """Every shipped audit of the served world as one report card (with membership where it was measured)."""
    folder = engine.world.audit
    # membership.json lives beside the audits or beside the world's models (sua membership writes it there)
    membership = next((p for p in (folder, folder.parent) if (p / "membership.json").is_file()), None)
    return report_card(folder, membership / "membership.json" if membership else None)


def method_work() -> list[int]:
    """Each audit method's relative work in a quick live audit, in METHODS order (a clock weighs them by it)."""
    return [AUDITS.get(name)().work(True) for name in METHODS]


def live(
    engine: Engine, model: str, person: str, deadline: float | None = None
) -> Iterator[Waiting | tuple[int, dict | None]]:
    """Every method on one forget person (quick settings), beside its retrain control, in the line of heavy jobs.
    Yields a `Waiting` every second while it waits for its turn, then (methods done, None) every second, then
    (methods done, report). If the caller goes away
    (the generator is closed), the audit stops after the method under way and the cores are free before this
    returns; at `deadline` (time.monotonic()) it stops the same way and reports the methods it finished."""
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
    gone, done = threading.Event(), [0]

    def step(finished: int) -> None:
        if gone.is_set():
            raise Abandoned
        if deadline is not None and time.monotonic() > deadline:
            raise EnoughForNow
        done[0] = finished

    def audit() -> dict:
        with sess.attack_lock:  # relearning and soft prompts run on copies, but share the threads with attacks
            return audit_models(models, engine.bench, noise_dir, None, (split.seed,), people=[pid], progress=False,
                                quick=True, names=(sess.name, retrain.name), on_progress=step)  # fmt: skip

    run = heavy_ticking(audit, 1.0, kind="audit")
    try:
        while True:
            item = next(run)
            yield item if isinstance(item, Waiting) else (done[0], None)
    except StopIteration as finished:
        yield done[0], finished.value
    except GeneratorExit:  # the caller left: the method under way ends, then the worker, before the slot frees
        gone.set()
        with contextlib.suppress(Abandoned):
            for _ in run:
                pass
        raise


@dataclass(frozen=True)
class StrongestProbe:
    """The probe whose paired test against the retrain control finds the most answers only it brings back."""

    name: str
    test: Paired
    p: float  # adjusted for the probes tried (Bonferroni): one of many reaching p < 0.05 alone is not evidence
    tried: int

    @property
    def recovers(self) -> bool:
        return self.test.only_first > self.test.only_second and self.p < ALPHA


def strongest_probe(report: dict[str, Any]) -> StrongestProbe | None:
    """A live audit's strongest probe by the verdict's paired test (analysis/paired.py), on the same questions of
    the forget people as its retrain control; None when no probe kept its pairs."""
    tests = {}
    for name, runs in report.get("runs", {}).items():
        pairs = [r["paired"] for r in runs if "paired" in r]
        if pairs:
            first = [x for p in pairs for x in p["unlearned"]]
            tests[name] = mcnemar(first, [x for p in pairs for x in p["retrain"]])
    if not tests:
        return None
    name = max(tests, key=lambda n: (tests[n].only_first - tests[n].only_second, -tests[n].p))
    return StrongestProbe(name, tests[name], min(1.0, tests[name].p * len(tests)), len(tests))
