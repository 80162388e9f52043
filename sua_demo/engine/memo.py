"""Results of the page's pure computations (a story, a verdict), kept by what they were computed from.

A class opens the same first example at the same moment: thirty visitors asked for the same story and verdict, and
each was computed thirty times, two at a time (the first verdict's p95 was 24.5 s with 30 visitors). The models are
greedy and fixed, so the same key gives the same answers: each key is computed once, however many callers ask at
once (the others wait for that one computation), and the least recently used go past `size`.
"""

from __future__ import annotations

import collections
import hashlib
import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

import torch

T = TypeVar("T")


def digest(x: torch.Tensor) -> str:
    """A tensor's contents as a short key (an image, a noise's δ): two equal tensors, one key. The engine's caches
    (stories, verdicts, fitted maps) all key by it."""
    return hashlib.sha1(x.detach().float().contiguous().cpu().numpy().tobytes()).hexdigest()[:16]


class Memo(Generic[T]):
    """compute() once per key, even when many threads ask for the same key at once; at most `size` kept."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._done: collections.OrderedDict[Hashable, T] = collections.OrderedDict()
        self._running: dict[Hashable, threading.Event] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        while True:
            with self._lock:
                if key in self._done:
                    self._done.move_to_end(key)
                    return self._done[key]
                ready = self._running.get(key)
                if ready is None:  # nobody computes it: this caller does
                    ready = self._running[key] = threading.Event()
                    break
            ready.wait()  # another caller computes it; if it failed, the loop computes it here
        try:
            value = compute()
            with self._lock:
                self._done[key] = value
                while len(self._done) > self.size:
                    self._done.popitem(last=False)
            return value
        finally:
            with self._lock:
                self._running.pop(key, None)
            ready.set()

    def __len__(self) -> int:
        with self._lock:
            return len(self._done)
