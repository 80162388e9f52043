"""Stop flags for running optimisations: one per caller session (a browser tab, a gradio_client), and one per run
under its name (the caller's or a new secret id), so that a caller with no session (an MCP client, a plain REST
call) can stop its own run, and nobody can stop a run they did not start."""

from __future__ import annotations

import secrets
import threading

from sua_demo.core.errors import SuaError


class StopRegistry:
    """arm() at a click, stop() from the Stop button or the API, release() when the run ends."""

    def __init__(self) -> None:
        self._flags: dict[str, threading.Event] = {}
        self._runs: dict[str, threading.Event] = {}  # secret run id -> its flag
        self._lock = threading.Lock()

    def arm(self, key: str) -> threading.Event:
        """A fresh flag for a new run, unless one is armed and not yet set (a Stop may already be waiting)."""
        with self._lock:
            flag = self._flags.get(key)
            if flag is None or flag.is_set():
                flag = self._flags[key] = threading.Event()
            return flag

    def current(self, key: str, run: str = "") -> tuple[threading.Event, str]:
        """The flag a starting run uses (the one armed at its click, or a new one for API callers) and the run's
        name: `run` as its caller chose it, else a new secret id; `stop(run=...)` accepts it from whoever holds it."""
        run = run or secrets.token_urlsafe(12)
        with self._lock:
            if run in self._runs:
                raise SuaError("a run with that name is already going; give this one another name")
            flag = self._flags.setdefault(key, threading.Event())
            self._runs[run] = flag
            return flag, run

    def stop(self, key: str, run: str = "") -> bool:
        """Ask the run of `key` (or, given `run`, the run with that id) to stop; False when there is none."""
        with self._lock:
            flag = self._runs.get(run) if run else self._flags.get(key)
        if flag is None:
            return False
        flag.set()
        return True

    def release(self, key: str, flag: threading.Event, run: str = "") -> None:
        """A finished run clears only its own flag (a newer run may have armed another)."""
        with self._lock:
            self._runs.pop(run, None)
            if self._flags.get(key) is flag:
                del self._flags[key]
