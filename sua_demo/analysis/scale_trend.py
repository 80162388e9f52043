"""docs/scale.md's reading of the size study, fixed before any attack at a new size: per world x split, the gain of
δ over the clean photo on a group, less the gain of the best control on the same group (random noise of the same ε
on the unlearned model, the same δ on the retrain control); then an ordinary least-squares slope of that figure
against log10(tower parameters), with a 95 % interval from a bootstrap that resamples whole worlds within each size
(a world's splits share its models, so they are not independent)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

CONTROLS = {"random noise": ("unlearned", "random"), "same δ on retrain": ("retrain", "sua")}
GROUPS = {"unseen people, held-out photos": "c_unseen_heldout", "the attacker's photos": "a_attacker_images"}


@dataclass(frozen=True)
class Point:
    """One world x split of one size: δ's gain and each control's, in points of generation exact match."""

    size: str
    world: str
    split: int
    gain: float
    controls: dict[str, float]

    @property
    def beyond(self) -> float:
        """δ's gain less the best control's on the same questions."""
        return self.gain - max(self.controls.values())


def _gain(split: dict[str, Any], model: str, condition: str, group: str) -> float:
    return 100 * (split[model][condition][group]["gen_em"] - split[model]["clean"][group]["gen_em"])


def points(reports: dict[str, dict[str, dict[str, Any]]], group: str = "c_unseen_heldout") -> list[Point]:
    """reports[size][world] (one model's attack report.json) -> one Point per split."""
    out = []
    for size, worlds in reports.items():
        for world, report in worlds.items():
            for k, split in enumerate(report["splits"]):
                controls = {name: _gain(split, m, c, group) for name, (m, c) in CONTROLS.items()}
                out.append(Point(size, world, k, _gain(split, "unlearned", "sua", group), controls))
    return out


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.polyfit(x, y, 1)[0]) if len(set(x.tolist())) > 1 else float("nan")


@dataclass(frozen=True)
class Trend:
    slope: float  # points per unit of the axis: a tenfold of tower parameters, or one attacker person
    low: float
    high: float
    n_points: int
    per: str = "per tenfold tower parameters"
    axis: str = "the tower's size"

    def sentence(self, what: str) -> str:
        """The trend in one sentence, "no trend" when the interval holds 0."""
        if not np.isfinite(self.slope):
            return f"{what}: one point of the axis measured so far, no slope yet."
        if not np.isfinite(self.low):
            return f"{what}: {self.slope:+.1f} points {self.per} over one world so far, no interval before a second."
        said = "no trend" if self.low <= 0 <= self.high else ("grows" if self.low > 0 else "shrinks")
        return (
            f"{what}: {self.slope:+.1f} points {self.per} (95 % interval {self.low:+.1f} to {self.high:+.1f}, "
            f"{self.n_points} world × split points): {said} with {self.axis}."
        )


def _fit(found: list[Point], x_of: dict[str, float], boots: int, seed: int) -> tuple[float, float, float]:
    """The slope of `Point.beyond` against x_of[label] and its 95 % bootstrap interval, resampling whole worlds within
    each label (a world's splits share its models)."""
    x = np.array([x_of[p.size] for p in found])
    y = np.array([p.beyond for p in found])
    rng = np.random.default_rng(seed)
    worlds = {label: sorted({p.world for p in found if p.size == label}) for label in x_of}
    rows: dict[tuple[str, str], list[int]] = {}
    for i, p in enumerate(found):
        rows.setdefault((p.size, p.world), []).append(i)
    slopes = []
    for _ in range(boots):
        picks = []
        for label, names in worlds.items():
            for w in rng.choice(names, size=len(names), replace=True) if names else []:
                picks += rows[(label, w)]
        slopes.append(_slope(x[picks], y[picks]))
    one_world = all(len(names) < 2 for names in worlds.values())  # resampling one world cannot move the slope
    low, high = np.nanpercentile(slopes, [2.5, 97.5]) if np.isfinite(slopes).any() and not one_world else (np.nan,) * 2
    return _slope(x, y), float(low), float(high)


def trend(found: list[Point], params: dict[str, float], boots: int = 2000, seed: int = 0) -> Trend:
    """The slope of `Point.beyond` against log10(params[size]) and its bootstrap interval over worlds."""
    return Trend(*_fit(found, {s: float(np.log10(v)) for s, v in params.items()}, boots, seed), len(found))


def people_trend(found: list[Point], boots: int = 2000, seed: int = 0) -> Trend:
    """docs/scale.md's second axis: the slope of `Point.beyond` against the number of people δ is fitted on (each
    point's label is that number), read as the size axis is."""
    people = {p.size: float(p.size) for p in found}
    return Trend(*_fit(found, people, boots, seed), len(found), "per attacker person", "the attacker's people")


def table(found: list[Point], params: dict[str, float]) -> str:
    """Per size: δ's gain, each control's, and δ beyond the best control, mean ± sd over world x split points."""
    return _table(found, {s: f"{s} | {v / 1e6:.2f} M" for s, v in params.items()}, "| tower | parameters |")


def people_table(found: list[Point], unseen: dict[str, int]) -> str:
    """Per number of attacker people (each point's label): as `table`, beside how many people δ never saw."""
    rows = {label: f"{label} | {unseen[label]}" for label in sorted(unseen, key=int)}
    return _table(found, rows, "| attacker people | unseen people |")


def _table(found: list[Point], rows: dict[str, str], head: str) -> str:
    lines = [f"{head} points | gain with δ | " + " | ".join(CONTROLS) + " | beyond the best control |"]
    lines.append("|---|---:|---:|---|" + "---|" * len(CONTROLS) + "---|")
    for label, first in rows.items():
        mine = [p for p in found if p.size == label]
        if not mine:
            continue

        def cell(values: list[float]) -> str:
            return f"{np.mean(values):+.1f} ± {np.std(values):.1f}"

        controls = [cell([p.controls[c] for p in mine]) for c in CONTROLS]
        lines.append(
            f"| {first} | {len(mine)} | {cell([p.gain for p in mine])} | "
            + " | ".join(controls)
            + f" | {cell([p.beyond for p in mine])} |"
        )
    return "\n".join(lines) + "\n"
