"""Atomic file writes: an artefact is either complete or absent, never half-written."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def _umask() -> int:
    """The process umask, read without changing it where Linux shows it (os.umask can only read by setting it,
    which would race other threads creating files)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _umask()


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes it private; the file should read like any other
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


COMPACT_OVER = 50_000  # characters: a longer report is written on one line


def write_json(path: str | Path, obj: Any) -> None:
    """Indented for a person to read, unless it runs past COMPACT_OVER characters: a report that long is read by
    programs (its .md beside it is for people), and one line keeps checkpoints/ within its budget (-40 %)."""
    text = json.dumps(obj, indent=2, sort_keys=False)
    if len(text) > COMPACT_OVER:
        text = json.dumps(obj, separators=(",", ":"), sort_keys=False)
    atomic_write_text(Path(path), text + "\n")


def read_json(path: str | Path, what: str) -> Any:
    """A JSON file the user named, or one line saying why it cannot be read (missing, not text, not JSON, nested
    past what a parser should follow); `what` says what the file should be, e.g. "an audit from `sua audit`"."""
    from sua_demo.core.errors import MissingFileError, SuaError

    path = Path(path)
    if not path.is_file():
        raise MissingFileError(f"no file at {path}: expected {what}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise SuaError(f"{path.name} is not a text file: expected {what}") from None
    except json.JSONDecodeError as err:
        raise SuaError(f"{path.name} is not JSON ({err.msg}, line {err.lineno}): expected {what}") from None
    except RecursionError:
        raise SuaError(f"{path.name} nests deeper than any file of ours: expected {what}") from None
    except OSError as err:
        raise SuaError(f"{path.name} could not be read ({err.strerror or 'an I/O error'}): expected {what}") from None
