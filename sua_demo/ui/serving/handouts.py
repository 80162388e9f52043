"""Files the API hands a caller by a link of our own: `<app>/gradio_api/noise/<token>/<name>.safetensors`.

Gradio serves a file only by its path (`/gradio_api/file=/tmp/…/sua-…/<hash>/noise.safetensors`), so its link tells
every caller where the server keeps its files. The δ `optimise` returns is the one file a caller needs back; it
gets a random token instead, which the app's front door (`launch.ClosedRoutes`) answers, and which `noise_file`
takes back (`gradio_parts`). The file is copied into Gradio's upload folder, the one place Gradio reads a caller's
file from, and is swept with it (`launch.CACHE_SWEEP`: after an hour); a token lives as long as its file."""

from __future__ import annotations

import re
import secrets
import shutil
import threading
from collections import OrderedDict
from pathlib import Path

ROUTE = "/gradio_api/noise/"
LINK = re.compile(r"/gradio_api/noise/(?P<token>[A-Za-z0-9_-]{16,64})(?:/[^/?#]*)?$")
KEPT = 512  # tokens remembered (the oldest forgotten first): one server's optimise runs over days


class Handouts:
    """Token → file, for the files this server handed out by link."""

    def __init__(self, kept: int = KEPT) -> None:
        self._files: OrderedDict[str, Path] = OrderedDict()
        self._lock = threading.Lock()
        self._kept = kept

    def hand_out(self, path: str | Path, folder: str | Path) -> str:
        """A copy of `path` in `folder` under a new token; the link's path part (route, token, the file's name)."""
        token = secrets.token_urlsafe(18)
        copy = Path(folder) / secrets.token_hex(16) / Path(path).name
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, copy)
        with self._lock:
            self._files[token] = copy
            while len(self._files) > self._kept:
                self._files.popitem(last=False)
        return f"{ROUTE}{token}/{Path(path).name}"

    def find(self, link: str) -> Path | None:
        """The file a link (a URL or its path) names, if this server handed it out and it still exists."""
        said = LINK.search(link.split("?", 1)[0].split("#", 1)[0])
        if said is None:
            return None
        with self._lock:
            path = self._files.get(said["token"])
        return path if path is not None and path.is_file() else None


HANDOUTS = Handouts()
