"""The noise box's words: which sources have something to use yet (the noise itself is chosen in
`sua_demo.engine.look`)."""

from __future__ import annotations

NEEDS = {
    "uploaded": "a noise file (in the 'Your own…' panel below)",
    "optimised": "a run of Optimise (its panel below)",
}


def missing_sources(noise_file: str | None, optimised: str | None) -> list[str]:
    """The sources with nothing to use yet: the page greys them out and says what each needs."""
    have = {"uploaded": noise_file, "optimised": optimised}
    return [source for source in NEEDS if not have[source]]


def sources_help(noise_file: str | None, optimised: str | None) -> str:
    """The noise box's one-line help: what δ is, and what a greyed-out source is waiting for."""
    waiting = [f"'{s}' needs {NEEDS[s]}" for s in missing_sources(noise_file, optimised)]
    return "the pattern added to the photo; " + ("; ".join(waiting) if waiting else "every source is ready")


def greyed_out(noise_file: str | None, optimised: str | None) -> list[str]:
    """The noise box's classes that grey out (CSS in ui/shared/words.py) the sources with nothing to use yet."""
    return [f"no-{s}" for s in missing_sources(noise_file, optimised)]
