"""What the app and the CLI call: a small facade over the session cache, the story of one photo, a person's
verdict, the optimiser, the embedding map and the batch protocol. Plain values in, plain values out.

Everything expensive is cached per model (the image bank, the UMAP of the bench sample per noise),
because a person clicking around should wait for the model, not for bookkeeping.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch
from PIL import Image

from sua_demo.analysis.embedding_map import EmbeddingMap, fit_map
from sua_demo.analysis.examples import guided_examples
from sua_demo.analysis.paired import Paired, mcnemar
from sua_demo.analysis.verdict import Verdict, verdict
from sua_demo.attacks import ATTACKS, AttackConfig, Noise
from sua_demo.attacks.noise import noise_bytes, noise_digest
from sua_demo.config import World, served_world
from sua_demo.data import Example
from sua_demo.dataset import build_bench
from sua_demo.dataset.profiles import IMAGE_QUESTIONS
from sua_demo.dataset.records import Bench, Person
from sua_demo.denoisers import DENOISERS, build_denoiser
from sua_demo.errors import BadValueError, SuaError, UnknownNameError
from sua_demo.eval.evaluate import markdown_table
from sua_demo.eval.metrics import exact_match
from sua_demo.eval.person import person_answers, person_examples
from sua_demo.eval.recovery import (
    RETAIN_PEOPLE,
    AttackSplit,
    attack_split,
    attacker_examples,
    protocol_groups,
    recovery_answers,
    split_meta,
)
from sua_demo.eval.stealth import embedding_cosines, pixel_metrics
from sua_demo.images import amplified, heatmap
from sua_demo.sessions import DEFAULT_MODEL, SHIPPED_MODELS, LoadedModel, LoadedModels
from sua_demo.shipped import public_name
from sua_demo.threads import streaming_on_fresh_thread

# what the page reaches through the engine and nothing below it (the ui contract in pyproject.toml)
__all__ = ["DEFAULT_MODEL", "SHIPPED_MODELS", "AttackConfig", "Engine", "Noise", "LoadedModel", "Story", "noise_bytes",
           "noise_digest"]  # fmt: skip
MAX_QUESTION_CHARS = 300
MAX_STEPS = 2000
MAP_PHOTOS = (0, 5)  # one train and one held-out photo per person in the embedding map
MAP_PEOPLE = 33  # x 2 photos x 3 conditions ~ 200 points
COLUMNS = ("vanilla", "clean", "delta", "random", "retrain_delta", "denoised")


@dataclass
class StoryRow:
    question: str
    truth: str | None  # None for an uploaded photo or a free question
    answers: dict[str, str]  # column -> answer; a column whose model is not available is absent


@dataclass
class Story:
    """One image under every condition of the protocol, and how visible delta is on it."""

    model: str
    controls: dict[str, str | None]  # "vanilla" / "retrain" -> the model that answered, None if not available
    who: str
    rows: list[StoryRow]
    clean: torch.Tensor  # (3, S, S) in [0, 1]
    noisy: torch.Tensor
    denoised: torch.Tensor
    delta_view: torch.Tensor  # delta amplified to [0, 1]
    diff_view: torch.Tensor  # |noisy - clean| as a heatmap
    pixels: dict[str, float]
    cosines: dict[str, float]


class Engine:
    """Loads and caches models; every method takes plain values and returns plain values."""

    def __init__(self, world: World | None = None, bench: Bench | None = None) -> None:
        self.world = world or served_world()  # SUA_WORLD=faithful serves the faithful world (docs/world.md)
        self.bench = bench or build_bench(self.world.bench)
        self._ids = {p.id for p in self.bench.people}
        self.sessions = LoadedModels(self.world, self.bench)
        self._random: dict[tuple[int, float], Noise] = {}
        self._map_lock = threading.Lock()

    # -- models ---------------------------------------------------------------------------
    def session(self, model: str) -> LoadedModel:
        """A shipped model's name, or (where allowed) any folder / Hub id the adapters can load."""
        return self.sessions.get(model)

    def controls(
        self, sess: LoadedModel, vanilla: str = "", retrain: str = ""
    ) -> tuple[LoadedModel | None, LoadedModel | None]:
        """The before-unlearning and retrain-control models beside `sess`: the shipped ones for a shipped model,
        those the user names for their own model, None (shown as not available) otherwise."""
        if sess.shipped:
            vanilla, retrain = vanilla or "vanilla", retrain or "retrain"
        return (self.session(vanilla) if vanilla else None, self.session(retrain) if retrain else None)

    def random_noise(self, sess: LoadedModel, eps: float) -> Noise:
        """Uniform noise of the same eps (seed 0), the control every figure is read against."""
        key = (sess.image_size, round(eps, 8))
        if key not in self._random:
            with sess.attack_lock:  # its run switches kernels on the shared model too: never beside another attack
                if key not in self._random:
                    attack = ATTACKS.get("random")(sess.adapter, AttackConfig(eps=eps))
                    self._random[key] = attack.run(sess.bank, [], progress=False)
        return self._random[key]

    # -- people and questions -------------------------------------------------------------
    def split_of_noise(self, noise: Noise | None) -> AttackSplit:
        """Which forget people a noise was optimised on (from its validated metadata), else split 0."""
        if noise is not None and "attacker_ids" in noise.meta:
            ids = [int(i) for i in noise.meta["attacker_ids"]]
            unseen = [i for i in self.bench.forget_ids if i not in ids]
            return AttackSplit(ids, unseen, int(noise.meta.get("split_seed", 0)))
        return attack_split(self.bench)

    def person(self, pid: int) -> Person:
        if pid not in self._ids:
            raise UnknownNameError(f"no person #{pid} in this benchmark; IDs run from 1 to {len(self.bench.people)}")
        return self.bench.person(pid)

    def role(self, pid: int, noise: Noise | None) -> str:
        """'unseen by δ', 'attacker set' or 'retain': the badge that says what a person's result means."""
        if self.bench.split_of(self.person(pid).id) == "retain":
            return "retain"
        return "attacker set" if pid in self.split_of_noise(noise).attacker_ids else "unseen by δ"

    def people(self, noise: Noise | None) -> list[tuple[int, str]]:
        """(id, role), forget people first (unseen by the noise first: where generalisation shows)."""
        split = self.split_of_noise(noise)
        order = split.unseen_ids + split.attacker_ids + self.bench.retain_ids
        return [(pid, self.role(pid, noise)) for pid in order]

    def photo(self, pid: int, index: int) -> Image.Image:
        photos = self.person(pid).photos
        if not 0 <= index < len(photos):
            raise BadValueError(f"person #{pid} has photos 0-{len(photos) - 1}, not {index}")
        return photos[index]

    def questions(self, pid: int | None) -> list[tuple[str, str | None]]:
        """The image questions with their truths for a bench person; without truths for an uploaded photo."""
        if pid is None:
            return [(q, None) for q in IMAGE_QUESTIONS.values()]
        items = self.bench.items([self.person(pid).id], tasks=("gen",), modalities=("image",))
        return [(q.question, q.answer) for q in items]

    def prepare(self, sess: LoadedModel, image: Image.Image) -> torch.Tensor:
        """(3, S, S) in [0, 1], resized and cropped exactly as the model's processor does."""
        return sess.adapter.prepare_images([image])[0]

    # -- the story of one photo, and the verdict over a person's photos ----------------------
    def story(
        self,
        sess: LoadedModel,
        x: torch.Tensor,
        questions: list[tuple[str, str | None]],
        noise: Noise,
        denoiser: str = "gaussian",
        vanilla: LoadedModel | None = None,
        retrain: LoadedModel | None = None,
        who: str = "",
    ) -> Story:
        """Answers on one image: before unlearning, unlearned clean / + delta / + random noise / + delta then
        denoised, and the retrain control + delta; with the pictures and how visible delta is."""
        if not questions:
            raise SuaError("ask at least one question")
        qs = [check_question(q) for q, _ in questions]
        for other in (s for s in (vanilla, retrain) if s is not None):
            check_noise(other, noise)
        check_noise(sess, noise)
        d = build_denoiser(check_denoiser(denoiser))
        clean = x[None]
        noisy = noise.apply(clean)
        with torch.inference_mode():
            denoised = d(noisy)
        views = {"clean": clean, "delta": noisy, "random": self.random_noise(sess, noise.eps).apply(clean)}
        views["denoised"] = denoised
        answers = _ask(sess, views, qs)
        if vanilla is not None:
            answers |= {"vanilla": _ask(vanilla, {"vanilla": clean}, qs)["vanilla"]}
        if retrain is not None:
            answers |= {"retrain_delta": _ask(retrain, {"retrain_delta": noisy}, qs)["retrain_delta"]}
        rows = [
            StoryRow(q, t, {c: answers[c][i] for c in COLUMNS if c in answers})
            for i, (q, (_, t)) in enumerate(zip(qs, questions, strict=True))
        ]
        return Story(
            model=sess.name,
            controls={"vanilla": vanilla.name if vanilla else None, "retrain": retrain.name if retrain else None},
            who=who,
            rows=rows,
            clean=clean[0],
            noisy=noisy[0],
            denoised=denoised[0],
            delta_view=amplified(noise.delta, noise.eps),
            diff_view=heatmap((noisy - clean)[0].abs().amax(0), noise.eps),
            pixels=pixel_metrics(clean, noisy),
            cosines=embedding_cosines(sess.adapter, d, clean, noisy),
        )

    def person_verdict(
        self,
        sess: LoadedModel,
        pid: int,
        noise: Noise,
        vanilla: LoadedModel | None = None,
        retrain: LoadedModel | None = None,
    ) -> Verdict:
        """Over all of a person's photos: right answers per condition, and how many delta brought back."""
        check_noise(sess, noise)
        person = self.person(pid)
        rand = self.random_noise(sess, noise.eps)
        answers = person_answers(
            self.bench,
            pid,
            (sess.adapter, sess.bank),
            noise,
            rand,
            (vanilla.adapter, vanilla.bank) if vanilla else None,
            (retrain.adapter, retrain.bank) if retrain else None,
        )
        examples, photos = person_examples(self.bench, pid)
        items = examples[: len(examples) // len(photos)]
        return verdict(f"#{pid} {person.name}", [e.item.answer for e in items], answers, [e.item.fact for e in items])

    def examples(self, sess: LoadedModel) -> list[dict[str, Any]]:
        """The model's guided examples: as shipped (examples.json, measured by `make noises`), else measured now
        on its shipped noise (a few seconds, once per model)."""
        if sess.examples is None and sess.shipped_noise is not None and sess.name == sess.noise_owner:
            vanilla, retrain = self.controls(sess)
            sess.examples = guided_examples(
                self.bench,
                self.split_of_noise(sess.shipped_noise),
                (sess.adapter, sess.bank),
                sess.shipped_noise,
                self.random_noise(sess, sess.shipped_noise.eps),
                (retrain.adapter, retrain.bank) if retrain else None,
            )
        return sess.examples or []

    # -- optimise now ---------------------------------------------------------------------
    def optimise(
        self,
        sess: LoadedModel,
        eps_255: float = AttackConfig.eps * 255,
        steps: int = AttackConfig.steps,
        denoiser: str = AttackConfig.denoiser,
        stealth_weight: float = AttackConfig.stealth_weight,
        on_step: Callable[[int, dict[str, float], torch.Tensor], None] | None = None,
        stop: threading.Event | None = None,
        seed: int = 0,
        base: AttackConfig | None = None,
    ) -> tuple[Noise, Noise | None]:
        """A universal SUA noise on the protocol's attacker split `seed`: (last, lowest-loss) deltas. `stop`
        ends it early with the delta so far: a cancelled run still returns what it had."""
        eps_255 = finite("eps", eps_255, 0, 64, open_low=True)
        steps = int(finite("steps", steps, 1, MAX_STEPS))
        stealth_weight = finite("stealth weight", stealth_weight, 0, 1e4)
        split = attack_split(self.bench, seed=seed)
        cfg = replace(
            base or AttackConfig(),
            eps=eps_255 / 255,
            steps=steps,
            denoiser=check_denoiser(denoiser),
            stealth_weight=stealth_weight,
            seed=seed,
        )
        meta = split_meta(split)
        attack = ATTACKS.get("sua")(sess.adapter, cfg)

        def step(i: int, stats: dict[str, float]) -> None:
            if on_step is not None:
                on_step(i, stats, attack.current_delta())
            if stop is not None and stop.is_set():
                raise _Stopped(i)

        examples = attacker_examples(self.bench, split)
        with sess.attack_lock:  # the attack switches kernels on the shared model; one attack at a time
            try:
                noise = attack.run(sess.bank, examples, callback=step, progress=False, meta=meta)
            except _Stopped as stopped:
                noise = Noise(attack.current_delta(), cfg.eps, {**meta, "step": stopped.step, "stopped_early": True})
                best = attack.best_so_far()
            else:
                best = attack.best
        for n in (noise, best):
            if n is not None:
                n.meta["model"] = public_name(sess.name)  # never a server path
        return noise, best

    def optimise_stream(
        self, sess: LoadedModel, stop: threading.Event, tick: float | None = None, **kwargs: Any
    ) -> Iterator[tuple[int, float, torch.Tensor] | tuple[Noise, Noise | None] | None]:
        """`optimise` on a fresh thread with every core (threads.py): yields (step, loss, delta) as they come, then
        (last, best); with `tick`, None after every `tick` seconds without a step (so a page's clock moves on slow
        steps too). Closing the generator (a page that went away) sets `stop`, so the worker ends after its current
        step."""

        def run(emit: Callable[[tuple[int, float, torch.Tensor]], None]) -> tuple[Noise, Noise | None]:
            def on_step(i: int, stats: dict[str, float], delta: torch.Tensor) -> None:
                emit((i, stats["loss"], delta))

            return self.optimise(sess, on_step=on_step, stop=stop, **kwargs)

        try:
            noises = yield from streaming_on_fresh_thread(run, tick)
        finally:
            stop.set()
        yield noises

    # -- the embedding map ----------------------------------------------------------------
    def embedding_map(
        self, sess: LoadedModel, noise: Noise, denoiser: str = "gaussian", user_image: torch.Tensor | None = None
    ) -> list[dict[str, Any]]:
        """2-D points of clean, noisy and denoised embeddings of a bench sample (plus the user's image).

        The map of the bench sample is fitted once per (model, noise, denoiser) and cached; the user's
        image is placed on it with the fitted reducer, which takes milliseconds.
        """
        key = f"{fingerprint(noise)}:{check_denoiser(denoiser)}"
        with self._map_lock:  # one fit per key, even when the warm-up and a click ask at once
            if key not in sess.maps:
                sess.maps[key] = self._fit_map(sess, noise, denoiser)
                while len(sess.maps) > 8:
                    sess.maps.popitem(last=False)
            fitted: EmbeddingMap = sess.maps[key]
        points = list(fitted.points)
        if user_image is not None:
            points += fitted.place(_embeddings(sess, build_denoiser(denoiser), noise, user_image[None]))
        return points

    def _fit_map(self, sess: LoadedModel, noise: Noise, denoiser: str) -> EmbeddingMap:
        ids = (list(self.bench.forget_ids) + self.bench.retain_ids)[:MAP_PEOPLE]
        examples = [Example(self.bench.items([pid], ("gen",), ("image",))[0], ph) for pid in ids for ph in MAP_PHOTOS]
        x = sess.bank.get(examples)
        assert x is not None
        labels = [
            (self.bench.split_of(e.person_id), f"#{e.person_id} {self.bench.person(e.person_id).name}, photo {e.photo}")
            for e in examples
        ]
        return fit_map(_embeddings(sess, build_denoiser(denoiser), noise, x), labels)

    # -- the batch tab --------------------------------------------------------------------
    def batch_report(
        self, sess: LoadedModel, noise: Noise, tasks: tuple[str, ...] = ("gen",), retain_people: int = RETAIN_PEOPLE
    ) -> tuple[dict[str, dict[str, dict[str, float]]], str, dict[str, Paired]]:
        """The recovery protocol for one given noise: clean, this noise and random noise of the same ε; and per
        group, the verdict's paired test of the noise against random noise on the same questions."""
        check_noise(sess, noise)
        groups = protocol_groups(self.bench, self.split_of_noise(noise), retain_people, tasks)  # type: ignore[arg-type]
        noises = {"clean": None, "noise": noise, "random": self.random_noise(sess, noise.eps)}
        rec, said = recovery_answers(sess.adapter, sess.bank, groups, noises)

        def right(cond: str, g: str) -> list[bool]:
            return [exact_match(a, e.item.answer) for a, e in zip(said[cond][g], groups[g], strict=True)]

        tests = {g: mcnemar(right("noise", g), right("random", g)) for g in said["noise"]}
        tables = "\n".join(f"**{cond}**\n\n{markdown_table(rows)}" for cond, rows in rec.items())
        return rec, tables, tests


class _Stopped(Exception):
    """Raised from the step callback to end an optimisation early."""

    def __init__(self, step: int) -> None:
        super().__init__(step)
        self.step = step


def _ask(sess: LoadedModel, views: dict[str, torch.Tensor], questions: list[str]) -> dict[str, list[str]]:
    """Every question on every view in one batched generate: {view name: answers}."""
    k = len(questions)
    images = torch.cat(list(views.values())).repeat_interleave(k, 0)
    answers = sess.adapter.generate(images, questions * len(views))
    return {name: answers[i * k : (i + 1) * k] for i, name in enumerate(views)}


def finite(name: str, value: Any, low: float, high: float, open_low: bool = False) -> float:
    """A number from the UI or the API, refused with a message if it is not one, NaN, or out of range."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise BadValueError(f"{name} must be a number, got {str(value)[:40]!r}") from None
    if not math.isfinite(v) or v < low or v > high or (open_low and v == low):
        bound = f"({low:g}, {high:g}]" if open_low else f"[{low:g}, {high:g}]"
        raise BadValueError(f"{name} must be a number in {bound}, got {str(value)[:40]}")
    return v


def check_question(question: str) -> str:
    q = " ".join((question or "").split())
    if not q:
        raise SuaError("the question is empty")
    if len(q) > MAX_QUESTION_CHARS:
        raise SuaError(f"the question has {len(q)} characters; keep it under {MAX_QUESTION_CHARS}")
    return q


def check_denoiser(name: str) -> str:
    if name not in DENOISERS:
        raise UnknownNameError(f"unknown denoiser {str(name)[:40]!r}; choose one of: {', '.join(DENOISERS.names())}")
    return name


def check_noise(sess: LoadedModel, noise: Noise) -> None:
    if noise.resolution != sess.image_size:
        raise SuaError(
            f"the noise is {noise.resolution} px but {sess.name} takes {sess.image_size} px; "
            "optimise a noise for this model"
        )


def fingerprint(noise: Noise) -> str:
    return hashlib.sha1(noise.delta.float().contiguous().numpy().tobytes()).hexdigest()[:16]


@torch.inference_mode()
def _embeddings(sess: LoadedModel, denoiser: torch.nn.Module, noise: Noise, x: torch.Tensor) -> np.ndarray:
    noisy = noise.apply(x)
    emb = sess.adapter.image_embeddings(torch.cat([x, noisy, denoiser(noisy)]))
    return emb.float().cpu().numpy()
