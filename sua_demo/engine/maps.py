"""The engine's embedding map: clean, noisy and denoised embeddings of a bench sample in 2-D, fitted once per
(model, noise, denoiser), with a user's image placed on it."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from sua_demo.analysis.embedding_map import EmbeddingMap, fit_map
from sua_demo.attacks import Noise
from sua_demo.denoisers import build_denoiser
from sua_demo.engine.checks import check_denoiser
from sua_demo.engine.memo import digest
from sua_demo.engine.model_cache import LoadedModel
from sua_demo.engine.models import Models
from sua_demo.models.examples import Example

MAP_PHOTOS = (0, 5)  # one train and one held-out photo per person in the embedding map
MAP_PEOPLE = 33  # x 2 photos x 3 conditions ~ 200 points


class Maps(Models):
    """The embedding map, cached per key on the loaded model."""

    def embedding_map(
        self, sess: LoadedModel, noise: Noise, denoiser: str = "gaussian", user_image: torch.Tensor | None = None
    ) -> list[dict[str, Any]]:
        """2-D points of clean, noisy and denoised embeddings of a bench sample (plus the user's image).

        The map of the bench sample is fitted once per (model, noise, denoiser) and cached; the user's
        image is placed on it with the fitted reducer, once per image.
        """
        key = f"{digest(noise.delta)}:{check_denoiser(denoiser)}"
        with self._map_lock:  # one fit per key, even when the warm-up and a click ask at once
            if key not in sess.maps:
                sess.maps[key] = self._fit_map(sess, noise, denoiser)
                while len(sess.maps) > 8:
                    sess.maps.popitem(last=False)
            fitted: EmbeddingMap = sess.maps[key]
        points = list(fitted.points)
        if user_image is not None:  # a class opens the same photo at once: placed once (memo; fits are seeded)
            place = lambda: fitted.place(_embeddings(sess, build_denoiser(denoiser), noise, user_image[None]))  # noqa: E731
            points += self._placed.get((sess.name, key, digest(user_image)), place)
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


@torch.inference_mode()
def _embeddings(sess: LoadedModel, denoiser: torch.nn.Module, noise: Noise, x: torch.Tensor) -> np.ndarray:
    noisy = noise.apply(x)
    emb = sess.adapter.image_embeddings(torch.cat([x, noisy, denoiser(noisy)]))
    return emb.float().cpu().numpy()
