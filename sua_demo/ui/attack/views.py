"""Everything the Attack tab shows for one set of inputs, computed by the library (the app only wires it).

`answers_view` shows one image's story under every condition and `verdict_view` the verdict over a person's photos,
each from the `Look` that `sua_demo.engine.look` made of the page's one request (the stealth picture is `stealth.py`'s);
`gallery` and `examples` list the people. Plain values out (HTML, PIL images, file paths).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

from sua_demo.core.shipped import label, public_name
from sua_demo.engine import Engine, Story, to_pil
from sua_demo.engine.look import Look
from sua_demo.engine.memo import digest
from sua_demo.ui.shared import exports
from sua_demo.ui.shared.story_table import story_html, upload_verdict_html, verdict_html
from sua_demo.ui.shared.words import p_text

DISPLAY_SIDE = 256
UPLOAD_BANNER = (
    "The tiny model knows only the 100 fictitious people of its benchmark: any name it gives a stranger is made "
    "up. What to read is whether the clean and noisy answers differ, and where your photo lands on the map."
)


# how visible δ is, each measure named in words (the page's "how visible is δ" table)
METRICS = (
    "largest change of one pixel (of 255)",
    "size of the whole change (L2)",
    "peak signal-to-noise ratio, dB (above 35: hard to see)",
    "structural similarity (1: the same)",
    "model's view: noisy photo against its denoised copy (1: the same)",
    "model's view: noisy photo against the clean one (1: the same)",
)


def metrics_html(rows: list[list[str]]) -> str:
    """'How visible is δ' as an HTML table. A Gradio Dataframe inside a closed accordion dropped the values sent
    while it was closed and showed an empty table headed '0 | 1' when opened after the results (the usual path)."""
    import html

    body = "".join(f"<tr><th scope='row'>{html.escape(m)}</th><td>{html.escape(v)}</td></tr>" for m, v in rows)
    return (
        "<table class='visible' aria-label='how visible is δ'><thead><tr><th scope='col'>measure</th>"
        f"<th scope='col'>value</th></tr></thead><tbody>{body}</tbody></table>"
    )


@dataclass
class Page:
    note: str
    table: str
    preview: Image.Image
    preview_caption: str
    views: list[tuple[Image.Image, str]]
    slider: tuple[Image.Image, Image.Image]
    metrics: str  # metrics_html
    banner: str = ""
    files: list[str] = field(default_factory=list)
    story: Story | None = None


def display(x: Any, scratch: exports.Scratch | None = None) -> Image.Image | str:
    """What the model sees, upscaled with hard pixel edges to at least DISPLAY_SIDE; with `scratch`, as a file
    written once per picture (`Scratch.picture`)."""
    scale = max(1, DISPLAY_SIDE // int(x.shape[-1]))
    if scratch is None:
        return to_pil(x, scale=scale)
    return scratch.picture(f"{digest(x)}_{scale}", lambda: to_pil(x, scale=scale))


def person_label(engine: Engine, pid: int, role: str) -> str:
    return f"#{pid} {engine.person(pid).name} ({role})"


def answers_view(look: Look, scratch: exports.Scratch | None = None) -> Page:
    """The story of one image as the page shows it: the table, the pictures, how visible δ is, the exports."""
    story, req, noise = look.story, look.request, look.noise
    assert story is not None, "answers_view needs the look's story stage"
    p, c = story.pixels, story.cosines
    values = [f"{255 * p['linf']:.1f}", f"{p['l2']:.2f}", f"{p['psnr']:.1f}", f"{p['ssim']:.3f}"]
    values += [f"{c['cos_noisy_denoised']:.4f}", f"{c['cos_noisy_clean']:.4f}"]
    metrics = [[name, value] for name, value in zip(METRICS, values, strict=True)]
    controls = ", ".join(_control(k, v) for k, v in story.controls.items())
    model = label(public_name(look.sess.name))
    note = (f"**{look.who}** · model **{model}** ({controls}) · noise: {look.noise_label} · denoiser: "
            f"{req.denoiser} · {look.world}")  # fmt: skip
    files = []
    if scratch is not None:
        made = exports.write_story(scratch.folder(), story, look.noise_label, req.denoiser, world=look.world)
        files = [str(f) for f in made]
    return Page(
        note=" · ".join([note, *look.notes]),
        table=story_html(story),
        preview=display(story.clean, scratch),
        preview_caption=look.who,
        views=[
            (display(story.noisy, scratch), "x + δ"),
            (display(story.denoised, scratch), f"D(x + δ), {req.denoiser}"),
            (display(story.delta_view, scratch), f"δ ×{0.5 / max(noise.eps, 1e-12):.0f}, to be seen"),
            (display(story.diff_view, scratch), "where δ changes it"),
        ],
        slider=(display(story.clean, scratch), display(story.noisy, scratch)),
        metrics=metrics_html(metrics),
        banner=f"<div class='banner' role='note'>{UPLOAD_BANNER}</div>" if req.upload else "",
        files=files,
        story=story,
    )


def _control(role: str, model: str | None) -> str:
    """'Retrain control (never saw them)', with the user's own control's name, or 'not available'."""
    if not model:
        return f"{label(role)}: not available"
    return label(role) if model == role else f"{label(role)}: {public_name(model)}"


def source_line(look: Look) -> str:
    """Which noise, model and world produced a result: the first line of every verdict, the note and the exports."""
    return f"noise: {look.noise_label} · model: {label(public_name(look.sess.name))} · {look.world}"


def verdict_view(look: Look) -> str:
    """The headline over the person's photos; for an upload, how many answers δ changed on it (its story). Each
    says first which noise, model and world it is about."""
    if look.pid is None:
        assert look.story is not None, "an upload's verdict reads its story"
        return upload_verdict_html(look.story, source_line(look))
    assert look.verdict is not None, "verdict_view needs the look's verdict stage"
    return verdict_html(look.verdict, look.role, source=source_line(look))


def gallery(
    engine: Engine, model: str, role_filter: str = "all", scratch: exports.Scratch | None = None
) -> tuple[list[tuple[Image.Image | str, str]], list[str]]:
    """Thumbnails with short badges ('#5 · unseen by δ') and the matching dropdown labels, filtered by role; with
    `scratch`, each thumbnail a file written once (`Scratch.picture`)."""
    sess = engine.session(model)
    people = engine.people(sess.shipped_noise)
    keep = [(pid, role) for pid, role in people if role_filter in ("all", role)]

    def thumb(pid: int) -> Image.Image | str:
        def small() -> Image.Image:
            return engine.photo(pid, 0).resize((96, 96))

        return small() if scratch is None else scratch.picture(f"thumb_{engine.world.name}_{pid}", small)

    thumbs = [(thumb(pid), f"#{pid} · {role}") for pid, role in keep]
    return thumbs, [person_label(engine, pid, role) for pid, role in people]


def examples(engine: Engine, model: str) -> list[dict[str, Any]]:
    """The model's measured guided examples (checkpoints/noise/<model>/examples.json), with labels."""
    sess = engine.session(model)
    out = []
    for e in engine.examples(sess):
        label = person_label(engine, int(e["person"]), engine.role(int(e["person"]), sess.shipped_noise))
        text = f"#{e['person']} {engine.person(int(e['person'])).name} · photo {e['photo']} · "
        back = f"δ brings back {e['beyond_controls']} ({p_text(e['p'])})"  # the verdict's count and test, short
        seen = " · one of the people δ was fitted on" if e.get("fitted_on") else ""  # none δ never saw passes
        out.append({**e, "label": label, "text": text + back + seen})
    return out


def examples_label(examples: list[dict[str, Any]]) -> str:
    """The chips' label, true to the chips: it promises people δ never saw first only where one passes the test."""
    if not examples:
        return "examples: none measured for this model (pick a person below)"
    if all(e.get("fitted_on") for e in examples):
        return ("examples: the people δ brings back most beyond its controls; each is one of the people δ was fitted "
                "on, as no one δ never saw passes the test with this model")  # fmt: skip
    return "examples: the people δ brings back most beyond its controls, those it never saw first"


def load_status(engine: Engine, model: str) -> str:
    sess = engine.session(model)
    name = label(public_name(sess.name))
    return f"**{name}** loaded: {sess.image_size}-pixel photos. Shipped noise: {sess.noise_note}."


def optimised_files(folder: Path, last: Any, best: Any, model: str, eps: float) -> list[str]:
    stem = f"sua_{Path(model).name}_eps{eps:g}"
    files = exports.write_noise(folder, last, stem + "_last")
    if best is not None:
        files += exports.write_noise(folder, best, stem + "_best")
    return [str(f) for f in files]
