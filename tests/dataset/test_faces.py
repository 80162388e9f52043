"""Tests for the procedural cartoon-face renderer used by the synthetic benchmark."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from PIL import Image

from sua_demo.dataset.faces import (
    ATTRIBUTES,
    JITTER_RANGES,
    PhotoJitter,
    contact_sheet,
    render_face,
    sample_attributes,
    sample_jitters,
)


def _person(**overrides: str) -> dict[str, str]:
    attrs = {name: values[0] for name, values in ATTRIBUTES.items()}
    attrs.update(overrides)
    return attrs


def _diff(a: Image.Image, b: Image.Image) -> float:
    return float(np.abs(np.asarray(a, dtype=np.int16) - np.asarray(b, dtype=np.int16)).mean())


def test_attribute_vocabulary() -> None:
    assert len(ATTRIBUTES) >= 10
    for name, values in ATTRIBUTES.items():
        assert name == name.lower() and name.replace("_", "").isalpha()
        assert 3 <= len(values) <= 8, name
        assert len(set(values)) == len(values), name
        for v in values:
            assert v == v.lower() and v.replace("_", "").isalpha(), (name, v)


def test_sample_attributes_pairwise_distinct() -> None:
    people = sample_attributes(120, np.random.default_rng(0))
    assert len(people) == 120
    for p in people:
        assert set(p) == set(ATTRIBUTES)
        assert all(p[k] in ATTRIBUTES[k] for k in p)
    for a, b in itertools.combinations(people, 2):
        assert sum(a[k] != b[k] for k in ATTRIBUTES) >= 4


def test_sample_attributes_deterministic_and_errors() -> None:
    assert sample_attributes(10, np.random.default_rng(3)) == sample_attributes(10, np.random.default_rng(3))
    assert sample_attributes(0, np.random.default_rng(0)) == []
    with pytest.raises(ValueError, match="min_differences"):
        sample_attributes(2, np.random.default_rng(0), min_differences=len(ATTRIBUTES) + 1)
    with pytest.raises(ValueError, match="could not sample"):
        # all attributes must differ pairwise: at most min(len(values)) = 3 such people exist
        sample_attributes(4, np.random.default_rng(0), min_differences=len(ATTRIBUTES))
    with pytest.raises(ValueError):
        sample_attributes(-1, np.random.default_rng(0))


def test_sample_jitters() -> None:
    jitters = sample_jitters(7, np.random.default_rng(0))
    assert len(jitters) == 7
    assert jitters[0] == PhotoJitter()
    assert len(set(jitters)) == 7
    for j in jitters[1:]:
        for field, (lo, hi) in JITTER_RANGES.items():
            assert lo <= getattr(j, field) <= hi
    assert sample_jitters(0, np.random.default_rng(0)) == []


def test_render_deterministic_rgb_size() -> None:
    person = sample_attributes(1, np.random.default_rng(5))[0]
    jitter = sample_jitters(2, np.random.default_rng(5))[1]
    a = render_face(person, jitter)
    b = render_face(dict(person), jitter)
    assert a.mode == "RGB" and a.size == (128, 128)
    assert np.array_equal(np.asarray(a), np.asarray(b))
    small = render_face(person, size=64)
    assert small.mode == "RGB" and small.size == (64, 64)


def test_people_differ_and_jitter_changes_pixels() -> None:
    people = sample_attributes(6, np.random.default_rng(1))
    neutral = [render_face(p) for p in people]
    for a, b in itertools.combinations(neutral, 2):
        assert _diff(a, b) > 12.0
    jitter = sample_jitters(2, np.random.default_rng(2))[1]
    same = render_face(people[0], jitter)
    assert _diff(same, neutral[0]) > 1.0
    assert np.array_equal(np.asarray(render_face(people[0], PhotoJitter())), np.asarray(neutral[0]))


def test_people_distinguishable_at_64px() -> None:
    """Nearest-neighbour on raw 64 px pixels should already recognise most jittered photos."""
    people = sample_attributes(12, np.random.default_rng(7))
    jitters = sample_jitters(3, np.random.default_rng(8))
    gallery = np.stack([np.asarray(render_face(p, size=64), dtype=np.float32).ravel() for p in people])
    hits = 0
    for i, p in enumerate(people):
        for j in jitters[1:]:
            probe = np.asarray(render_face(p, j, size=64), dtype=np.float32).ravel()
            hits += int(np.argmin(np.abs(gallery - probe).mean(axis=1)) == i)
    assert hits >= 0.75 * 2 * len(people)


def test_every_attribute_value_renders() -> None:
    base = render_face(_person(), size=32)
    for name, values in ATTRIBUTES.items():
        for value in values[1:]:
            img = render_face(_person(**{name: value}), size=32)
            assert img.size == (32, 32)
            assert _diff(img, base) > 0.0, (name, value)
    for yaw in (-1.0, 1.0):
        render_face(_person(), PhotoJitter(yaw=yaw, rotation=10, scale=0.88, dx=0.08, dy=-0.08), size=32)


def test_render_rejects_bad_inputs() -> None:
    with pytest.raises(ValueError, match="hair_colur"):
        render_face({**_person(), "hair_colur": "red"})
    with pytest.raises(ValueError, match="chartreuse"):
        render_face(_person(hair_colour="chartreuse"))
    incomplete = _person()
    del incomplete["hat"]
    with pytest.raises(ValueError, match="hat"):
        render_face(incomplete)
    with pytest.raises(ValueError, match="size"):
        render_face(_person(), size=15)
    with pytest.raises(ValueError):
        PhotoJitter(scale=0.0)
    with pytest.raises(ValueError):
        PhotoJitter(yaw=2.0)
    with pytest.raises(ValueError):
        PhotoJitter(dx=float("nan"))


def test_contact_sheet() -> None:
    images = [render_face(_person(), size=32)] * 7
    sheet = contact_sheet(images, labels=[f"p{i}" for i in range(7)], columns=3, cell=40)
    assert sheet.mode == "RGB"
    # 3 columns x 3 rows, 4 px padding, 14 px label strip per row
    assert sheet.size == (3 * (40 + 4) + 4, 3 * (40 + 14 + 4) + 4)
    bare = contact_sheet(images, columns=10, cell=40)
    assert bare.size == (7 * 44 + 4, 44 + 4)
    with pytest.raises(ValueError):
        contact_sheet([])
    with pytest.raises(ValueError):
        contact_sheet(images, labels=["only one"])
    with pytest.raises(ValueError):
        contact_sheet(images, columns=0)
