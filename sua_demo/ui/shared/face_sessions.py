"""*Your face*'s memory on the server: each browser session's photos and last report, keyed by the session, never
on disk and never in Gradio's session state, dropped when the tab closes or after `IDLE_SECONDS` without use. The
process's state holds the store (`state.AppState.faces`); the tab (`ui/your_face`) fills and runs it."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from PIL import Image

from sua_demo.engine import EnrolReport

IDLE_SECONDS = 30 * 60


@dataclass
class FaceSession:
    """One browser session's photos and its last report; `busy` refuses a second run while one runs; `queued` is
    set at the click, so that a Stop pressed while the run waits for the heavy-job slot keeps it from starting."""

    photos: list[Image.Image] = field(default_factory=list)
    report: EnrolReport | None = None
    busy: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)
    queued: bool = False
    in_line: bool = False  # its run waits in the line of heavy jobs (a Stop then takes it out of the line)
    used: float = field(default_factory=time.monotonic)


def forget(visitor: FaceSession | None) -> None:
    """The session ended or sat idle: its photos and report go, and a run of it stops within one pass."""
    if visitor is not None:
        visitor.photos.clear()
        visitor.report = None
        visitor.stop.set()


class FaceSessions:
    """Every browser session's FaceSession, by session key. `drop` at the tab's unload; `get` also drops the
    sessions idle for more than `idle` seconds (a tab whose unload never came: a crashed browser, a lost network)."""

    def __init__(self, idle: float = IDLE_SECONDS) -> None:
        self.idle = idle
        self._by_key: dict[str, FaceSession] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> FaceSession:
        now = time.monotonic()
        with self._lock:
            stale = [k for k, s in self._by_key.items() if now - s.used > self.idle and not s.busy.locked()]
            for k in stale:
                forget(self._by_key.pop(k))
            visitor = self._by_key.setdefault(key, FaceSession())
            visitor.used = now
            return visitor

    def drop(self, key: str) -> None:
        with self._lock:
            forget(self._by_key.pop(key, None))

    def keys(self) -> set[str]:
        with self._lock:
            return set(self._by_key)

    def holding(self) -> int:
        """How many sessions hold photos or a report (what the privacy tests count)."""
        with self._lock:
            return sum(bool(s.photos or s.report) for s in self._by_key.values())
