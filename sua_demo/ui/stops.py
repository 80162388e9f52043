"""Stop flags for running optimisations, one per browser session (or per API caller)."""

from __future__ import annotations

import threading


class StopRegistry:
    """arm() at a click, stop() from the Stop button or the API, release() when the run ends."""

    def __init__(self) -> None:
        self._flags: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def arm(self, key: str) -> threading.Event:
        """A fresh flag for a new run, unless one is armed and not yet set (a Stop may already be waiting)."""
        with self._lock:
            flag = self._flags.get(key)
            if flag is None or flag.is_set():
                flag = self._flags[key] = threading.Event()
            return flag

    def current(self, key: str) -> threading.Event:
        """The flag a starting run uses: the one armed at its click, or a new one for API callers."""
        with self._lock:
            return self._flags.setdefault(key, threading.Event())

    def stop(self, key: str) -> bool:
        """Ask the run of `key` to stop; False when nothing is armed (the last result stays as it is)."""
        with self._lock:
            flag = self._flags.get(key)
        if flag is None:
            return False
        flag.set()
        return True

    def release(self, key: str, flag: threading.Event) -> None:
        """A finished run clears only its own flag (a newer run may have armed another)."""
        with self._lock:
            if self._flags.get(key) is flag:
                del self._flags[key]
