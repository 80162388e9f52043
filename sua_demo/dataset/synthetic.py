"""The seeded fictitious-people benchmark: faces, profiles, questions and the forget/retain split."""

from __future__ import annotations

import dataclasses
from functools import lru_cache

import numpy as np

from sua_demo.config import BenchConfig
from sua_demo.dataset.faces import render_face, sample_attributes, sample_jitters
from sua_demo.dataset.profiles import make_record, sample_facts, sample_names
from sua_demo.dataset.records import Bench, Person
from sua_demo.errors import BadValueError


def forget_count(n_people: int, fraction: float) -> int:
    if not 0 < fraction < 1:
        raise BadValueError(f"forget fraction must be between 0 and 1, got {fraction}")
    return max(1, round(n_people * fraction))


def build_bench(cfg: BenchConfig | None = None) -> Bench:
    """Same config, same benchmark, pixel for pixel (the checkpoints depend on it)."""
    cfg = cfg or BenchConfig()
    return _build(*dataclasses.astuple(cfg))


@lru_cache(maxsize=4)
def _build(*fields: object) -> Bench:
    cfg = BenchConfig(*fields)  # type: ignore[arg-type]
    if cfg.n_people < 4:
        raise BadValueError("a benchmark needs at least 4 people (multiple choice has four options)")
    if not 0 < cfg.train_photos < cfg.photos_per_person:
        raise BadValueError("train_photos must leave at least one held-out photo per person")
    rng = np.random.default_rng(cfg.seed)
    attributes = sample_attributes(cfg.n_people, rng)
    names = sample_names(cfg.n_people, rng)
    facts = sample_facts(names, rng)
    people = []
    for i in range(cfg.n_people):
        pid = i + 1  # MLLMU-Bench IDs start at 1
        jitters = sample_jitters(cfg.photos_per_person, rng)
        photos = [render_face(attributes[i], j, size=cfg.image_size) for j in jitters]
        record = make_record(pid, facts[i], names, rng)
        people.append(Person(pid, names[i], record, photos, cfg.train_photos, facts[i], attributes[i]))
    n_forget = forget_count(cfg.n_people, cfg.forget_fraction)
    # One fixed order, so forget_5 is inside forget_10 inside forget_15, as in MLLMU-Bench.
    order = rng.permutation(cfg.n_people)
    forget = sorted(int(x) + 1 for x in order[:n_forget])
    return Bench(people, forget)
