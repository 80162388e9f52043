"""A visitor's person: a made-up name, a few facts and their photos, made one more person of a bench (the only
one to forget), asked the same questions as the bench's people."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field, replace

import numpy as np
from PIL import Image

from sua_demo.core.config import BenchConfig
from sua_demo.core.errors import BadValueError
from sua_demo.dataset.faces import IDENTITY_ATTRIBUTES, sample_attributes
from sua_demo.dataset.profiles import FACT_POOLS, make_record
from sua_demo.dataset.records import Bench, Person
from sua_demo.dataset.synthetic import render_photos

MAX_NAME_CHARS = 40
MAX_FACT_CHARS = 30
PUNCTUATION = " '-"  # what a name or fact may hold beside letters


def _wordlike(text: str) -> bool:
    """Letters of any script (Renée, Zoë, Ngũgĩ, أحمد), with the marks that complete them, spaces, hyphens and
    apostrophes, starting with a letter."""
    return text[:1].isalpha() and all(
        c.isalpha() or c in PUNCTUATION or unicodedata.category(c).startswith("M") for c in text
    )


@dataclass
class Visitor:
    """Who the visitor teaches the model: `facts` holds every fact the bench asks about (birthplace,
    occupation, hobby, food); `photos` in the order given."""

    name: str
    facts: dict[str, str]
    photos: list[Image.Image] = field(default_factory=list)


def _clean(what: str, text: str, limit: int) -> str:
    text = unicodedata.normalize("NFC", " ".join(str(text).split()))  # "é" typed as e + accent is one letter
    if not text:
        raise BadValueError(f"{what} is empty; type one or press 'invent facts'")
    if len(text) > limit:
        raise BadValueError(f"{what} is {len(text)} characters; keep it to {limit}")
    if not _wordlike(text):
        raise BadValueError(f"{what} {text[:limit]!r} may hold letters, spaces, hyphens and apostrophes only")
    return text


def unknown_words(tokenizer, text: str) -> list[str]:  # noqa: ANN001 (any Hugging Face tokenizer)
    """Words this tokenizer can only read as unknown: the embedded model's vocabulary is the words of its bench,
    and a word it cannot read it can neither learn nor say. A subword tokenizer reads every word."""
    unk = tokenizer.unk_token_id
    if unk is None:
        return []
    return [w for w in text.split() if unk in tokenizer(w, add_special_tokens=False)["input_ids"]]


def check_name(name: str, tokenizer) -> str:  # noqa: ANN001
    """The name cleaned, if this model can learn and say it; else a `BadValueError` saying what to type (the page
    asks as the name is typed, before the run it would stop)."""
    name = _clean("the name", name, MAX_NAME_CHARS)
    words = unknown_words(tokenizer, name)
    if words:
        raise BadValueError(
            f"this model cannot say {words[0]!r} (the name): its vocabulary is its bench's words; use a name from "
            "'invent facts'"
        )
    return name


def check_visitor(name: str, facts: dict[str, str], tokenizer) -> tuple[str, dict[str, str]]:  # noqa: ANN001
    """The name and facts cleaned, every fact the bench asks about present, every word one the model can say;
    a `BadValueError` naming the first thing wrong and what to type instead."""
    name = check_name(name, tokenizer)
    unknown = sorted(set(facts) - set(FACT_POOLS))
    if unknown:
        raise BadValueError(f"unknown fact {unknown[0]!r}; the facts are {', '.join(FACT_POOLS)}")
    missing = [k for k in FACT_POOLS if k not in facts]
    if missing:
        raise BadValueError(f"no {missing[0]} given; give every fact ({', '.join(FACT_POOLS)}) or invent them")
    facts = {k: _clean(f"the {k}", facts[k], MAX_FACT_CHARS) for k in FACT_POOLS}
    for what, text in facts.items():
        words = unknown_words(tokenizer, text)
        if words:
            choices = ", ".join(sayable(tokenizer, FACT_POOLS[what])[:6])
            raise BadValueError(
                f"this model cannot say {words[0]!r} (the {what}): its vocabulary is its bench's words; use one of: "
                f"{choices}…"
            )
    return name, facts


def sayable(tokenizer, words: tuple[str, ...] | list[str]) -> list[str]:  # noqa: ANN001
    """The words of a list this model can say (all of them for a subword tokenizer)."""
    return [w for w in words if tokenizer is None or not unknown_words(tokenizer, w)]


def invent_visitor(bench: Bench, seed: int = 0, tokenizer=None) -> tuple[str, dict[str, str]]:  # noqa: ANN001
    """A name no person of the bench has (first and last names from the bench's own lists) and facts drawn from
    the bench's pools, so the retrain control's chance of guessing them is the bench's own; with `tokenizer`,
    only words that model can say."""
    rng = np.random.default_rng((seed, 29))
    taken = {p.name for p in bench.people + bench.holdout}
    first = sayable(tokenizer, sorted({p.name.split()[0] for p in bench.people}))
    last = sayable(tokenizer, sorted({p.name.split()[-1] for p in bench.people}))
    for _ in range(1000):
        name = f"{rng.choice(first)} {rng.choice(last)}"
        if name not in taken:
            break
    else:
        raise BadValueError("every name of the bench's lists is taken; type one")
    return name, {k: str(rng.choice(sayable(tokenizer, pool))) for k, pool in FACT_POOLS.items()}


def visitor_bench(bench: Bench, visitor: Visitor, n_teach: int) -> Bench:
    """The bench with the visitor as one more person after its people (their first `n_teach` photos taught, the
    rest held back), the only one to forget; the bench's people are all retain, the holdout people stay out."""
    if not 0 < n_teach < len(visitor.photos):
        raise BadValueError(f"teach on 1 to {len(visitor.photos) - 1} of {len(visitor.photos)} photos, not {n_teach}")
    vid = max(p.id for p in bench.people + bench.holdout) + 1
    names = [p.name for p in bench.people] + [visitor.name]
    facts = {"name": visitor.name, **visitor.facts}
    rng = np.random.default_rng((vid, 29))
    record = make_record(vid, facts, names, rng, np.random.default_rng((vid, 29, 1)))
    person = Person(vid, visitor.name, record, list(visitor.photos), n_teach, facts)
    return Bench([*bench.people, person], [vid], bench.source, bench.style, holdout=list(bench.holdout))


def procedural_photos(seed: int, bench_cfg: BenchConfig, n: int = 6) -> list[Image.Image]:
    """`n` photos of a new procedural person, drawn as the bench draws its people but from a seed stream no bench
    world or pretraining population uses (a (seed, 29, 2) tuple; worlds and the population draw from plain
    integers): a stand-in visitor for tests, benchmarks and demos, whom no shipped model has seen."""
    rng = np.random.default_rng((seed, 29, 2))
    over = IDENTITY_ATTRIBUTES if bench_cfg.photos == "varied" else None
    attributes = (sample_attributes(1, rng, over=over) if over else sample_attributes(1, rng))[0]
    photos, _ = render_photos(attributes, replace(bench_cfg, photos_per_person=n), rng)
    return photos
