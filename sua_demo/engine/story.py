"""The engine's stories and verdicts: one image under every condition of the protocol, a person's verdict over
their photos, and a model's guided examples."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from sua_demo.analysis.examples import guided_examples
from sua_demo.analysis.verdict import Verdict, verdict
from sua_demo.attacks import Noise
from sua_demo.core.errors import SuaError
from sua_demo.core.images import amplified, heatmap
from sua_demo.denoisers import build_denoiser
from sua_demo.engine.answers import fold, mark
from sua_demo.engine.checks import check_denoiser, check_noise, check_question
from sua_demo.engine.memo import digest
from sua_demo.engine.model_cache import LoadedModel
from sua_demo.engine.people import People
from sua_demo.eval.person import person_answers, person_examples
from sua_demo.eval.stealth import embedding_cosines, pixel_metrics

COLUMNS = ("vanilla", "clean", "delta", "random", "retrain_delta", "denoised")


@dataclass
class StoryRow:
    question: str
    truth: str | None  # None for an uploaded photo or a free question
    answers: dict[str, str]  # column -> answer; a column whose model is not available is absent

    def reads(self, column: str) -> tuple[str, str]:
        """(the answer as the page shows it, its mark): folded when degenerate, marked against the truth."""
        answer = self.answers[column]
        return fold(answer) or "(empty)", mark(answer, self.truth)


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


class Stories(People):
    """The story of one photo and the verdict over a person's photos."""

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
        denoised, and the retrain control + delta; with the pictures and how visible delta is. Computed once per
        image, questions, noise, denoiser and models (`memo.Memo`): a class asking for the same photo waits for one
        computation, not for thirty."""
        if not questions:
            raise SuaError("ask at least one question")
        qs = [check_question(q) for q, _ in questions]
        names = (vanilla.name if vanilla else None, retrain.name if retrain else None)
        truths = tuple(t for _, t in questions)
        key = (sess.name, digest(x), tuple(qs), truths, digest(noise.delta), noise.eps, denoiser, names, who)
        args = (sess, x, qs, questions, noise, denoiser, vanilla, retrain, who)
        return self._stories.get(key, lambda: self._story(*args))

    def _story(
        self,
        sess: LoadedModel,
        x: torch.Tensor,
        qs: list[str],
        questions: list[tuple[str, str | None]],
        noise: Noise,
        denoiser: str,
        vanilla: LoadedModel | None,
        retrain: LoadedModel | None,
        who: str,
    ) -> Story:
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
        """Over all of a person's photos: right answers per condition, and how many delta brought back; computed
        once per person, noise and models (`memo.Memo`)."""
        key = (sess.name, pid, digest(noise.delta), noise.eps, vanilla.name if vanilla else None,
               retrain.name if retrain else None)  # fmt: skip
        return self._verdicts.get(key, lambda: self._person_verdict(sess, pid, noise, vanilla, retrain))

    def _person_verdict(
        self,
        sess: LoadedModel,
        pid: int,
        noise: Noise,
        vanilla: LoadedModel | None,
        retrain: LoadedModel | None,
    ) -> Verdict:
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


def _ask(sess: LoadedModel, views: dict[str, torch.Tensor], questions: list[str]) -> dict[str, list[str]]:
    """Every question on every view in one batched generate: {view name: answers}."""
    k = len(questions)
    images = torch.cat(list(views.values())).repeat_interleave(k, 0)
    answers = sess.adapter.generate(images, questions * len(views))
    return {name: answers[i * k : (i + 1) * k] for i, name in enumerate(views)}
