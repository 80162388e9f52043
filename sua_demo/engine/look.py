"""One page action, one call: a `Request` (what the page or an API caller holds: model, image, noise, denoiser,
controls) in, a `Look` (everything the page shows of it) out, stage by stage.

The request is resolved once (the session and its controls, the noise, the image read and prepared once, the
questions), then the stages fill the same `Look`: the story of this image, the verdict over the person's photos
(for an upload, read from the same story), the embedding map with this image on it. A page shows each stage as it
lands; an API call asks for the one stage it returns.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from sua_demo.analysis.verdict import Verdict
from sua_demo.attacks import Noise, load_noise
from sua_demo.core.errors import SuaError, UnknownNameError
from sua_demo.core.images import read_image
from sua_demo.core.shipped import public_name, short_label
from sua_demo.engine import Engine, Story, check_question
from sua_demo.engine.model_cache import LoadedModel
from sua_demo.engine.request import Request

SOURCES = ("shipped", "uploaded", "optimised")
STAGES = ("story", "verdict", "map")
UPLOAD_WHO = "your photo"


@dataclass
class Look:
    """A request resolved (session, controls, noise, the prepared image, who it is) and what its stages found."""

    request: Request
    sess: LoadedModel
    vanilla: LoadedModel | None
    retrain: LoadedModel | None
    noise: Noise
    noise_label: str
    x: torch.Tensor
    pid: int | None  # None for an upload
    name: str  # '#5 Name', or 'your photo'
    photo: int | None
    role: str  # the person's role for this noise ('' for an upload)
    notes: list[str] = field(default_factory=list)  # what reading the upload changed ("first frame of 12")
    world: str = ""  # the served world's title: every result names the world that produced it
    story: Story | None = None
    verdict: Verdict | None = None
    points: list[dict[str, Any]] | None = None

    @property
    def who(self) -> str:
        """'#5 Name (unseen by δ), photo 5', or 'your photo': how every caption and export names the image."""
        return self.name if self.pid is None else f"{self.name} ({self.role}), photo {self.photo}"


def person_id(label: str | None) -> int:
    """'#12 Name (...)' from the UI, or '12' from the API."""
    match = re.match(r"\s*#?(\d{1,6})\b", str(label or ""))
    if not match:
        raise SuaError("pick a person from the gallery or the examples, or upload a photo")
    return int(match.group(1))


def photo_index(value: Any) -> int:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise SuaError(f"photo must be a number from 0 to 6, got {str(value)[:20]!r}") from None
    if v != v or not 0 <= v <= 6 or v != int(v):
        raise SuaError(f"photo must be a whole number from 0 to 6, got {str(value)[:20]}")
    return int(v)


def choose_noise(sess: LoadedModel, source: str, uploaded: str | None = None, optimised: str | None = None) -> Noise:
    """The noise for `source`, validated against the model (load_noise checks shape, range, eps, metadata)."""
    if source not in SOURCES:
        raise UnknownNameError(f"noise source must be one of {', '.join(SOURCES)}, got {str(source)[:40]!r}")
    if source == "shipped":
        if sess.shipped_noise is None:
            raise SuaError("this model has no shipped noise: upload one or optimise one")
        return sess.shipped_noise
    path = uploaded if source == "uploaded" else optimised
    if not path:
        what = "upload a .safetensors noise file" if source == "uploaded" else "optimise a noise first"
        raise SuaError(f"noise source is '{source}': {what}")
    return load_noise(path, sess.image_size)


def describe_noise(sess: LoadedModel, source: str, noise: Noise) -> str:
    """One line naming the noise, for every result that used it: its source, the model it was fitted on (said
    plainly when that is not the model it is applied to), its steps (a run stopped early says so, with the steps
    it was asked for), which δ of the run, ε and the attacker split."""
    eps = f"ε {noise.eps * 255:.0f}/255"
    split = f"attacker split {noise.meta.get('split_seed', 0)}"
    if source == "shipped":
        return f"{sess.noise_note} ({eps}, {split})"
    m = noise.meta
    fitted = str(m.get("model", "") or "")
    here = public_name(sess.name)
    parts = []
    if fitted:
        parts.append(f"fitted on {short_label(fitted)}" + ("" if fitted == here else f", not on {short_label(here)}"))
    if m.get("step"):
        planned = m.get("planned_steps")
        steps = f"{m['step']} of {planned} steps" if planned and planned != m["step"] else f"{m['step']} steps"
        parts.append(f"stopped early at {steps}" if m.get("stopped_early") else steps)
    if m.get("kept") == "best":
        parts.append("its lowest-loss δ")
    return f"{source} δ ({', '.join([*parts, eps, split])})"


def resolve(engine: Engine, req: Request) -> Look:
    """Everything the stages share, each looked up once: a bad value in the request fails here, before any model
    runs, with the sentence that says which."""
    sess = engine.session(req.model)
    vanilla, retrain = engine.controls(sess, req.vanilla, req.retrain)
    noise = choose_noise(sess, req.noise_source, req.noise_file, req.optimised)
    label = describe_noise(sess, req.noise_source, noise)
    if req.upload:
        image, notes = read_image(req.upload)
        x = engine.prepare(sess, image)
        return Look(req, sess, vanilla, retrain, noise, label, x, None, UPLOAD_WHO, None, "", notes, engine.world.title)
    pid, photo = person_id(req.person), photo_index(req.photo)
    x, name = engine.prepare(sess, engine.photo(pid, photo)), f"#{pid} {engine.person(pid).name}"
    role = engine.role(pid, noise)
    return Look(req, sess, vanilla, retrain, noise, label, x, pid, name, photo, role, world=engine.world.title)


def look(engine: Engine, req: Request, stages: tuple[str, ...] = STAGES) -> Iterator[Look]:
    """The request resolved once, then each stage asked for, in order; the same Look is yielded after each."""
    unknown = set(stages) - set(STAGES)
    if unknown:
        raise UnknownNameError(f"unknown stage {sorted(unknown)[0]!r}; the stages are {', '.join(STAGES)}")
    out = resolve(engine, req)
    if "story" in stages or ("verdict" in stages and out.pid is None):  # an upload's verdict reads its story
        questions = engine.questions(out.pid)
        if req.question and req.question.strip():
            questions.append((check_question(req.question), None))
        controls = (out.vanilla, out.retrain)
        out.story = engine.story(out.sess, out.x, questions, out.noise, req.denoiser, *controls, out.who)
        if "story" in stages:
            yield out
    if "verdict" in stages:
        if out.pid is not None:
            out.verdict = engine.person_verdict(out.sess, out.pid, out.noise, out.vanilla, out.retrain)
        yield out
    if "map" in stages:
        out.points = engine.embedding_map(out.sess, out.noise, req.denoiser, user_image=out.x)
        yield out
