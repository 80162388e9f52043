"""docs/scale.md's reading of the size study, fixed before any attack at a new size: per world x split, the gain of
δ over the clean photo on a group, less the gain of the best control on the same group (random noise of the same ε
on the unlearned model, the same δ on the retrain control); then a least-squares slope of that figure against
log10(tower parameters).

Since 2026-12-07 (docs/scale.md, Changes) the slope is fitted on **world means** (a world's splits share its
models, so the world is the unit that can be drawn again), its 95 % interval is Student's t on those means (a
bootstrap over two worlds per size has only three distinct draws a size), and a lack-of-fit F test (pure error
between the worlds of one size) says whether a line describes the sizes at all: the words "grows" or "shrinks"
need both an interval clear of 0 and a line that fits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

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


LACK_OF_FIT_P = 0.05  # below it the line is said not to fit, and the slope is given no direction


@dataclass(frozen=True)
class Trend:
    slope: float  # points per unit of the axis: a tenfold of tower parameters, or one attacker person
    low: float
    high: float
    n_points: int
    per: str = "per tenfold tower parameters"
    axis: str = "the tower's size"
    n_worlds: int = 0  # the world means the slope and its interval rest on
    lack_of_fit_p: float = float("nan")  # nan where it cannot be tested (two points of the axis, or no replicate)

    def sentence(self, what: str) -> str:
        """The trend in one sentence: "no trend" when the interval holds 0, "no line" when the line does not fit."""
        if not np.isfinite(self.slope):
            return f"{what}: one point of the axis measured so far, no slope yet."
        if not np.isfinite(self.low):
            return f"{what}: {self.slope:+.1f} points {self.per} over one world so far, no interval before a second."
        fit = (
            f"lack of fit p = {self.lack_of_fit_p:.2f}"
            if np.isfinite(self.lack_of_fit_p)
            else "two points of the axis, so a line's fit cannot be tested"
        )
        head = (
            f"{what}: {self.slope:+.1f} points {self.per} (95 % t interval {self.low:+.1f} to {self.high:+.1f} over "
            f"{self.n_worlds} world means of {self.n_points} world × split points; {fit})"
        )
        if np.isfinite(self.lack_of_fit_p) and self.lack_of_fit_p < LACK_OF_FIT_P:
            return f"{head}: no line describes {self.axis}; read the table, not the slope."
        said = "no trend" if self.low <= 0 <= self.high else ("grows" if self.low > 0 else "shrinks")
        return f"{head}: {said} with {self.axis}."


def _world_means(found: list[Point], x_of: dict[str, float]) -> tuple[np.ndarray, np.ndarray]:
    """One (x, mean of `Point.beyond`) per world of each label: the unit that can be drawn again."""
    keys = sorted({(p.size, p.world) for p in found if p.size in x_of})
    x = np.array([x_of[size] for size, _ in keys])
    y = np.array([np.mean([p.beyond for p in found if (p.size, p.world) == k]) for k in keys])
    return x, y


def lack_of_fit(x: np.ndarray, y: np.ndarray) -> float:
    """The p-value of the classical lack-of-fit F test of a line through (x, y), with the spread between points of
    the same x as pure error; nan when it cannot be tested (fewer than three x values, or no x with two points)."""
    levels = sorted(set(x.tolist()))
    df_lack, df_pure = len(levels) - 2, len(x) - len(levels)
    if df_lack < 1 or df_pure < 1:
        return float("nan")
    slope, intercept = np.polyfit(x, y, 1)
    means = {v: y[x == v].mean() for v in levels}
    pure = sum(float(((y[x == v] - m) ** 2).sum()) for v, m in means.items())
    lack = sum(float((x == v).sum() * (m - (slope * v + intercept)) ** 2) for v, m in means.items())
    if pure == 0:
        return 0.0 if lack > 0 else 1.0
    return float(stats.f.sf((lack / df_lack) / (pure / df_pure), df_lack, df_pure))


def _fit(found: list[Point], x_of: dict[str, float]) -> tuple[float, float, float, int, float]:
    """The slope of the world means against x_of[label], its 95 % Student t interval (n − 2 degrees of freedom;
    nan before a third world mean, or while every label has one world) and the lack-of-fit p."""
    x, y = _world_means(found, x_of)
    if len(set(x.tolist())) < 2:
        return float("nan"), float("nan"), float("nan"), len(x), float("nan")
    fit = stats.linregress(x, y)
    one_world = len(x) == len(set(x.tolist()))  # no label has two worlds: nothing says how far a world moves
    if one_world or len(x) < 3:
        return float(fit.slope), float("nan"), float("nan"), len(x), float("nan")
    half = float(stats.t.ppf(0.975, len(x) - 2)) * float(fit.stderr)
    return float(fit.slope), fit.slope - half, fit.slope + half, len(x), lack_of_fit(x, y)


def trend(found: list[Point], params: dict[str, float]) -> Trend:
    """The slope of `Point.beyond` against log10(params[size]), its interval and its lack of fit, over world means."""
    slope, low, high, worlds, p = _fit(found, {s: float(np.log10(v)) for s, v in params.items()})
    return Trend(slope, low, high, len(found), n_worlds=worlds, lack_of_fit_p=p)


def people_trend(found: list[Point]) -> Trend:
    """docs/scale.md's second axis: the slope of `Point.beyond` against the number of people δ is fitted on (each
    point's label is that number), read as the size axis is."""
    slope, low, high, worlds, p = _fit(found, {p.size: float(p.size) for p in found})
    return Trend(slope, low, high, len(found), "per attacker person", "the attacker's people", worlds, p)


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
