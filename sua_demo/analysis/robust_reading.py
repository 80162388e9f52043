"""The reading rule of docs/robust.md, fixed before any robust model was attacked: is a robust method robust to SUA,
and is what it unlearned then removed, or only hidden?

Per method and world, on unseen people (a probe without an attacker/unseen split reads the forget people it
reports): an attack or probe *holds* when it brings back at most MARGIN points more than the same attack's (or
probe's) retrain control, as a mean over splits, and the paired test finds no evidence of recovery beyond the
controls (McNemar, p < ALPHA). **Robust to SUA**: every judged attack holds (2ε and the upper bounds are reported,
not judged). **Removed**: robust, and every probe holds too. Otherwise **hidden**, naming what brings it back.
Over worlds: removed only where it is removed in every world.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sua_demo.analysis.paired import Paired

MARGIN = 5.0  # points of exact match beyond the retrain control, fixed in docs/robust.md


@dataclass(frozen=True)
class Judged:
    """One attack or probe on one method in one world, read on unseen people."""

    name: str
    gain: float  # points the attack (or probe) brings back on the method, mean over splits
    control_gain: float  # the same attack's (or probe's) points on the retrain control
    paired: Paired | None = None  # the method + δ against its controls, pooled over splits; None: a probe without
    judged: bool = True  # False: reported beside, not judged (2ε, per-image PGD, the offsets)

    @property
    def beyond(self) -> float:
        return self.gain - self.control_gain

    @property
    def holds(self) -> bool:
        return self.beyond <= MARGIN and not (self.paired is not None and self.paired.first_wins)

    def said(self) -> str:
        test = "" if self.paired is None else f", p = {self.paired.p:.3g}"
        return f"{self.name} {self.beyond:+.1f} points beyond its retrain control{test}"


@dataclass(frozen=True)
class Reading:
    word: str  # "removed", "hidden" (the knowledge comes back) or "robust to SUA, hidden" (a probe brings it back)
    sentence: str


def reading(method: str, attacks: Sequence[Judged], probes: Sequence[Judged], pending: Sequence[str] = ()) -> Reading:
    """The rule for one method in one world. Nothing judged (no attack run yet) is not a reading: it refuses.
    `pending`: judged attacks not finished yet; "hidden" by a finished attack stands, anything that needs every
    attack to hold ("robust", "removed") is said to be provisional and names what is missing."""
    judged = [a for a in attacks if a.judged]
    if not judged:
        raise ValueError(f"{method}: no judged attack to read")
    broken = [a for a in judged if not a.holds]
    if broken:
        said = "; ".join(a.said() for a in broken)
        return Reading("hidden", f"{method} is not robust to SUA, so what it unlearned is hidden: {said}.")
    found = _holding(method, probes)
    if not pending:
        return found
    word = found.word.replace("robust to SUA", "robust to SUA (provisional)")
    word = word.replace("removed", "removed (provisional)")
    return Reading(word, f"{found.sentence} Provisional: {', '.join(pending)} not finished, and the rule needs it.")


def _holding(method: str, probes: Sequence[Judged]) -> Reading:
    """The reading once every judged attack holds."""
    leaks = [p for p in probes if not p.holds]
    if leaks:
        said = "; ".join(p.said() for p in leaks)
        return Reading("robust to SUA, hidden", f"{method} resists SUA, but the knowledge is hidden: {said}.")
    within = f"within {MARGIN:g} points of retrain"
    if not probes:
        return Reading("robust to SUA", f"{method} resists SUA (every judged attack {within}); no probe read yet.")
    return Reading("removed", f"{method} resists SUA and every probe stays {within}: removed.")


NOT_PROBES = ("sua", "random_noise")  # the card's δ is the shipped attack, judged as one; random noise is a control


def card_probes(row: dict, labels: dict[str, str]) -> list[Judged]:
    """A method's report-card row (audit's `report_card.json`) as the rule's probes: each cell is already the points
    the probe brings back on unseen people above the same probe on the retrain control (mean over splits), and
    privleak (Min-K%, %, 0 as the retrain control) is membership's, one-sided like the rest (only a leak counts)."""
    probes = [Judged(labels.get(name, name), cell["mean"], 0.0) for name, cell in row["cells"].items()
              if name not in NOT_PROBES and cell.get("n")]  # fmt: skip
    if row.get("privleak") is not None:
        probes.append(Judged("privleak (membership, %)", float(row["privleak"]), 0.0))
    return probes


def over_worlds(method: str, readings: dict[int, Reading]) -> str:
    """Removed only if removed in every world; otherwise world by world, whatever was measured."""
    words = {r.word for r in readings.values()}
    if words == {"removed"}:
        return f"{method}: removed in every world ({', '.join(str(w) for w in sorted(readings))})."
    each = "; ".join(f"world {w}: {r.word}" for w, r in sorted(readings.items()))
    return f"{method}: not removed in every world ({each})."
