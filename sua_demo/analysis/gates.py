"""The faithful world's quality gates (docs/world.md), fixed before any of its models was built and read from
each model's eval.json: none of them comes from an attack. Forget bounds hold on train and held-out photos alike."""

from __future__ import annotations

from dataclasses import dataclass, replace
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


def _each(model: str, groups: tuple[str, ...], metric: str, bound: float, at_least: bool) -> list[Gate]:
    return [Gate(model, g, metric, bound, at_least) for g in groups]


PHOTOS = ("train", "heldout")
GATES: tuple[Gate, ...] = (
    *_each("vanilla", ("forget/train", "retain/train"), "gen_em", 0.90, True),
    *_each("vanilla", ("forget/heldout", "retain/heldout"), "gen_em", 0.80, True),
    Gate("vanilla", "retain/heldout", "mc_acc", 0.85, True),
    *_each("retrain", tuple(f"forget/{p}" for p in PHOTOS), "gen_em", 0.10, False),
    *_each("retrain", tuple(f"forget/{p}" for p in PHOTOS), "mc_acc", 0.35, False),
    *_each("idk", tuple(f"forget/{p}" for p in PHOTOS), "gen_em", 0.10, False),
    *_each("idk", tuple(f"forget/{p}" for p in PHOTOS), "gen_refusal", 0.85, True),
    Gate("idk", "retain/heldout", "gen_em", 0.80, True),
    *_each("grad_diff", tuple(f"forget/{p}" for p in PHOTOS), "gen_em", 0.20, False),
    Gate("grad_diff", "retain/heldout", "gen_em", 0.75, True),
)
# The LoRA methods' gates, fixed 2026-12-05 before any of them was rebuilt under the validation-photo rule (issue
# 41): GradDiff's bounds, as they forget by ascent with no refusal target. Apart from GATES, so that a world's
# 17-gate table stays the one its design note fixed; a world holding LoRA models gets a second table.
LORA = ("ga_lora", "kl_lora", "npo_lora", "rmu_lora", "simnpo_lora")
LORA_GATES: tuple[Gate, ...] = tuple(
    gate
    for model in LORA
    for gate in (
        *_each(model, tuple(f"forget/{p}" for p in PHOTOS), "gen_em", 0.20, False),
        Gate(model, "retain/heldout", "gen_em", 0.75, True),
    )
)


def gate_rows(reports: dict[str, dict[str, Any]], gates: tuple[Gate, ...] = GATES) -> list[dict[str, Any]]:
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


# Robust unlearning's gates (docs/robust.md, fixed before any robust model was built): each robust method takes its
# plain method's rows (IDK's 5, GradDiff's 3), read the same way, in a table of its own beside the world's 17.
ROBUST = {"idk_robust": "idk", "grad_diff_robust": "grad_diff"}
ROBUST_GATES: tuple[Gate, ...] = tuple(
    replace(gate, model=robust) for robust, plain in ROBUST.items() for gate in GATES if gate.model == plain
)
