"""Everything the Attack tab shows for one set of inputs, computed by the library (the app only wires it).

`render` answers one image under every condition; `render_verdict` reads a person's photos (the stealth picture is
`stealth.py`'s). Each takes the raw values the UI holds and returns plain values (HTML, PIL images, plotly
figures, file paths); a user's mistake raises SuaError, which the app shows in place of stale results.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

from sua_demo.engine import Engine, Story, public_name
from sua_demo.errors import SuaError
from sua_demo.images import read_image, to_pil
from sua_demo.ui import exports
from sua_demo.ui.noise_source import choose_noise, describe
from sua_demo.ui.story import story_html, upload_verdict_html, verdict_html

DISPLAY_SIDE = 256
UPLOAD_BANNER = (
    "The tiny model knows only the 100 fictitious people of its benchmark: any name it gives a stranger is made "
    "up. What to read is whether the clean and noisy answers differ, and where your photo lands on the map."
)


@dataclass
class Inputs:
    """The values the page holds: which model, image, noise and denoiser."""

    model: str
    person: str = ""
    photo: int = 5
    upload: str | None = None
    question: str = ""
    noise_source: str = "shipped"
    noise_file: str | None = None
    optimised: str | None = None
    denoiser: str = "gaussian"
    vanilla: str = ""  # for a model of the user's own: its before-unlearning and retrain-control models
    retrain: str = ""


@dataclass
class Page:
    note: str
    table: str
    preview: Image.Image
    preview_caption: str
    views: list[tuple[Image.Image, str]]
    slider: tuple[Image.Image, Image.Image]
    metrics: list[list[str]]
    banner: str = ""
    files: list[str] = field(default_factory=list)
    story: Story | None = None


def person_id(label: str | None) -> int:
    """'#12 Name (...)' from the UI, or '12' from the API."""
    match = re.match(r"\s*#?(\d{1,6})\b", str(label or ""))
    if not match:
        raise SuaError("pick a person from the gallery or the examples, or upload a photo")
    return int(match.group(1))


def person_id_or_none(label: str | None) -> int | None:
    try:
        return person_id(label)
    except SuaError:
        return None


def photo_index(value: Any) -> int:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise SuaError(f"photo must be a number from 0 to 6, got {str(value)[:20]!r}") from None
    if v != v or not 0 <= v <= 6 or v != int(v):
        raise SuaError(f"photo must be a whole number from 0 to 6, got {str(value)[:20]}")
    return int(v)


def display(x: Any) -> Image.Image:
    """What the model sees, upscaled with hard pixel edges to at least DISPLAY_SIDE."""
    return to_pil(x, scale=max(1, DISPLAY_SIDE // int(x.shape[-1])))


def person_label(engine: Engine, pid: int, role: str) -> str:
    return f"#{pid} {engine.person(pid).name} ({role})"


def render(engine: Engine, inp: Inputs, scratch: exports.Scratch | None = None) -> Page:
    """The story of one image: every condition's answers, the pictures, how visible delta is, exports."""
    from sua_demo.engine import check_question

    sess = engine.session(inp.model)
    vanilla, retrain = engine.controls(sess, inp.vanilla, inp.retrain)
    noise = choose_noise(sess, inp.noise_source, inp.noise_file, inp.optimised)
    noise_label = describe(sess, inp.noise_source, noise)
    notes: list[str] = []
    if inp.upload:
        pil, notes = read_image(inp.upload)
        x, pid, who = engine.prepare(sess, pil), None, "your photo"
    else:
        pid, photo = person_id(inp.person), photo_index(inp.photo)
        x = engine.prepare(sess, engine.photo(pid, photo))
        who = f"{person_label(engine, pid, engine.role(pid, noise))}, photo {photo}"
    questions = engine.questions(pid)
    if inp.question and inp.question.strip():
        questions.append((check_question(inp.question), None))
    story = engine.story(sess, x, questions, noise, inp.denoiser, vanilla, retrain, who)
    p, c = story.pixels, story.cosines
    metrics = [
        ["L∞ (×255)", f"{255 * p['linf']:.1f}"],
        ["L2", f"{p['l2']:.2f}"],
        ["PSNR (dB)", f"{p['psnr']:.1f}"],
        ["SSIM", f"{p['ssim']:.3f}"],
        ["cos(E(x+δ), E(D(x+δ)))", f"{c['cos_noisy_denoised']:.4f}"],
        ["cos(E(x+δ), E(x))", f"{c['cos_noisy_clean']:.4f}"],
    ]
    controls = ", ".join(f"{k}: {v or 'not available'}" for k, v in story.controls.items())
    note = f"**{who}** · model **{sess.name}** ({controls}) · noise: {noise_label} · denoiser: {inp.denoiser}"
    files = []
    if scratch is not None:
        files = [str(f) for f in exports.write_story(scratch.folder(), story, noise_label, inp.denoiser)]
    return Page(
        note=" · ".join([note, *notes]),
        table=story_html(story),
        preview=display(story.clean),
        preview_caption=who,
        views=[
            (display(story.noisy), "x + δ"),
            (display(story.denoised), f"D(x + δ), {inp.denoiser}"),
            (display(story.delta_view), f"δ ×{0.5 / max(noise.eps, 1e-12):.0f}, to be seen"),
            (display(story.diff_view), "where δ changes it"),
        ],
        slider=(display(story.clean), display(story.noisy)),
        metrics=metrics,
        banner=f"<div class='banner' role='note'>{UPLOAD_BANNER}</div>" if inp.upload else "",
        files=files,
        story=story,
    )


def render_verdict(engine: Engine, inp: Inputs, story: Story | None = None) -> str:
    """The headline over the person's photos (or, for an upload, how many answers delta changed)."""
    if inp.upload:
        if story is None:
            raise SuaError("apply the noise first")
        return upload_verdict_html(story)
    sess = engine.session(inp.model)
    vanilla, retrain = engine.controls(sess, inp.vanilla, inp.retrain)
    noise = choose_noise(sess, inp.noise_source, inp.noise_file, inp.optimised)
    pid = person_id(inp.person)
    return verdict_html(engine.person_verdict(sess, pid, noise, vanilla, retrain), engine.role(pid, noise))


def gallery(engine: Engine, model: str, role_filter: str = "all") -> tuple[list[tuple[Image.Image, str]], list[str]]:
    """Thumbnails with short badges ('#5 · unseen by δ') and the matching dropdown labels, filtered by role."""
    sess = engine.session(model)
    people = engine.people(sess.shipped_noise)
    keep = [(pid, role) for pid, role in people if role_filter in ("all", role)]
    thumbs = [(engine.photo(pid, 0).resize((96, 96)), f"#{pid} · {role}") for pid, role in keep]
    return thumbs, [person_label(engine, pid, role) for pid, role in people]


def examples(engine: Engine, model: str) -> list[dict[str, Any]]:
    """The model's measured guided examples (checkpoints/noise/<model>/examples.json), with labels."""
    sess = engine.session(model)
    out = []
    for e in engine.examples(sess):
        label = person_label(engine, int(e["person"]), engine.role(int(e["person"]), sess.shipped_noise))
        text = f"#{e['person']} {engine.person(int(e['person'])).name} · photo {e['photo']} · "
        best = e["brought_back"] - e["above_controls"]  # the measure the headline reads (story.beyond_controls)
        back = f"δ brings back {e['brought_back']}, controls {best}"  # short: a chip shows ~60 characters
        out.append({**e, "label": label, "text": text + back})
    return out


def load_status(engine: Engine, model: str) -> str:
    sess = engine.session(model)
    return f"**{public_name(sess.name)}** loaded: {sess.image_size}-pixel photos. Shipped noise: {sess.noise_note}."


def optimised_files(folder: Path, last: Any, best: Any, model: str, eps: float) -> list[str]:
    stem = f"sua_{Path(model).name}_eps{eps:g}"
    files = exports.write_noise(folder, last, stem + "_last")
    if best is not None:
        files += exports.write_noise(folder, best, stem + "_best")
    return [str(f) for f in files]
