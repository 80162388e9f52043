"""Bounded disk for a public server. Gradio keeps every upload (up to the 20 MB a file it accepts) until its
hourly cache sweep, and its sweep leaves the folder of each file it deletes behind; on a Space visited all day
both add up. The sweeper here removes uploads after `UPLOAD_TTL_S`, the oldest first whenever they pass
`UPLOAD_BUDGET` bytes, and the empty folders and empty temporary files left in Gradio's cache. And each server
keeps its uploads and cache in a folder of its own, removed when it stops, or by the next server to start when it
was killed before it could."""

from __future__ import annotations

import atexit
import fcntl
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import MutableMapping
from pathlib import Path
from typing import IO, Any

log = logging.getLogger(__name__)

UPLOAD_TTL_S = 600.0  # an upload is used within seconds of arriving; a noise file kept in the page, for ten minutes
UPLOAD_BUDGET = 200 * 2**20  # bytes of uploads held at once, at most ten files of the largest size accepted
SWEEP_EVERY_S = 30.0
LITTER_AGE_S = 60.0  # an empty folder or file younger than this may be an upload on its way in


class UploadSweeper:
    """Sweeps `folder` (Gradio's cache) of the uploads `blocks` recorded, and of empty litter, every SWEEP_EVERY_S."""

    def __init__(self, blocks: Any, folder: str | Path, ttl: float = UPLOAD_TTL_S, budget: int = UPLOAD_BUDGET):
        self.blocks, self.folder, self.ttl, self.budget = blocks, Path(folder), ttl, budget

    def sweep(self) -> int:
        """One pass; how many files and folders it removed."""
        now = time.time()
        uploads = []
        for name in list(self.blocks.upload_file_set):
            try:
                stat = Path(name).stat()
            except OSError:
                self.blocks.upload_file_set.discard(name)  # already gone (read and deleted by Your face)
                getattr(self.blocks, "upload_owner", {}).pop(name, None)
                continue
            uploads.append((stat.st_mtime, stat.st_size, name))
        uploads.sort()
        held = sum(size for _, size, _ in uploads)
        removed = 0
        for mtime, size, name in uploads:
            if now - mtime <= self.ttl and held <= self.budget:
                break  # the rest are newer
            held -= size
            removed += remove_upload(self.blocks, name)
        return removed + self._litter(now)

    def _litter(self, now: float) -> int:
        """Empty temporary files and empty folders directly in the cache, older than LITTER_AGE_S."""
        removed = 0
        if not self.folder.is_dir():
            return 0
        for entry in self.folder.iterdir():
            try:
                stat = entry.stat()
                if now - stat.st_mtime < LITTER_AGE_S:
                    continue
                if entry.is_dir() and _gradio_folder(entry.name) and not any(entry.iterdir()):
                    entry.rmdir()
                    removed += 1
                elif entry.is_file() and entry.name.startswith("tmp") and stat.st_size == 0:
                    entry.unlink()
                    removed += 1
            except OSError:
                continue  # taken or filled meanwhile
        return removed

    def start(self) -> UploadSweeper:
        threading.Thread(target=self._run, name="sua-upload-sweep", daemon=True).start()
        return self

    def _run(self) -> None:
        while True:
            time.sleep(SWEEP_EVERY_S)
            try:
                if n := self.sweep():
                    log.info("upload sweep: %d files or folders removed", n)
            except Exception as err:  # a sweep that fails must not end the server; the next one tries again
                log.warning("upload sweep failed: %s", type(err).__name__)


def remove_upload(blocks: Any, path: str) -> bool:
    """Remove one upload `blocks` recorded, forget it, and remove its folder if that is left empty (Gradio makes a
    folder per upload); whether a file was removed."""
    blocks.upload_file_set.discard(path)
    getattr(blocks, "upload_owner", {}).pop(path, None)
    target = Path(path)
    try:
        target.unlink()
    except OSError:
        return False
    try:
        target.parent.rmdir()
    except OSError:
        pass  # another file is still in it
    return True


def _gradio_folder(name: str) -> bool:
    """Gradio names each cached file's folder by the file's 64-hex-digit hash; its other folders are its own."""
    return len(name) == 64 and all(c in "0123456789abcdef" for c in name)


OWNED = "sua-"  # the prefix of a server's own upload folder, inside Gradio's
_held: list[IO[str]] = []  # the lock on this process's folder, held open while it lives


def own_upload_folder(env: MutableMapping[str, str] = os.environ) -> Path:
    """A folder of this server's own inside Gradio's upload folder (GRADIO_TEMP_DIR, else <tmp>/gradio), made the
    one Gradio uses, locked while the process lives and removed when it exits; the folders of servers that died
    without removing theirs (a kill, a crash, a machine stopped) are removed first. Gradio's sweep and ours know
    only the uploads of the process that received them: a server stopped within ten minutes of a visitor's photo
    left it on disk for good. Call it before the Blocks are built: Gradio reads the folder then."""
    root = Path(env.get("GRADIO_TEMP_DIR") or Path(tempfile.gettempdir()) / "gradio")
    root.mkdir(parents=True, exist_ok=True)
    removed = remove_abandoned(root)
    if removed:
        log.info("removed %d upload folders left by servers that are gone", removed)
    folder = Path(tempfile.mkdtemp(prefix=OWNED, dir=root))
    lock = (folder / ".lock").open("w")
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    _held.append(lock)
    atexit.register(shutil.rmtree, folder, True)
    env["GRADIO_TEMP_DIR"] = str(folder)
    import gradio.mcp  # its folder for files sent as base64 was read when it was imported

    gradio.mcp.DEFAULT_TEMP_DIR = str(folder)
    return folder


def remove_abandoned(root: Path) -> int:
    """Remove every server folder in `root` whose lock nobody holds (its server is gone); how many."""
    removed = 0
    for folder in root.glob(OWNED + "*"):
        try:
            with (folder / ".lock").open("a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held by a live server: BlockingIOError
                shutil.rmtree(folder, ignore_errors=True)
                removed += 1
        except OSError:
            continue  # alive, or not a folder of ours
    return removed
