"""Results as files people can keep: answers and metrics as CSV and JSON, noises as safetensors + PNG.

Every file says which model, noise and denoiser produced it, and names no server path. Files are named by a short
hash of their bytes and go into one folder under the app's scratch directory, so the same answers asked again
reuse the same file instead of adding two per answer; `Scratch` removes files and folders once they grow old.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sua_demo.core.shipped import public_name
from sua_demo.engine import Noise, Story, amplified, atomic_write_bytes, noise_bytes, noise_digest, to_pil
from sua_demo.ui.shared.story_table import story_header, story_rows

MAX_AGE_S = 3600
FILES = "files"  # the one folder downloads are written to, under the scratch root
PICTURES = "pictures"  # the page's pictures, each written once (`Scratch.picture`)
HASH_CHARS = 12  # 48 bits: collisions among a server's downloads of an hour are out of reach


class Scratch:
    """A private temp folder for files offered as downloads; files and folders older than an hour are removed."""

    def __init__(self, root: Path | None = None, max_age_s: float = MAX_AGE_S) -> None:
        self.root = Path(root or tempfile.mkdtemp(prefix="sua_lab_"))
        self.root.mkdir(parents=True, exist_ok=True)
        self.max_age_s = max_age_s

    def folder(self) -> Path:
        """The folder downloads go to (the same on every call: files in it are named by their content)."""
        self.sweep()
        folder = self.root / FILES
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def picture(self, key: str, draw: Callable[[], Any]) -> str:
        """The PIL image `draw()` makes, as a PNG file named by `key` (what it is drawn from), drawn and written
        once and shown to every page that asks for it: given the image itself, Gradio encodes it again for each
        visitor (a WebP per picture, 14 on the page's first answer; with 30 visitors at once, a fifth of the
        server's time)."""
        folder = self.root / PICTURES
        path = folder / f"{key}.png"
        if path.is_file():
            path.touch()  # in use: the hourly sweep keeps it
        else:
            folder.mkdir(parents=True, exist_ok=True)
            buf = io.BytesIO()
            draw().save(buf, format="PNG")
            atomic_write_bytes(path, buf.getvalue())
        return str(path)

    def sweep(self) -> None:
        """Remove what has not been written for max_age_s: files at any depth, then folders left old and empty."""
        if self.root.is_dir():
            _sweep(self.root, time.time() - self.max_age_s)

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _sweep(folder: Path, cutoff: float) -> None:
    for entry in list(folder.iterdir()):
        try:
            if entry.is_symlink() or entry.is_file():
                if entry.lstat().st_mtime < cutoff:
                    entry.unlink(missing_ok=True)
            elif entry.is_dir():
                old = entry.stat().st_mtime < cutoff  # before the sweep inside touches it
                _sweep(entry, cutoff)
                if old and not any(entry.iterdir()):
                    entry.rmdir()  # the files folder too: folder() and every write make it again
        except OSError:  # another thread swept or wrote it meanwhile: the next sweep sees it as it is then
            continue


def safe_stem(name: str) -> str:
    """`name` (a model name or Hub id) as one part of a file name: letters, digits, '-', '_' and '.' only."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "model"


def content_name(stem: str, data: bytes, suffix: str) -> str:
    """`stem_<hash of data><suffix>`: the same bytes always get the same name, other bytes another."""
    return f"{stem}_{hashlib.sha256(data).hexdigest()[:HASH_CHARS]}{suffix}"


def write_named(folder: Path, stem: str, data: bytes, suffix: str) -> Path:
    """`data` in `folder` under its content name, written atomically; an existing file of that name holds the same
    bytes, and is written again so that its age starts afresh and no sweep removes it as it is offered."""
    path = folder / content_name(stem, data, suffix)
    atomic_write_bytes(path, data)
    return path


def provenance(story: Story, noise_label: str, denoiser: str, world: str = "") -> dict[str, Any]:
    """Which world, models, noise and denoiser made the answers, by names that may leave the server (no paths)."""
    vanilla, retrain = story.controls.get("vanilla"), story.controls.get("retrain")
    return {
        "world": world,
        "model": public_name(story.model),
        "before_unlearning": public_name(vanilla) if vanilla else vanilla,
        "retrain_control": public_name(retrain) if retrain else retrain,
        "noise": noise_label,
        "denoiser": denoiser,
        "image": story.who,
    }


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet reads as the start of a formula


def inert(cell: Any) -> Any:
    """A CSV cell a spreadsheet shows as text, never runs: a string starting like a formula (a question typed as
    `=HYPERLINK(...)`, `+cmd|...`, `@SUM(...)`) gets a leading apostrophe; a plain number such as "-2.9" is left
    as it is, since it cannot run."""
    if not isinstance(cell, str) or not cell.startswith(FORMULA_STARTS):
        return cell
    try:
        float(cell)
        return cell
    except ValueError:
        return "'" + cell


def _csv(rows: list[list[Any]]) -> str:
    buf = io.StringIO()
    csv.writer(buf).writerows([[inert(c) for c in row] for row in rows])
    return buf.getvalue()


def story_csv(story: Story, noise_label: str, denoiser: str, world: str = "") -> str:
    named = [[f"# {k}", v] for k, v in provenance(story, noise_label, denoiser, world).items()]
    return _csv([*named, story_header(), *story_rows(story)])


def story_json(story: Story, noise_label: str, denoiser: str, verdict: Any = None, world: str = "") -> str:
    rows = [{"question": r.question, "truth": r.truth, "answers": r.answers} for r in story.rows]
    out = {
        **provenance(story, noise_label, denoiser, world),
        "rows": rows,
        "pixels": story.pixels,
        "cosines": story.cosines,
    }
    if verdict is not None:
        out["verdict"] = {"photos": verdict.photos, "questions": verdict.questions, "correct": verdict.correct,
                          "brought_back": verdict.brought_back, "facts": verdict.facts}  # fmt: skip
    return json.dumps(out, indent=2, ensure_ascii=False)


def write_story(
    folder: Path, story: Story, noise_label: str, denoiser: str, verdict: Any = None, world: str = ""
) -> list[Path]:
    """The answers as sua_answers_<hash>.csv and .json: the same answers give the same files."""
    csv_text = story_csv(story, noise_label, denoiser, world)
    json_text = story_json(story, noise_label, denoiser, verdict, world)
    return [
        write_named(folder, "sua_answers", csv_text.encode("utf-8"), ".csv"),
        write_named(folder, "sua_answers", json_text.encode("utf-8"), ".json"),
    ]


def write_noise(folder: Path, noise: Noise, stem: str) -> list[Path]:
    """The noise as safetensors (what the app and CLI load) and its amplified PNG preview, both named by the
    noise's digest (`<stem>_<hash>.safetensors`, `<stem>_<hash>_amplified.png`), so that they pair up."""
    name = f"{stem}_{noise_digest(noise)[:HASH_CHARS]}"
    path = folder / f"{name}.safetensors"
    atomic_write_bytes(path, noise_bytes(noise))
    buf = io.BytesIO()
    to_pil(amplified(noise.delta, noise.eps)).save(buf, format="PNG")
    png = folder / f"{name}_amplified.png"
    atomic_write_bytes(png, buf.getvalue())
    return [path, png]


def table_csv(header: list[str], rows: list[list[Any]]) -> str:
    return _csv([header, *rows])
