"""The REST API and the MCP tools: each returns words a person (or a model) reads, then the same result as JSON.

The page has events of its own (each tab's `handlers.py`) that fill widgets with HTML, pictures and plots; a caller
gets none of that: no HTML, no plot JSON, no server path. The one file a caller needs, the noise `optimise`
made, comes back as a link of our own (`handouts`: a token, not a server path), which `answer`, `verdict`,
`embedding_map` and `batch` take as `noise_file`. Each function's docstring is its tool description, and its
arguments are the schema."""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict
from typing import Any

import gradio as gr
from gradio.utils import get_upload_folder

from sua_demo.core.shipped import public_name
from sua_demo.engine.request import Request
from sua_demo.ui.attack import actions
from sua_demo.ui.serving.gradio_parts import caller, handler, root_url
from sua_demo.ui.serving.handouts import HANDOUTS
from sua_demo.ui.shared import state

AUDIT_BOUND_S = 240  # a live audit called through the API returns within this much work, with what it finished


def as_json(value: Any) -> str:
    """The structured half of a result: plain JSON (ensure_ascii off, so δ and names read as themselves)."""
    return json.dumps(value, ensure_ascii=False, default=str)


def plain(markdown: str) -> str:
    """Markdown emphasis and links dropped: a caller gets words, not mark-up."""
    text = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", markdown)
    text = re.sub(r"\*\*|__|`", "", text)
    return re.sub(r"(?<![\w*])\*(\S[^*\n]*?)\*(?![\w*])", r"\1", text)


@handler
def load_model(model: str, person: str = "", role_filter: str = "unseen by δ") -> tuple[str, str]:
    """Load an unlearned model and list its people and measured examples.

    Args:
        model: one of the shipped models (a model folder or Hub id of your own goes through the page, where the
            server allows it).
        person: the person to keep in view (their number, e.g. "5"); empty for the model's best example.
        role_filter: which people to list: "unseen by δ", "attacker set", "retain" or "all".
    """
    p = actions.load(state(), model, person, role_filter)
    engine = state().engine
    roles = engine.people(engine.session(model).shipped_noise)
    listed = [{"person": pid, "name": engine.person(pid).name, "role": role} for pid, role in roles
              if role_filter in ("all", role)]  # fmt: skip
    data = {"status": plain(p.status), "person": int(p.person), "photo": p.photo, "people": listed,
            "examples": [s[0] for s in p.samples]}  # fmt: skip
    words = f"{plain(p.status)} {len(listed)} people listed ({role_filter}); in view: #{p.person}."
    return words, as_json(data)


def _request(
    model: str, person: str, photo: int, upload: str | None, noise_source: str, noise_file: str | None,
    denoiser: str = "gaussian", question: str = "", vanilla: str = "", retrain: str = "",
) -> Request:  # fmt: skip
    return Request(model=model, person=person, photo=photo, upload=upload, question=question,
                   noise_source=noise_source, noise_file=noise_file, optimised=None, denoiser=denoiser,
                   vanilla=vanilla, retrain=retrain)  # fmt: skip


@handler
def answer(
    model: str, person: str = "", photo: int = 5, upload: str | None = None, question: str = "",
    noise_source: str = "shipped", noise_file: str | None = None, denoiser: str = "gaussian", vanilla: str = "",
    retrain: str = "",
) -> tuple[str, str]:  # fmt: skip
    """Answers on one image under every condition: before unlearning; unlearned on the clean photo, with δ, with
    random noise of the same ε, with δ then denoised; the retrain control with δ. Also how visible δ is.

    Args:
        model: the unlearned model.
        person: a bench person's number (1-100); ignored when a photo is uploaded.
        photo: which of their photos, 0-4 train, 5-6 held out.
        upload: a photo of your own instead of a bench person's.
        question: a question of your own, asked beside the preset ones.
        noise_source: shipped (the model's own δ) or uploaded (noise_file).
        noise_file: a noise .safetensors file, for noise_source 'uploaded': a base64 data URI, or the URL of a
            noise file this server serves (the link `optimise` returns).
        denoiser: the denoiser of the denoised condition.
        vanilla: for a model of your own, its version before unlearning (folder or Hub id).
        retrain: for a model of your own, its retrain control (folder or Hub id).
    """
    from sua_demo.ui.attack.views import UPLOAD_BANNER
    from sua_demo.ui.shared.exports import story_json
    from sua_demo.ui.shared.story_table import COLUMN_TITLES, story_rows

    req = _request(model, person, photo, upload, noise_source, noise_file, denoiser, question, vanilla, retrain)
    seen = actions.look(state(), req, "story")
    story = seen.story
    lines = ["; ".join([f"{seen.who}; model {public_name(seen.sess.name)}; noise: {seen.noise_label}; "
                        f"denoiser: {denoiser}; {seen.world}", *seen.notes])]  # fmt: skip
    if upload:
        lines.append(UPLOAD_BANNER)
    for row in story_rows(story):
        lines.append(f"Q: {row[0]} (truth: {row[1]})")
        lines += [f"  {title}: {cell}" for title, cell in zip(COLUMN_TITLES.values(), row[2:], strict=True)]
    p = story.pixels
    lines.append(f"δ's size: L∞ {255 * p['linf']:.1f}/255, PSNR {p['psnr']:.1f} dB, SSIM {p['ssim']:.3f}")
    return "\n".join(lines), story_json(story, seen.noise_label, denoiser, world=seen.world)


@handler
def verdict(
    model: str, person: str = "", photo: int = 5, upload: str | None = None, noise_source: str = "shipped",
    noise_file: str | None = None, vanilla: str = "", retrain: str = "",
) -> tuple[str, str]:  # fmt: skip
    """The headline over all of a person's photos: how many answers δ brought back, beside its controls, and what
    that means.

    Args:
        model: the unlearned model.
        person: a bench person's number (1-100).
        photo: the photo in view (the verdict reads all seven).
        upload: a photo of your own: then how many answers δ changed on it.
        noise_source: shipped (the model's own δ) or uploaded (noise_file).
        noise_file: a noise .safetensors file, for noise_source 'uploaded': a base64 data URI, or the URL of a
            noise file this server serves (the link `optimise` returns).
        vanilla: for a model of your own, its version before unlearning.
        retrain: for a model of your own, its retrain control.
    """
    from sua_demo.ui.attack.views import source_line
    from sua_demo.ui.shared.story_table import changed_answers, reading

    req = _request(model, person, photo, upload, noise_source, noise_file, vanilla=vanilla, retrain=retrain)
    seen = actions.look(state(), req, "verdict")
    named = {"noise": seen.noise_label, "model": public_name(seen.sess.name), "world": seen.world}
    said = source_line(seen) + ". "
    if seen.verdict is None:  # an upload: no truth to check, only whether δ changed the answers
        rows = seen.story.rows
        changed = changed_answers(seen.story)
        words = f"δ changed {changed} of {len(rows)} answers on your photo (no truth to check them against)."
        return said + words, as_json({**named, "image": seen.who, "changed": changed, "answers": len(rows)})
    v = seen.verdict
    data = {**named, **asdict(v), "role": seen.role, "total": v.total}
    return f"{said}{v.headline()}. {reading(v, seen.role)}", as_json(data)


@handler
def embedding_map(
    model: str, person: str = "", photo: int = 5, upload: str | None = None, noise_source: str = "shipped",
    noise_file: str | None = None, denoiser: str = "gaussian",
) -> tuple[str, str]:  # fmt: skip
    """Where clean, noisy and denoised image embeddings land on a 2-D map (a bench sample and this image), in
    words, and the map's points.

    Args:
        model: the unlearned model.
        person: a bench person's number (1-100) whose photo goes on the map.
        photo: which of their photos, 0-4 train, 5-6 held out.
        upload: a photo of your own instead.
        noise_source: shipped (the model's own δ) or uploaded (noise_file).
        noise_file: a noise .safetensors file, for noise_source 'uploaded': a base64 data URI, or the URL of a
            noise file this server serves (the link `optimise` returns).
        denoiser: the denoiser of the denoised points.
    """
    from sua_demo.ui.attack.stealth import map_view

    seen = actions.look(state(), _request(model, person, photo, upload, noise_source, noise_file, denoiser), "map")
    _, caption = map_view(seen)
    return plain(caption), as_json({"image": seen.who, "points": seen.points})


@handler
def optimise(  # type: ignore[no-untyped-def]
    model: str, eps: float, steps: float, denoiser: str, stealth: float, run: str | None = None,
    request: gr.Request = None,  # type: ignore[assignment]
    progress=gr.Progress(),  # noqa: B008 (Gradio's way to stream progress to MCP clients)
):  # fmt: skip
    """Fit a universal δ now on the model's attacker people: progress as it runs, then the δ as a file.

    Args:
        model: the unlearned model.
        eps: L∞ budget ε in 1/255 units (1-32).
        steps: PGD steps (5-300).
        denoiser: the denoiser inside the stealth term.
        stealth: weight of the stealth term (0 turns it off).
        run: a name for this run, which `stop` takes to stop it; empty for a secret one, given in the first
            message.
    """
    views = actions.optimise(state(), model, eps, steps, denoiser, stealth, caller(request), run or "")
    for view in views:
        done = view.files is not None
        data = {"status": view.status, "done": done}
        if not done:
            progress((view.done, view.total or None), desc=view.status)
        noise = next((f for f in view.files or [] if f.endswith(".safetensors")), None)  # the last δ
        link = root_url(request) + HANDOUTS.hand_out(noise, get_upload_folder()) if noise else None  # no path
        yield view.status, as_json({**data, "noise": link} if done else data), link


@handler
def audit(model: str, person: str = "", progress=gr.Progress()):  # type: ignore[no-untyped-def]  # noqa: B008
    """The residual-knowledge audit: the shipped one for this model, or, given a forget person, a live one (every
    method beside its retrain control, with progress). A live audit returns within 240 s of work, plus the few
    seconds of the method under way then, with the methods it finished; it stops if the caller leaves.

    Args:
        model: the unlearned model.
        person: a forget person's number for a live audit; empty for the shipped audit.
    """
    from sua_demo.engine.jobs.audit import markdown, shipped_report
    from sua_demo.ui.audit import view as audit_view

    eng = state().engine
    if not person:
        report = shipped_report(eng, model)
        if report is None:
            yield f"No shipped audit for {model}: give a forget person for a live one.", as_json({})
            return
        yield plain(audit_view.NOTE + "\n\n" + markdown(report, page=True)), as_json(report)
        return
    deadline = time.monotonic() + AUDIT_BOUND_S
    for status, report, done in audit_view.live_audit(eng, model, person, deadline=deadline):
        if report is None:
            progress(done, desc=status)
            yield status, as_json({"status": status, "done": False})
        else:
            yield plain(status + "\n\n" + markdown(report, page=True)), as_json(report)


@handler
def batch(model: str, noise_source: str = "shipped", noise_file: str | None = None) -> tuple[str, str]:
    """The recovery protocol for the model and noise: exact match and refusal per condition and group.

    Args:
        model: the unlearned model.
        noise_source: shipped (the model's own δ) or uploaded (noise_file).
        noise_file: a noise .safetensors file, for noise_source 'uploaded': a base64 data URI, or the URL of a
            noise file this server serves (the link `optimise` returns).
    """
    from sua_demo.ui.batch.view import recovery_table

    header, rows, report, sentence = recovery_table(state().engine, model, noise_source, noise_file, None)
    lines = [" | ".join(header), *(" | ".join(str(c) for c in r) for r in rows), "", sentence]
    return "\n".join(lines), as_json(report)


def stop(run: str | None = None, request: gr.Request = None) -> str:  # type: ignore[assignment]
    """Stop your optimisation after its current step (it keeps the δ so far); nobody else's run.

    Args:
        run: the run's name, as `optimise` was given it or announced it.
    """
    return state().stop(caller(request), run or "")


TOOLS = (load_model, answer, verdict, embedding_map, optimise, audit, batch)


def register(inputs: dict[str, list], run_id: Any) -> None:
    """Every tool on no trigger of the page, reading the page's own components (`inputs[tool name]`, in the tool's
    argument order), answering in two hidden boxes (words, JSON) and, for `optimise`, a third with the δ's link;
    optimise and a live audit share the one heavy-job slot. Called inside the app's Blocks."""
    from sua_demo.ui.serving.launch import HEAVY

    words, data, noise = gr.Textbox(visible=False), gr.Textbox(visible=False), gr.Textbox(visible=False)
    for fn in TOOLS:
        outs = [words, data, noise] if fn is optimise else [words, data]
        gr.on([], fn, inputs[fn.__name__], outs, api_name=fn.__name__, **(HEAVY if fn in (optimise, audit) else {}))
    gr.on([], stop, [run_id], words, api_name="stop", queue=False)
