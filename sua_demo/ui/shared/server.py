"""What one app process holds (the engine, a scratch folder for downloads, the stop flags, each session's *Your
face* photos, an attack step's pace), built once on first use. What each action computes lives with its tab."""

from __future__ import annotations

import atexit
import threading

from sua_demo.engine import Engine
from sua_demo.ui.shared.clock import StepTimer
from sua_demo.ui.shared.exports import Scratch
from sua_demo.ui.shared.face_sessions import FaceSessions
from sua_demo.ui.shared.stop_flags import StopRegistry

STOPPING = "stopping after the current step…"
NOTHING_TO_STOP = "nothing is running to stop"


class AppState:
    """What one app process holds: the engine, a scratch folder for downloads, the stop flags, each browser
    session's *Your face* photos, and the measured pace of an attack step."""

    def __init__(self, engine: Engine | None = None, scratch: Scratch | None = None) -> None:
        self.engine = engine or Engine()
        self.scratch = scratch or Scratch()
        atexit.register(self.scratch.close)  # downloads live as long as the server; nothing is left behind
        self.stops = StopRegistry()
        self.faces = FaceSessions()  # Your face: each browser session's photos, dropped when its tab closes
        self.timer = StepTimer()

    def stop(self, key: str, run: str = "") -> str:
        """Ask this caller's run (or the run with this secret id) to stop after its current step; it keeps the δ so
        far. Nobody else's run is touched."""
        if self.stops.stop(key, run.strip()):
            return STOPPING
        return "no run of yours with that id is running" if run.strip() else NOTHING_TO_STOP


_SHARED: list[AppState] = []
_LOCK = threading.Lock()


def shared() -> AppState:
    """The one AppState of this process, built at first use, once even when threads race."""
    with _LOCK:
        if not _SHARED:
            _SHARED.append(AppState())
        return _SHARED[0]
