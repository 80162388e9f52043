"""*Your face*'s photo intake: each uploaded file read into the session's memory by the image rules, then deleted
at once (only a file uploaded to this server, never one it made); thumbnails are inline images in the page."""

from __future__ import annotations

import base64
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PIL import Image

from sua_demo.core.errors import SuaError
from sua_demo.engine import (
    MAX_PHOTOS,
    MIN_PHOTOS,
    check_size,
    read_image,
)
from sua_demo.ui.shared.face_sessions import FaceSession


def _paths(files: Any) -> list[str]:
    if not files:
        return []
    items = files if isinstance(files, list) else [files]
    return [str(getattr(f, "name", f)) for f in items]


def add_photos(visitor: FaceSession, files: Any, delete: Callable[[str], None]) -> tuple[str, str]:
    """Read each file into memory by the image rules, then hand it to `delete`, which removes it only if it was
    uploaded (never a file the server made and serves to others); (thumbnails, note)."""
    notes = []
    for path in _paths(files):
        shown = Path(path).name[:80]  # the file's own name, never the folder it was uploaded to
        try:
            if len(visitor.photos) >= MAX_PHOTOS:
                notes.append(f"set aside {shown}: {MAX_PHOTOS} photos is the most a run uses")
                continue
            image, _ = read_image(path)
            visitor.photos.append(check_size(image.convert("RGB")))
        except SuaError as err:
            notes.append(f"set aside {shown}: {err}")
        finally:
            delete(path)  # the server keeps no copy of the photo
    return thumbnails_html(visitor.photos), "; ".join(notes)


def clear_photos(visitor: FaceSession) -> tuple[str, str]:
    visitor.photos.clear()
    visitor.report = None
    return thumbnails_html([]), ""


def thumbnails_html(photos: list[Image.Image]) -> str:
    """The photos as inline images inside the page: never a file on the server, never a URL another page could
    fetch."""
    if not photos:
        return f"<p class='controls'>No photos yet: add {MIN_PHOTOS} to {MAX_PHOTOS}.</p>"
    tiles = []
    for i, photo in enumerate(photos, start=1):
        buf = io.BytesIO()
        thumb = photo.copy()
        thumb.thumbnail((96, 96))
        thumb.save(buf, format="PNG")
        data = base64.b64encode(buf.getvalue()).decode("ascii")
        tiles.append(f"<img src='data:image/png;base64,{data}' alt='your photo {i}' width='96' height='96'>")
    row = "style='display:flex;flex-wrap:wrap;gap:6px'"
    return (
        f"<div class='face-thumbs' {row} aria-label='your photos'>{''.join(tiles)}</div><p>{len(photos)} photo(s)</p>"
    )
