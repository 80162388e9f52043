"""The tower's pretraining population: procedural people drawn from their own seed stream, so no bench world
(whose seeds are all below config.POPULATION_SEEDS) has any of their photos. Each photo comes with a caption of
what is visible in it, CLIP's kind of pair."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from PIL import Image

from sua_demo.core.config import TowerConfig
from sua_demo.dataset.faces import ATTRIBUTES, VARIED_RANGES, render_face, sample_attributes, sample_jitters, vary_photo

# The caption's words per attribute, in this order: "<value> <word>" (e.g. "curly hair"), a caption of 13 pairs.
CAPTION_WORDS: dict[str, str] = {
    "skin_tone": "skin",
    "face_shape": "face",
    "hair_colour": "hair",
    "hair_style": "cut",
    "eye_colour": "eyes",
    "glasses": "glasses",
    "beard": "beard",
    "mouth": "mouth",
    "clothing_colour": "clothes",
    "clothing": "top",
    "hat": "hat",
    "earrings": "earrings",
    "background": "background",
}


def caption(attributes: dict[str, str]) -> str:
    """What is visible in a photo, as words: 'pale skin oval face red hair curly cut ... dots background'."""
    return " ".join(f"{attributes[a]} {word}" for a, word in CAPTION_WORDS.items())


def caption_vocabulary() -> list[str]:
    """Every word a caption can hold (the same for every population and bench)."""
    words = {v for values in ATTRIBUTES.values() for v in values} | set(CAPTION_WORDS.values())
    return sorted(words)


@dataclass(frozen=True)
class Population:
    photos: list[Image.Image]
    attributes: list[dict[str, str]]  # each photo's own (person's identity plus that photo's background, ...)
    person: list[int]  # whose photo it is, 0-based


def build_population(cfg: TowerConfig) -> Population:
    return _build(cfg.people, cfg.photos, cfg.seed, cfg.image_size)


@lru_cache(maxsize=2)
def _build(people: int, photos: int, seed: int, size: int) -> Population:
    rng = np.random.default_rng(seed)
    out = Population([], [], [])
    for i, person in enumerate(sample_attributes(people, rng, min_differences=0)):
        for jitter in sample_jitters(photos + 1, rng, VARIED_RANGES)[1:]:  # no neutral "passport" photo
            looks = vary_photo(person, rng)
            out.photos.append(render_face(looks, jitter, size=size))
            out.attributes.append(looks)
            out.person.append(i)
    return out
