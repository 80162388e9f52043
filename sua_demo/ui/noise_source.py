"""Which noise an answer uses: the one shipped with the model, a file the user uploaded, or one optimised now."""

from __future__ import annotations

from sua_demo.attacks import Noise, load_noise
from sua_demo.errors import SuaError, UnknownNameError
from sua_demo.sessions import Session

SOURCES = ("shipped", "uploaded", "optimised")


def choose_noise(sess: Session, source: str, uploaded: str | None = None, optimised: str | None = None) -> Noise:
    """The noise for `source`, validated against the model (load_noise checks shape, range, eps, metadata)."""
    if source not in SOURCES:
        raise UnknownNameError(f"noise source must be one of {', '.join(SOURCES)}, got {str(source)[:40]!r}")
    if source == "shipped":
        if sess.shipped_noise is None:
            raise SuaError(f"{sess.name} has no shipped noise; upload one or optimise one")
        return sess.shipped_noise
    path = uploaded if source == "uploaded" else optimised
    if not path:
        what = "upload a .safetensors noise file" if source == "uploaded" else "optimise a noise first"
        raise SuaError(f"noise source is '{source}': {what}")
    return load_noise(path, sess.image_size)


def describe(sess: Session, source: str, noise: Noise) -> str:
    """One line: what this noise is, for the caption of every result."""
    eps = f"ε {noise.eps * 255:.0f}/255"
    if source == "shipped":
        return f"{sess.noise_note} ({eps}, attacker split {noise.meta.get('split_seed', 0)})"
    steps = noise.meta.get("step")
    return f"{source} noise ({eps}" + (f", {steps} steps)" if steps else ")")


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
