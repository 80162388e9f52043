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
    slope: float  # points per tenfold tower parameters
    low: float
    high: float
    n_points: int

    def sentence(self, what: str) -> str:
        """The trend in one sentence, "no trend" when the interval holds 0."""
        if not np.isfinite(self.slope):
            return f"{what}: one tower size measured so far, no slope yet."
        said = "no trend" if self.low <= 0 <= self.high else ("grows" if self.low > 0 else "shrinks")
        return (
            f"{what}: {self.slope:+.1f} points per tenfold tower parameters (95 % interval {self.low:+.1f} to "
            f"{self.high:+.1f}, {self.n_points} world × split points): {said} with the tower's size."
        )


def trend(found: list[Point], params: dict[str, float], boots: int = 2000, seed: int = 0) -> Trend:
    """The slope of `Point.beyond` against log10(params[size]) and its bootstrap interval over worlds."""
    x = np.array([np.log10(params[p.size]) for p in found])
    y = np.array([p.beyond for p in found])
    rng = np.random.default_rng(seed)
    worlds = {size: sorted({p.world for p in found if p.size == size}) for size in params}
    slopes = []
    for _ in range(boots):
        picks = []
        for size, names in worlds.items():
            for w in rng.choice(names, size=len(names), replace=True) if names else []:
                picks += [i for i, p in enumerate(found) if p.size == size and p.world == w]
        slopes.append(_slope(x[picks], y[picks]))
    low, high = np.nanpercentile(slopes, [2.5, 97.5]) if np.isfinite(slopes).any() else (np.nan, np.nan)
    return Trend(_slope(x, y), float(low), float(high), len(found))


def table(found: list[Point], params: dict[str, float]) -> str:
    """Per size: δ's gain, each control's, and δ beyond the best control, mean ± sd over world x split points."""
    lines = ["| tower | parameters | points | gain with δ | " + " | ".join(CONTROLS) + " | beyond the best control |"]
    lines.append("|---|---:|---:|---|" + "---|" * len(CONTROLS) + "---|")
    for size in params:
        mine = [p for p in found if p.size == size]
        if not mine:
            continue

        def cell(values: list[float]) -> str:
            return f"{np.mean(values):+.1f} ± {np.std(values):.1f}"

        controls = [cell([p.controls[c] for p in mine]) for c in CONTROLS]
        lines.append(
            f"| {size} | {params[size] / 1e6:.2f} M | {len(mine)} | {cell([p.gain for p in mine])} | "
            + " | ".join(controls)
            + f" | {cell([p.beyond for p in mine])} |"
        )
    return "\n".join(lines) + "\n"
