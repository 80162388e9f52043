"""The headline of a person's story: over all their photos, how many answers does each condition get right?

One photo and five questions is too small a sample to show a 20-point effect; a person's seven photos are
35 answers, enough to read a verdict against its controls (random noise of the same eps, and the retrain
control, which never saw the person, with the same delta).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sua_demo.analysis.paired import Paired, against_controls, mcnemar
from sua_demo.eval.metrics import exact_match

CONTROLS = ("random", "retrain_delta")  # what δ is judged against: random noise of the same ε, the retrain control


@dataclass
class Verdict:
    """Correct answers per condition over a person's photos; `facts` counts per fact (question)."""

    person: str
    photos: int
    questions: int
    correct: dict[str, int]  # condition -> correct answers (of photos x questions)
    brought_back: int  # right with delta where the unlearned model was wrong (or refused) on the clean photo
    facts: dict[str, dict[str, int]] = field(default_factory=dict)  # fact -> condition -> photos right
    # McNemar's exact test on the same questions: δ against its controls taken together (its only_first is the
    # count every verdict reports: answers δ brings back that no control does), and δ against the clean photo
    beyond: Paired | None = None
    damage: Paired | None = None

    @property
    def total(self) -> int:
        return self.photos * self.questions

    @property
    def count(self) -> int:
        """The one count every verdict reports: answers right with δ that no control gets right (the paired
        test's discordant pairs for δ); without a control, answers δ brought back over the clean photo."""
        return self.beyond.only_first if self.beyond is not None else self.brought_back

    def headline(self) -> str:
        c = self.correct
        controls = [f"clean {c['clean']}"]
        if "random" in c:
            controls.append(f"random noise {c['random']}")
        controls.append(f"retrain control + δ {c['retrain_delta']}" if "retrain_delta" in c else "retrain control n/a")
        return (
            f"δ brings back {self.count} of {self.total} answers across {self.person}'s {self.photos} photos that no "
            f"control does (right with δ: {c['delta']}; {', '.join(controls)})"
        )


def verdict(
    person: str,
    truths: list[str],
    answers: dict[str, list[list[str]]],
    facts: list[str] | None = None,
) -> Verdict:
    """`answers[condition][photo][question]` -> counts. Conditions missing (no vanilla or retrain model) are
    left out, not counted as zero."""
    clean = answers["clean"]
    n_photos, n_q = len(clean), len(truths)
    ok = {
        cond: [[exact_match(a, t) for a, t in zip(rows, truths, strict=True)] for rows in photos]
        for cond, photos in answers.items()
    }
    correct = {cond: sum(map(sum, grid)) for cond, grid in ok.items()}
    back = sum(ok["delta"][p][q] and not ok["clean"][p][q] for p in range(n_photos) for q in range(n_q))
    names = facts or [f"q{i + 1}" for i in range(n_q)]
    per_fact = {
        name: {cond: sum(grid[p][q] for p in range(n_photos)) for cond, grid in ok.items()}
        for q, name in enumerate(names)
    }
    flat = {cond: [x for row in grid for x in row] for cond, grid in ok.items()}
    controls = [flat[c] for c in CONTROLS if c in flat]
    beyond = against_controls(flat["delta"], controls) if controls else None
    return Verdict(person, n_photos, n_q, correct, back, per_fact, beyond, mcnemar(flat["delta"], flat["clean"]))
