"""The engine's people and roles: who is in the bench, what a person's badge means for a noise, their photos and
questions."""

from __future__ import annotations

import torch
from PIL import Image

from sua_demo.attacks import Noise
from sua_demo.core.errors import BadValueError, UnknownNameError
from sua_demo.dataset.profiles import IMAGE_QUESTIONS
from sua_demo.dataset.records import Person
from sua_demo.engine.model_cache import LoadedModel
from sua_demo.engine.models import Models
from sua_demo.eval.recovery import AttackSplit, attack_split


class People(Models):
    """People, roles, photos and questions of the served world's bench."""

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
