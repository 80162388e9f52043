"""A visitor's photos, read by the image rules every upload follows, then screened for what would leave nothing
to test on: too few, or near-copies of each other (a held-back photo that repeats a taught one tests nothing)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from sua_demo.core.errors import SuaError
from sua_demo.core.images import read_image

MIN_PHOTOS = 3  # two to teach and fit on, one held back to test on
MAX_PHOTOS = 8
# A face the models can learn from: the worlds' photos are 64 and 112 pixels, so a smaller image is upscaled from
# less than one of them and carries too little of the face to teach or to test.
MIN_SIDE = 64
# Two photos whose 32x32 grey thumbnails differ by less than this (mean absolute difference, 0-255) are the same
# shot: a re-saved or re-sized copy moves it by 1-3, the bench's own photos of one person by 15 or more.
NEAR_DUPLICATE = 4.0


def _thumbnail(image: Image.Image) -> np.ndarray:
    return np.asarray(image.convert("L").resize((32, 32), Image.Resampling.BILINEAR), dtype=np.float32)


def check_size(image: Image.Image) -> Image.Image:
    """The image, or a `SuaError` saying why it is too small to hold a face."""
    if min(image.size) < MIN_SIDE:
        w, h = image.size
        raise SuaError(f"it is {w}×{h} pixels; a face needs at least {MIN_SIDE} pixels on its shorter side")
    return image


def usable_photos(sources: list[str | Path | bytes | Image.Image]) -> tuple[list[Image.Image], list[str]]:
    """The photos that can be used (RGB, in the order given) and one note per photo set aside; a `SuaError`
    that says what to add when fewer than `MIN_PHOTOS` distinct ones are left."""
    if len(sources) > MAX_PHOTOS:
        raise SuaError(f"{len(sources)} photos given; use at most {MAX_PHOTOS}")
    kept: list[Image.Image] = []
    thumbs: list[tuple[int, np.ndarray]] = []  # (the photo's number as given, its thumbnail)
    notes: list[str] = []
    for i, source in enumerate(sources, start=1):
        try:
            image = check_size(source.convert("RGB") if isinstance(source, Image.Image) else read_image(source)[0])
        except SuaError as err:
            notes.append(f"photo {i} set aside: {err}")
            continue
        thumb = _thumbnail(image)
        twin = next((j for j, t in thumbs if float(np.abs(t - thumb).mean()) < NEAR_DUPLICATE), None)
        if twin is not None:
            notes.append(f"photo {i} set aside: it is a near-copy of photo {twin}")
            continue
        kept.append(image)
        thumbs.append((i, thumb))
    if len(kept) < MIN_PHOTOS:
        why = "; ".join(notes) or "too few photos"
        raise SuaError(f"{len(kept)} usable photo(s); give at least {MIN_PHOTOS} different photos of the face ({why})")
    return kept, notes
