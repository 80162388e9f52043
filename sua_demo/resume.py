"""A long build's state on disk, so that running the same command again goes on from its last checkpoint
(a session may be stopped at any moment). One file per build, written atomically: a stop mid-write leaves the
previous checkpoint whole."""

from __future__ import annotations

import io
import logging
import time
from pathlib import Path
from typing import Any

import torch

from sua_demo.io import atomic_write_bytes
from sua_demo.machine import cpu_model

log = logging.getLogger(__name__)


class Checkpointed:
    """`state()` is None on a fresh start, else what the last `save` stored; `save` also adds up the wall time
    the build has taken over all its runs, which `seconds` reports."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._started = time.time()
        self._loaded = self.state()
        self._before = float(self._loaded["seconds"]) if self._loaded else 0.0
        if self._loaded:
            log.info("%s: resuming at step %s (%.0f s so far)", self.path, self._loaded.get("step"), self._before)

    def state(self) -> dict[str, Any] | None:
        if not self.path.is_file():
            return None
        return torch.load(self.path, map_location="cpu", weights_only=False)

    @property
    def resumed(self) -> dict[str, Any] | None:
        return self._loaded

    @property
    def seconds(self) -> float:
        return self._before + time.time() - self._started

    def save(self, **state: Any) -> None:
        buffer = io.BytesIO()
        torch.save({**state, "seconds": self.seconds, "cpu": cpu_model()}, buffer)
        atomic_write_bytes(self.path, buffer.getvalue())
