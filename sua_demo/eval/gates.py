"""The faithful world's quality gates (docs/world.md), fixed before any of its models was built and read from
each model's eval.json: none of them comes from an attack. Forget bounds hold on train and held-out photos alike."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Gate:
    model: str
    group: str  # eval.json's row: forget/train, forget/heldout, retain/train, retain/heldout
    metric: str  # gen_em, gen_refusal, mc_acc
    bound: float
    at_least: bool  # True: value >= bound; False: value <= bound

    def met(self, value: float) -> bool:
        return value >= self.bound if self.at_least else value <= self.bound

    def text(self) -> str:
        return f"{'≥' if self.at_least else '≤'} {100 * self.bound:.0f} %"


PHOTOS = ("train", "heldout")


def each_photo(model: str, people: str, metric: str, bound: float, at_least: bool) -> list[Gate]:
    """One gate per kind of photo (train and held-out) of `people` (forget or retain)."""
    return [Gate(model, f"{people}/{p}", metric, bound, at_least) for p in PHOTOS]


# The controls' gates; each unlearned model's are in its recipe (`unlearning/recipe.py`), and the world's table of
# 17 is these and IDK's and GradDiff's (`unlearning.recipe.gates("world")`).
CONTROL_GATES: tuple[Gate, ...] = (
    Gate("vanilla", "forget/train", "gen_em", 0.90, True),
    Gate("vanilla", "retain/train", "gen_em", 0.90, True),
    Gate("vanilla", "forget/heldout", "gen_em", 0.80, True),
    Gate("vanilla", "retain/heldout", "gen_em", 0.80, True),
    Gate("vanilla", "retain/heldout", "mc_acc", 0.85, True),
    *each_photo("retrain", "forget", "gen_em", 0.10, False),
    *each_photo("retrain", "forget", "mc_acc", 0.35, False),
)


def gate_rows(reports: dict[str, dict[str, Any]], gates: tuple[Gate, ...]) -> list[dict[str, Any]]:
    """One row per gate: the model's measured value (None where the model is not built yet) and whether it holds."""
    rows = []
    for gate in gates:
        report = reports.get(gate.model)
        value = None if report is None else float(report[gate.group][gate.metric])
        met = None if value is None else gate.met(value)
        row = {"model": gate.model, "group": gate.group, "metric": gate.metric, "gate": gate.text()}
        rows.append({**row, "value": value, "met": met})
    return rows


def gates_markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| model | group | metric | gate | measured | holds |", "|---|---|---|---|---|---|"]
    for r in rows:
        value = "not built" if r["value"] is None else f"{100 * r['value']:.1f} %"
        holds = "–" if r["met"] is None else ("yes" if r["met"] else "**no**")
        lines.append(f"| {r['model']} | {r['group']} | {r['metric']} | {r['gate']} | {value} | {holds} |")
    return "\n".join(lines)


def all_met(rows: list[dict[str, Any]]) -> bool:
    return all(r["met"] for r in rows)
