"""The seeded fictitious-people benchmark: faces, profiles, questions and the forget/retain split."""

from __future__ import annotations

import dataclasses
from functools import lru_cache

import numpy as np
from PIL import Image

from sua_demo.core.config import POPULATION_SEEDS, BenchConfig
from sua_demo.core.errors import BadValueError
from sua_demo.dataset.faces import (
    IDENTITY_ATTRIBUTES,
    VARIED_RANGES,
    render_face,
    sample_attributes,
    sample_jitters,
    vary_photo,
)
from sua_demo.dataset.profiles import make_record, sample_facts, sample_names
from sua_demo.dataset.records import Bench, Person

ANSWERS_STREAM = 7  # the truth-ratio answers' own seed stream, added after the shipped worlds were drawn
VALIDATION_STREAM = 11  # the stopping rule's photos: their own stream, so the bench stays pixel for pixel


def forget_count(n_people: int, fraction: float) -> int:
    if not 0 < fraction < 1:
        raise BadValueError(f"forget fraction must be between 0 and 1, got {fraction}")
    return max(1, round(n_people * fraction))


def build_bench(cfg: BenchConfig | None = None) -> Bench:
    """Same config, same benchmark, pixel for pixel (the checkpoints depend on it)."""
    cfg = cfg or BenchConfig()
    return _build(*dataclasses.astuple(cfg))


def render_photos(
    attributes: dict[str, str], cfg: BenchConfig, rng: np.random.Generator
) -> tuple[list[Image.Image], list[dict[str, str]]]:
    """A person's photos and each photo's attributes: the first world varies framing and lighting only; the
    varied style also each photo's light, background, expression and hat (the first photo stays the person's)."""
    if cfg.photos == "first":
        jitters = sample_jitters(cfg.photos_per_person, rng)
        return [render_face(attributes, j, size=cfg.image_size) for j in jitters], []
    if cfg.photos != "varied":
        raise BadValueError(f"photos must be 'first' or 'varied', not {cfg.photos!r}")
    jitters = sample_jitters(cfg.photos_per_person, rng, VARIED_RANGES)
    looks = [attributes] + [vary_photo(attributes, rng) for _ in jitters[1:]]
    return [render_face(a, j, size=cfg.image_size) for a, j in zip(looks, jitters, strict=True)], looks


def with_validation_photos(bench: Bench, cfg: BenchConfig) -> Bench:
    """The same bench with one more photo per person, drawn like its held-out photos from a seed stream of its own.

    A stopping rule that reads train photos cannot see whether unlearning generalises; one that reads held-out
    photos would tune to the photos every figure is reported on. These photos are neither: nothing trains on
    them, no report reads them (the "validation" split), and the bench's own photos are unchanged."""
    if cfg.photos != "varied":
        raise BadValueError("validation photos are drawn for the varied (faithful) bench only")
    people = []
    for person in bench.people + bench.holdout:
        rng = np.random.default_rng((cfg.seed, person.id, VALIDATION_STREAM))
        jitter = sample_jitters(2, rng, VARIED_RANGES)[1]
        look = vary_photo(person.attributes, rng)
        photo = render_face(look, jitter, size=cfg.image_size)
        people.append(
            dataclasses.replace(
                person,
                photos=[*person.photos, photo],
                photo_attributes=[*person.photo_attributes, look],
                n_validation_photos=person.n_validation_photos + 1,
            )
        )
    n = len(bench.people)
    return dataclasses.replace(bench, people=people[:n], holdout=people[n:])


@lru_cache(maxsize=4)
def _build(*fields: object) -> Bench:
    cfg = BenchConfig(*fields)  # type: ignore[arg-type]
    if cfg.seed >= POPULATION_SEEDS:
        raise BadValueError(
            f"bench seeds stay below {POPULATION_SEEDS}: the seeds above draw the pretraining population"
        )
    if cfg.n_people < 4:
        raise BadValueError("a benchmark needs at least 4 people (multiple choice has four options)")
    if not 0 < cfg.train_photos < cfg.photos_per_person:
        raise BadValueError("train_photos must leave at least one held-out photo per person")
    rng = np.random.default_rng(cfg.seed)
    total = cfg.n_people + cfg.holdout_people
    over = IDENTITY_ATTRIBUTES if cfg.photos == "varied" else None
    attributes = sample_attributes(total, rng, over=over) if over else sample_attributes(total, rng)
    names = sample_names(total, rng)
    facts = sample_facts(names, rng)
    people = []
    for i in range(total):
        pid = i + 1  # MLLMU-Bench IDs start at 1; holdout people come after the bench's
        photos, looks = render_photos(attributes[i], cfg, rng)
        record = make_record(pid, facts[i], names, rng, np.random.default_rng((cfg.seed, pid, ANSWERS_STREAM)))
        people.append(Person(pid, names[i], record, photos, cfg.train_photos, facts[i], attributes[i], looks))
    holdout, people = people[cfg.n_people :], people[: cfg.n_people]
    n_forget = forget_count(cfg.n_people, cfg.forget_fraction)
    # One fixed order, so forget_5 is inside forget_10 inside forget_15, as in MLLMU-Bench.
    order = rng.permutation(cfg.n_people)
    forget = sorted(int(x) + 1 for x in order[:n_forget])
    return Bench(people, forget, holdout=holdout)
