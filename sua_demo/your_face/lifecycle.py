"""Your face: teach a model a visitor's person, check it learned them, unlearn them, then see whether a noise that
never saw them (the shipped δ) or one fitted on some of their photos (tested on the others) brings them back,
against the two controls every figure here has: the model before teaching (it never knew this person, so it is the
retrain control for this face) with the same δ, and random noise of the same ε.

Everything runs in memory on copies of the given model (a session's own; nothing is shared with another visitor
and nothing is written unless `out_dir` is given). Each step reports its time and a before/after line.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from sua_demo.analysis.verdict import Verdict, verdict
from sua_demo.attacks import ATTACKS, AttackConfig, Noise
from sua_demo.core import shipped
from sua_demo.core.config import UnlearnConfig
from sua_demo.core.errors import BadValueError, SuaError
from sua_demo.core.io import atomic_write_text, write_json
from sua_demo.dataset.records import Bench
from sua_demo.eval.evaluate import evaluate
from sua_demo.eval.person import person_answers
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import ImageBank, image_examples
from sua_demo.unlearning.runner import unlearn_adapter
from sua_demo.your_face import TeachConfig, Visitor, teach, visitor_bench

log = logging.getLogger(__name__)
METHODS = shipped.DEMO  # the two full fine-tunes' ways of forgetting
OTHERS = 20  # bench people whose answers are watched for collateral damage (one train, one held-out photo each)
PROBED = 10  # of them, the ones the stopping rule reads (one train photo each): a check every few steps
# The visitor's unlearning: the shipped demo recipes' rates and targets, the language model only, a small
# probe (the visitor's taught photos, the watched people) for the project's stopping rule. IDK's retain floor is
# 0.95 of the start, not the bench recipe's 0.90: forgetting one person should cost the others next to nothing.
UNLEARN = {
    "idk": UnlearnConfig(
        method="idk", lr=1e-4, forget_target=0.10, refusal_target=0.90, retain_floor=0.95, max_steps=200, eval_every=5
    ),
    "grad_diff": UnlearnConfig(
        method="grad_diff",
        lr=5e-5,
        retain_weight=3.0,
        forget_target=0.15,
        retain_floor=0.80,
        max_steps=200,
        eval_every=5,
    ),
}


@dataclass(frozen=True)
class LifecycleConfig:
    method: str = "idk"
    teach: TeachConfig = TeachConfig(steps=80)
    fit_steps: int = 100  # the fitted δ's sign steps (the shipped recipe's schedule, fewer steps: a visitor waits)
    seed: int = 0
    # the passes the unlearning rule took on measured visitors of this world (`rule_steps`), for the page's clock
    unlearn_stops: tuple[int, ...] = ()
    # fp32: on the embedded models a step is too small for bf16 to pay (teaching measured 4x slower under autocast
    # on a native-bf16 CPU); a large model on a GPU passes "auto"
    precision: str = "fp32"


@dataclass
class StepReport:
    name: str
    seconds: float
    line: str  # before -> after, in words


@dataclass(frozen=True)
class Progress:
    """A step under way: `done` of at most `total` passes (teach and fit δ run all of theirs; unlearning stops
    as soon as its rule holds), so a page can show the step's own pace and time left."""

    name: str
    done: int
    total: int
    note: str = ""  # what the step's own rule read at its last check (unlearning), in words
    expected: int | None = None  # unlearning: the pass its rule is expected to end at (see `expected_end`)
    expected_why: str = ""  # and why, in words (`expected_why`)
    every: int = 1  # unlearning: its rule's check comes every this many passes (a clock paces whole cycles)


@dataclass
class EnrolReport:
    """What happened to one visitor's person, every figure measured on the models this run made."""

    name: str
    facts: dict[str, str]
    method: str
    taught_photos: list[int]
    held_back: list[int]
    questions: list[str]
    truths: list[str]
    figures: dict[str, float] = field(default_factory=dict)
    steps: list[StepReport] = field(default_factory=list)
    answers: dict[str, dict[str, list[list[str]]]] = field(default_factory=dict)  # noise -> condition -> grid
    verdicts: dict[str, Verdict] = field(default_factory=dict)

    def headline(self) -> str:
        parts = []
        for noise, v in self.verdicts.items():
            parts.append(f"{noise} δ: {v.headline()}")
        return "; ".join(parts)


RULE_STEPS = "your_face_steps.json"  # beside a world's models: passes its Your face unlearning took, per method


def rule_steps(models: Path, method: str) -> tuple[int, ...]:
    """The passes after which Your face's unlearning rule held for the visitors measured on this world
    (`benchmarks/lifecycle_speed.py --record` writes them; the count depends on the recipe and the world, not on
    the machine), sorted; empty where none were measured."""
    path = Path(models) / RULE_STEPS
    if not path.is_file():
        return ()
    return tuple(sorted(int(s) for s in json.loads(path.read_text()).get(method, {}).get("steps", [])))


def expected_end(done: int, stops: tuple[int, ...], every: int, total: int) -> int | None:
    """Where unlearning should end, seen at pass `done`: among the measured runs still going at this pass, the
    (lower) median pass they ended at (a run that has outlasted the quick ones is more like the slow ones); once it has
    outlasted them all, the rule's next check (every `every` passes); never beyond the step's last pass."""
    if not stops:
        return None
    going, end = _still_going(done, stops)
    return min(total, end if going else (done // every + 1) * every)


def _still_going(done: int, stops: tuple[int, ...]) -> tuple[list[int], int]:
    """The measured runs still going at pass `done`, and the (lower) median pass they ended at (0 if none)."""
    going = [s for s in stops if s > done]
    return going, going[(len(going) - 1) // 2] if going else 0


def expected_why(done: int, stops: tuple[int, ...]) -> str:
    """Why `expected_end` says what it says, in words: how many of the measured runs still going at this pass
    ended by then, and how far the others went (GradDiff's rule ends some runs early and holds others back on
    one stubborn fact for a hundred passes: no single figure fits both)."""
    going, end = _still_going(done, stops)
    if not going:
        return f"its next check: it has run longer than all {len(stops)} visitors measured on this world"
    k, later = sum(s <= end for s in going), [s for s in going if s > end]
    who = "visitors measured on this world" if len(going) == len(stops) else "measured visitors still going here"
    said = f"as {k} of the {len(going)} {who} did" if later else f"as all {k} {who} did"
    said = "as the one measured visitor still going here did" if k == 1 and not later else said
    return said + (f"; the rest ran to pass {max(later)}" if later else "")


def held_back_count(n_photos: int) -> int:
    """Photos kept out of teaching: a third, at least one (4-5 photos: 1; 6-8: 2)."""
    return max(1, n_photos // 3)


def _groups(bench: Bench, vid: int, others: list[int]) -> dict[str, list]:
    return {
        "taught": image_examples(bench, [vid], "train"),
        "held_back": image_examples(bench, [vid], "heldout"),
        "others": image_examples(bench, others, "train", photos_per_person=1)
        + image_examples(bench, others, "heldout", photos_per_person=1),
    }


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %"


class _Clock:
    """Each step's time, reported to `on_step` as it ends (the page shows each one as it lands), and its passes as
    they go (`mark`)."""

    def __init__(self, report: EnrolReport, on_step: Callable[[StepReport | Progress], None] | None) -> None:
        self.report, self.on_step, self.t0 = report, on_step, time.time()

    def mark(self, progress: Progress) -> None:
        """Tell `on_step` how far the step under way is."""
        if self.on_step is not None:
            self.on_step(progress)

    def done(self, name: str, line: str) -> None:
        step = StepReport(name, round(time.time() - self.t0, 1), line)
        self.report.steps.append(step)
        log.info("enrol: %s in %.1f s", name, step.seconds)  # timings only: nothing about the photos or facts
        if self.on_step is not None:
            self.on_step(step)
        self.t0 = time.time()


@dataclass
class _Run:
    """One lifecycle's shared parts: the visitor's bench, the image bank, the groups every figure is read on."""

    cfg: LifecycleConfig
    bench: Bench
    bank: ImageBank
    groups: dict[str, list]
    others: list[int]
    report: EnrolReport
    clock: _Clock
    stop: threading.Event | None
    out: Path | None

    @property
    def vid(self) -> int:
        return self.bench.forget_ids[0]

    def check_stop(self) -> None:
        if self.stop is not None and self.stop.is_set():
            raise SuaError("stopped: the run was cancelled; nothing of it was kept")

    def marks(self, name: str, total: int, rule: UnlearnConfig | None = None) -> Callable[..., None]:
        """A step's per-pass callback: how far it is, to the listener, with the unlearning `rule`'s last reading
        against its target and the pass it is expected to end at; a Stop ends the run within one pass."""
        note, target = "", rule.forget_target if rule is not None else None

        def passed(done: int, checked: Any = None) -> None:
            nonlocal note
            self.check_stop()
            if target is not None and isinstance(checked, dict) and "forget_em" in checked:
                note = (
                    f"at its last check {_pct(checked['forget_em'])} of the facts still right; it stops at "
                    f"{_pct(target)} or below"
                )
            if rule is None:
                self.clock.mark(Progress(name, int(done), total))
                return
            stops, every = self.cfg.unlearn_stops, rule.eval_every
            why = expected_why(done, stops) if stops else ""
            self.clock.mark(Progress(name, int(done), total, note, expected_end(done, stops, every, total), why, every))

        return passed

    def measure(self, adapter: VisionLanguageAdapter) -> dict[str, Any]:
        return evaluate(adapter, self.bench, self.bank, self.groups, progress=False)

    def teach(self, before: VisionLanguageAdapter) -> VisionLanguageAdapter:
        start = self.measure(before)
        taught = before.clone()
        taught.freeze_vision_side()
        cfg = replace(self.cfg.teach, seed=self.cfg.seed, precision=self.cfg.precision)
        save_to = self.out / "taught" if self.out else None
        teach(taught, self.bench, self.bank, cfg, save_to, on_step=self.marks("teach", cfg.steps), stop=self.stop)
        self.check_stop()
        after, f = self.measure(taught), self.report.figures
        f["before_held_back"], f["others_before"] = start["held_back"]["gen_em"], start["others"]["gen_em"]
        f["taught_held_back"], f["taught_taught"] = after["held_back"]["gen_em"], after["taught"]["gen_em"]
        f["others_taught"] = after["others"]["gen_em"]
        self.clock.done(
            "teach",
            f"facts right on held-back photos: {_pct(f['before_held_back'])} before teaching → "
            f"{_pct(f['taught_held_back'])} taught (taught photos {_pct(f['taught_taught'])}); "
            f"other people {_pct(f['others_before'])} → {_pct(f['others_taught'])}",
        )
        return taught

    def unlearn(self, taught: VisionLanguageAdapter) -> VisionLanguageAdapter:
        unlearned, cfg = taught.clone(), self.cfg
        # the stopping rule's probe: the taught photos, and one train photo of each watched person (the held-out
        # ones are kept for the figures reported)
        retain = image_examples(self.bench, self.others[:PROBED], "train", photos_per_person=1)
        probe = {"forget": self.groups["taught"], "retain": retain}
        ucfg = replace(UNLEARN[cfg.method], train_parts="language_model", seed=cfg.seed, precision=cfg.precision)
        marks = self.marks(f"unlearn ({cfg.method})", ucfg.max_steps, ucfg)
        result = unlearn_adapter(unlearned, self.bench, self.bank, ucfg, groups=probe, progress=False, on_step=marks)
        self.check_stop()
        gone, f = self.measure(unlearned), self.report.figures
        f["unlearned_held_back"], f["refusal_held_back"] = gone["held_back"]["gen_em"], gone["held_back"]["gen_refusal"]
        f["unlearned_taught"], f["others_unlearned"] = gone["taught"]["gen_em"], gone["others"]["gen_em"]
        f["unlearn_steps"], f["unlearn_rule_met"] = float(result.steps), float(result.criterion_met)
        self.clock.done(
            f"unlearn ({cfg.method})",
            f"facts right on held-back photos: {_pct(f['taught_held_back'])} → {_pct(f['unlearned_held_back'])} "
            f"(refusals {_pct(f['refusal_held_back'])}); other people {_pct(f['others_taught'])} → "
            f"{_pct(f['others_unlearned'])}; {result.steps} steps, stopping rule "
            + ("met" if result.criterion_met else "not met"),
        )
        return unlearned

    def attack(self, shipped: Noise | None, models: tuple[VisionLanguageAdapter, ...]) -> None:
        """The shipped δ on every photo, a δ fitted on the taught photos read on the held-back ones; each beside
        random noise of the same ε and the model before teaching with the same δ."""
        before, taught, unlearned = models
        cfg, report = self.cfg, self.report
        noises = {} if shipped is None else {"shipped": shipped}
        eps = shipped.eps if shipped is not None else AttackConfig.eps
        acfg = AttackConfig(eps=eps, steps=cfg.fit_steps, seed=cfg.seed, precision=cfg.precision)
        fitted = ATTACKS.get("sua")(unlearned, acfg)
        marks = self.marks("fit δ", cfg.fit_steps)
        meta = {"fitted_on": "taught"}
        noises["fitted"] = fitted.run(self.bank, self.groups["taught"], callback=marks, progress=False, meta=meta)
        n = len(report.taught_photos)
        self.clock.done("fit δ", f"{cfg.fit_steps} steps on the {n} taught photos, ε {eps * 255:.0f}/255")
        self.check_stop()
        rand = ATTACKS.get("random")(unlearned, acfg).run(self.bank, [], progress=False)  # the seed's U(-ε, ε)
        facts = [q.fact for q in self.bench.items([self.vid], tasks=("gen",), modalities=("image",))]
        for label, noise in noises.items():
            models_banks = ((unlearned, self.bank), noise, rand, (taught, self.bank), (before, self.bank))
            grid = person_answers(self.bench, self.vid, *models_banks)
            if label == "fitted":  # read on the photos it was not fitted on
                grid = {k: v[n:] for k, v in grid.items()}
            report.answers[label] = grid
            report.verdicts[label] = verdict(report.name, report.truths, grid, facts)
        self.clock.done("attack and controls", report.headline())


def run_lifecycle(
    before: VisionLanguageAdapter,
    bench: Bench,
    visitor: Visitor,
    shipped: Noise | None,
    cfg: LifecycleConfig = LifecycleConfig(),
    on_step: Callable[[StepReport | Progress], None] | None = None,
    stop: threading.Event | None = None,
    out_dir: str | Path | None = None,
) -> EnrolReport:
    """teach, check, unlearn, attack (shipped and fitted δ), each with its controls; `before` is never changed.
    `on_step` hears each step as it ends (a StepReport) and how far the step under way is (a Progress).
    With `out_dir`, the taught LoRA adapter, the unlearned language model's weights and the report are written
    there. `stop` ends the run within one pass of its step with a `SuaError` (nothing half-made is returned)."""
    if cfg.method not in METHODS:
        raise BadValueError(f"unlearning method must be one of {', '.join(METHODS)}, not {cfg.method!r}")
    vb = visitor_bench(bench, visitor, len(visitor.photos) - held_back_count(len(visitor.photos)))
    vid = vb.forget_ids[0]
    others = bench.retain_ids[:OTHERS] if bench.retain_ids else [p.id for p in bench.people[:OTHERS]]
    gen = vb.items([vid], tasks=("gen",), modalities=("image",))
    person = vb.person(vid)
    report = EnrolReport(
        visitor.name, dict(visitor.facts), cfg.method, person.photo_indices("train"), person.photo_indices("heldout"),
        [q.question for q in gen], [q.answer for q in gen],
    )  # fmt: skip
    out = Path(out_dir) if out_dir is not None else None
    run = _Run(
        cfg, vb, ImageBank(vb, before), _groups(vb, vid, others), others, report, _Clock(report, on_step), stop, out
    )
    taught = run.teach(before)
    unlearned = run.unlearn(taught)
    run.attack(shipped, (before, taught, unlearned))
    if out is not None:
        write_report(report, out, unlearned)
    return report


def report_json(report: EnrolReport) -> dict[str, Any]:
    return {
        **{k: v for k, v in asdict(report).items() if k != "verdicts"},
        "verdicts": {k: {**asdict(v), "headline": v.headline()} for k, v in report.verdicts.items()},
    }


def report_markdown(report: EnrolReport) -> str:
    lines = [f"# Your face: {report.name}", "", f"Unlearned with {report.method}. {report.headline()}", ""]
    lines += ["| step | time (s) | before → after |", "|---|---:|---|"]
    lines += [f"| {s.name} | {s.seconds:.1f} | {s.line} |" for s in report.steps]
    for label, grid in report.answers.items():
        photos = report.taught_photos + report.held_back if label == "shipped" else report.held_back
        lines += ["", f"## {label} δ", "", "| photo | question | truth | " + " | ".join(grid) + " |"]
        lines.append("|---|---|---|" + "---|" * len(grid))
        for p, photo in enumerate(photos):
            for q, (question, truth) in enumerate(zip(report.questions, report.truths, strict=True)):
                cells = " | ".join(grid[c][p][q] for c in grid)
                lines.append(f"| {photo} | {question} | {truth} | {cells} |")
    return "\n".join(lines) + "\n"


def write_report(report: EnrolReport, out: Path, unlearned: VisionLanguageAdapter) -> None:
    """report.json and report.md, and the unlearned language model's weights (the tower and projector are the
    starting model's, unchanged): what `sua enrol --out` leaves."""
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    prefix = unlearned.language_prefix()
    weights = {k: v.contiguous() for k, v in unlearned.model.state_dict().items() if k.startswith(prefix)}
    save_file(weights, str(out / "unlearned_language_model.safetensors"))
    write_json(out / "report.json", report_json(report))
    atomic_write_text(out / "report.md", report_markdown(report))
