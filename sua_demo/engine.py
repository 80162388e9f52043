"""What the app does, as plain typed functions: load a model, compare answers, optimise a noise, map embeddings.

The Gradio app (`app.py`) is layout and wiring over this module; the tests drive the same functions.
Everything expensive is cached per model (the image bank, the UMAP of the bench sample per noise),
because a person clicking around should wait for the model, not for bookkeeping.
"""

from __future__ import annotations

import hashlib
import queue
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image

from sua_demo.attacks import ATTACKS, AttackConfig, Noise, load_noise
from sua_demo.bench import build_bench
from sua_demo.bench.profiles import IMAGE_QUESTIONS
from sua_demo.bench.records import Bench, Person
from sua_demo.config import CHECKPOINTS
from sua_demo.data import Example, ImageBank
from sua_demo.denoisers import DENOISERS, build_denoiser
from sua_demo.errors import SuaError
from sua_demo.eval.evaluate import markdown_table
from sua_demo.eval.metrics import exact_match, is_refusal
from sua_demo.eval.recovery import AttackSplit, attack_split, attacker_examples, protocol_groups, recovery
from sua_demo.eval.stealth import embedding_cosines, pixel_metrics
from sua_demo.images import amplified, heatmap
from sua_demo.models import VisionLanguageAdapter, load_adapter

SHIPPED_MODELS = ("idk", "grad_diff", "ga_lora", "kl_lora", "npo_lora", "vanilla", "retrain")
DEFAULT_MODEL = "idk"  # refusal-style unlearning: where the hidden knowledge shows most clearly (SCIENCE.md)
NOISE_FALLBACK = "idk"  # vanilla and the retrain control get the IDK noise: the "same delta" control
MAX_QUESTION_CHARS = 300
MAP_PHOTOS = (0, 5)  # one train and one held-out photo per person in the embedding map
MAP_PEOPLE = 33  # x 2 photos x 3 conditions ~ 200 points


@dataclass
class Session:
    """One loaded model with everything the app keeps beside it."""

    name: str
    adapter: VisionLanguageAdapter
    bank: ImageBank
    shipped_noise: Noise | None
    noise_note: str
    maps: OrderedDict[str, Any] = field(default_factory=OrderedDict)  # noise fingerprint -> fitted map
    attack_lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def image_size(self) -> int:
        return self.adapter.image_size


@dataclass
class AnswerRow:
    question: str
    truth: str | None
    clean: str
    noisy: str
    denoised: str

    def verdicts(self) -> tuple[str, str, str]:
        """✓ / ✗ against the truth where it is known, 'refused' where the model declined."""
        return tuple(self._verdict(a) for a in (self.clean, self.noisy, self.denoised))  # type: ignore[return-value]

    def _verdict(self, answer: str) -> str:
        if is_refusal(answer):
            return "refused"
        if self.truth is None:
            return ""
        return "✓" if exact_match(answer, self.truth) else "✗"


@dataclass
class Comparison:
    clean: torch.Tensor  # (3, S, S) in [0, 1]
    noisy: torch.Tensor
    denoised: torch.Tensor
    delta_view: torch.Tensor  # delta amplified to [0, 1]
    diff_view: torch.Tensor  # |noisy - clean| as a heatmap
    rows: list[AnswerRow]
    pixels: dict[str, float]
    cosines: dict[str, float]


class Engine:
    """Loads and caches models; every method takes plain values and returns plain values."""

    def __init__(self, checkpoints: Path = CHECKPOINTS, bench: Bench | None = None, max_models: int = 3) -> None:
        self.checkpoints = Path(checkpoints)
        self.bench = bench or build_bench()
        self._ids = {p.id for p in self.bench.people}
        self.max_models = max_models
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()
        self._loading: dict[str, threading.Lock] = {}
        self._map_lock = threading.Lock()

    # -- models ---------------------------------------------------------------------------
    def session(self, model: str) -> Session:
        """A shipped model's name, or any folder / Hub id the adapters can load (cached, least recent evicted)."""
        model = (model or "").strip()
        if not model:
            raise SuaError("choose a model, or type a model id or local folder")
        with self._lock:
            if model in self._sessions:
                self._sessions.move_to_end(model)
                return self._sessions[model]
            loading = self._loading.setdefault(model, threading.Lock())
        with loading:  # one load per model; users of other models are not held up meanwhile
            with self._lock:
                if model in self._sessions:
                    return self._sessions[model]
            adapter = load_adapter(self.checkpoints / "tiny-llava" / model if model in SHIPPED_MODELS else model)
            noise, note = self._shipped_noise(model, adapter.image_size)
            sess = Session(model, adapter, ImageBank(self.bench, adapter), noise, note)
            with self._lock:
                self._sessions[model] = sess
                while len(self._sessions) > self.max_models:
                    self._sessions.popitem(last=False)
            return sess

    def _shipped_noise(self, model: str, size: int) -> tuple[Noise | None, str]:
        root = self.checkpoints / "noise"
        own = root / model / "delta_split0.safetensors"
        if own.is_file():
            return load_noise(own, size), f"the noise shipped for {model}"
        fallback = root / NOISE_FALLBACK / "delta_split0.safetensors"
        if model in SHIPPED_MODELS and fallback.is_file():
            return load_noise(fallback, size), f"the {NOISE_FALLBACK} model's noise (the same-delta control)"
        return None, "no shipped noise for this model: upload one or optimise one"

    # -- people and questions -------------------------------------------------------------
    def split_of_noise(self, noise: Noise | None) -> AttackSplit:
        """Which forget people a noise was optimised on (from its metadata), else the protocol's split 0."""
        if noise is not None and "attacker_ids" in noise.meta:
            ids = [int(i) for i in noise.meta["attacker_ids"]]
            unseen = [i for i in self.bench.forget_ids if i not in ids]
            return AttackSplit(ids, unseen, int(noise.meta.get("split_seed", 0)))
        return attack_split(self.bench)

    def person(self, pid: int) -> Person:
        if pid not in self._ids:
            raise SuaError(f"no person #{pid} in this benchmark; IDs run from 1 to {len(self.bench.people)}")
        return self.bench.person(pid)

    def person_label(self, pid: int, noise: Noise | None) -> str:
        person = self.person(pid)
        role = self.bench.split_of(pid)
        if role == "forget":
            role += ", in δ's attacker set" if pid in self.split_of_noise(noise).attacker_ids else ", unseen by δ"
        return f"#{pid} {person.name} ({role})"

    def people(self, noise: Noise | None) -> list[tuple[int, str]]:
        """Forget people first (unseen by the noise first: where generalisation shows), then retain people."""
        split = self.split_of_noise(noise)
        order = split.unseen_ids + split.attacker_ids + self.bench.retain_ids
        return [(pid, self.person_label(pid, noise)) for pid in order]

    def facts(self, pid: int) -> dict[str, str]:
        person = self.person(pid)
        return {"name": person.name, **{k: v for k, v in person.facts.items() if k != "name"}}

    def photo(self, pid: int, index: int) -> Image.Image:
        photos = self.person(pid).photos
        if not 0 <= index < len(photos):
            raise SuaError(f"person #{pid} has photos 0-{len(photos) - 1}, not {index}")
        return photos[index]

    def questions(self, pid: int | None) -> list[tuple[str, str | None]]:
        """The image questions with their truths for a bench person; without truths for an uploaded photo."""
        if pid is None:
            return [(q, None) for q in IMAGE_QUESTIONS.values()]
        items = self.bench.items([self.person(pid).id], tasks=("gen",), modalities=("image",))
        return [(q.question, q.answer) for q in items]

    # -- the comparison -------------------------------------------------------------------
    def prepare(self, sess: Session, image: Image.Image) -> torch.Tensor:
        """(3, S, S) in [0, 1], resized and cropped exactly as the model's processor does."""
        return sess.adapter.prepare_images([image])[0]

    def compare(
        self,
        sess: Session,
        x: torch.Tensor,
        questions: list[tuple[str, str | None]],
        noise: Noise,
        denoiser: str = "gaussian",
        max_new_tokens: int = 12,
    ) -> Comparison:
        """Answers on clean, noisy and denoised-noisy versions of one image, with how visible delta is."""
        if not questions:
            raise SuaError("ask at least one question")
        for q, _ in questions:
            check_question(q)
        check_noise(sess, noise)
        d = build_denoiser(check_denoiser(denoiser))
        clean = x[None]
        noisy = noise.apply(clean)
        with torch.inference_mode():
            denoised = d(noisy)
        views = torch.cat([clean, noisy, denoised])
        qs = [q for q, _ in questions]
        k = len(qs)
        answers = sess.adapter.generate(views.repeat_interleave(k, 0), qs * 3, max_new_tokens=max_new_tokens)
        rows = [AnswerRow(q, t, answers[i], answers[k + i], answers[2 * k + i]) for i, (q, t) in enumerate(questions)]
        diff = (noisy - clean)[0]
        return Comparison(
            clean=clean[0],
            noisy=noisy[0],
            denoised=denoised[0],
            delta_view=amplified(noise.delta, noise.eps),
            diff_view=heatmap(diff.abs().amax(0), noise.eps),
            rows=rows,
            pixels=pixel_metrics(clean, noisy),
            cosines=embedding_cosines(sess.adapter, d, clean, noisy),
        )

    # -- optimise now ---------------------------------------------------------------------
    def optimise(
        self,
        sess: Session,
        eps_255: float = 16,
        steps: int = 100,
        denoiser: str = "gaussian",
        stealth_weight: float = AttackConfig.stealth_weight,
        on_step: Callable[[int, dict[str, float]], None] | None = None,
        stop: threading.Event | None = None,
        workdir: Path | None = None,
        seed: int = 0,
    ) -> Noise:
        """A universal SUA noise on the protocol's attacker split `seed`. `stop` ends it early with the delta so
        far: a cancelled run still returns what it had."""
        if not 0 < eps_255 <= 64:
            raise SuaError(f"eps must be between 0 and 64 (in 1/255 units), got {eps_255}")
        if not 1 <= steps <= 2000:
            raise SuaError(f"steps must be between 1 and 2000, got {steps}")
        split = attack_split(self.bench, seed=seed)
        cfg = replace(
            AttackConfig(),
            eps=eps_255 / 255,
            steps=int(steps),
            denoiser=denoiser,
            stealth_weight=stealth_weight,
            checkpoint_every=1,
            seed=seed,
        )
        checkpoint = Path(workdir or tempfile.mkdtemp(prefix="sua_attack_")) / "noise_in_progress.safetensors"
        checkpoint.unlink(missing_ok=True)
        check_denoiser(denoiser)
        meta = {"attacker_ids": split.attacker_ids, "unseen_ids": split.unseen_ids, "split_seed": seed}

        def step(i: int, stats: dict[str, float]) -> None:  # called once step i is checkpointed
            if on_step is not None:
                on_step(i, stats)
            if stop is not None and stop.is_set():
                raise _Stopped

        attack = ATTACKS.get("sua")(sess.adapter, cfg)
        examples = attacker_examples(self.bench, split)
        with sess.attack_lock:  # the attack switches kernels on the shared model; one attack at a time
            try:
                noise = attack.run(sess.bank, examples, checkpoint=checkpoint, callback=step, progress=False, meta=meta)
            except _Stopped:
                noise = load_noise(checkpoint, sess.image_size)
                noise.meta["stopped_early"] = True
            finally:
                checkpoint.unlink(missing_ok=True)
        return noise

    def optimise_stream(
        self,
        sess: Session,
        eps_255: float,
        steps: int,
        denoiser: str,
        stealth_weight: float,
        stop: threading.Event,
        workdir: Path,
    ) -> Iterator[tuple[int, float] | Noise]:
        """`optimise` in a worker thread: yields (step, loss) as they come, then the Noise. Closing the
        generator (a page that went away) sets `stop`, so the worker ends after its current step."""
        updates: queue.Queue = queue.Queue()
        result: dict[str, Any] = {}

        def on_step(i: int, stats: dict[str, float]) -> None:
            updates.put((i, stats["loss"]))

        def work() -> None:
            try:
                result["noise"] = self.optimise(sess, eps_255, steps, denoiser, stealth_weight, on_step, stop, workdir)
            except Exception as err:  # raised again in the caller's thread, not lost in this one
                result["error"] = err
            finally:
                updates.put(None)

        threading.Thread(target=work, daemon=True).start()
        try:
            while (item := updates.get()) is not None:
                yield item
        finally:
            stop.set()
        if "error" in result:
            raise result["error"]
        yield result["noise"]

    # -- the embedding map ----------------------------------------------------------------
    def embedding_map(
        self, sess: Session, noise: Noise, denoiser: str = "gaussian", user_image: torch.Tensor | None = None
    ) -> list[dict[str, Any]]:
        """2-D UMAP points of clean, noisy and denoised embeddings of a bench sample (plus the user's image).

        The map of the bench sample is fitted once per (model, noise, denoiser) and cached; the user's
        image is placed on it with the fitted reducer, which takes milliseconds.
        """
        key = f"{fingerprint(noise)}:{check_denoiser(denoiser)}"
        with self._map_lock:  # one fit per key, even when the warm-up and a click ask at once
            if key not in sess.maps:
                sess.maps[key] = self._fit_map(sess, noise, denoiser)
                while len(sess.maps) > 8:
                    sess.maps.popitem(last=False)
            reducer, points = sess.maps[key]
        points = list(points)
        if user_image is not None:
            emb = _embeddings(sess, build_denoiser(denoiser), noise, user_image[None])
            xy = reducer.transform(emb)
            for (cx, cy), cond in zip(xy, ("clean", "noisy", "denoised"), strict=True):
                points.append({"x": float(cx), "y": float(cy), "condition": cond, "group": "your image", "who": "you"})
        return points

    def _fit_map(self, sess: Session, noise: Noise, denoiser: str) -> tuple[Any, list[dict[str, Any]]]:
        import umap  # noqa: PLC0415  (a slow import; only the map needs it)

        forget = list(self.bench.forget_ids)
        ids = (forget + self.bench.retain_ids)[:MAP_PEOPLE]
        examples = [Example(self.bench.items([pid], ("gen",), ("image",))[0], ph) for pid in ids for ph in MAP_PHOTOS]
        x = sess.bank.get(examples)
        assert x is not None
        emb = _embeddings(sess, build_denoiser(denoiser), noise, x)
        reducer = umap.UMAP(n_neighbors=15, min_dist=0.3, random_state=0, n_jobs=1)
        xy = reducer.fit_transform(emb)
        n = len(examples)
        points = []
        for c, cond in enumerate(("clean", "noisy", "denoised")):
            for i, ex in enumerate(examples):
                pid = ex.person_id
                points.append(
                    {
                        "x": float(xy[c * n + i, 0]),
                        "y": float(xy[c * n + i, 1]),
                        "condition": cond,
                        "group": self.bench.split_of(pid),
                        "who": f"#{pid} {self.bench.person(pid).name}, photo {ex.photo}",
                    }
                )
        return reducer, points

    # -- the batch tab --------------------------------------------------------------------
    def batch_report(
        self, sess: Session, noise: Noise, tasks: tuple[str, ...] = ("gen",), retain_people: int = 30
    ) -> tuple[dict[str, dict[str, dict[str, float]]], str]:
        """The recovery protocol for one given noise: clean, this noise and random noise of the same eps."""
        check_noise(sess, noise)
        split = self.split_of_noise(noise)
        groups = protocol_groups(self.bench, split, retain_people, tasks)  # type: ignore[arg-type]
        rand = ATTACKS.get("random")(sess.adapter, AttackConfig(eps=noise.eps)).run(sess.bank, [], progress=False)
        rec = recovery(sess.adapter, sess.bank, groups, {"clean": None, "noise": noise, "random": rand})
        tables = "\n".join(f"**{cond}**\n\n{markdown_table(rows)}" for cond, rows in rec.items())
        return rec, tables


class _Stopped(Exception):
    """Raised from the step callback to end an optimisation early."""


def check_question(question: str) -> str:
    q = " ".join((question or "").split())
    if not q:
        raise SuaError("the question is empty")
    if len(q) > MAX_QUESTION_CHARS:
        raise SuaError(f"the question has {len(q)} characters; keep it under {MAX_QUESTION_CHARS}")
    return q


def check_denoiser(name: str) -> str:
    if name not in DENOISERS:
        raise SuaError(f"unknown denoiser {name!r}; choose one of: {', '.join(DENOISERS.names())}")
    return name


def check_noise(sess: Session, noise: Noise) -> None:
    if noise.resolution != sess.image_size:
        raise SuaError(
            f"the noise is {noise.resolution} px but {sess.name} takes {sess.image_size} px; "
            "optimise a noise for this model"
        )


def fingerprint(noise: Noise) -> str:
    return hashlib.sha1(noise.delta.float().contiguous().numpy().tobytes()).hexdigest()[:16]


@torch.inference_mode()
def _embeddings(sess: Session, denoiser: torch.nn.Module, noise: Noise, x: torch.Tensor) -> np.ndarray:
    noisy = noise.apply(x)
    emb = sess.adapter.image_embeddings(torch.cat([x, noisy, denoiser(noisy)]))
    return emb.float().cpu().numpy()
