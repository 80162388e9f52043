"""How many torch threads run where: the server's threading policy, one place for the attack, the engine and the ui.

Each OS thread that runs ops on more than one intra-op thread keeps an OpenMP team of its own; a second live team
on the same cores halves the attack (IDK, 2 cores: 6.2 steps/s on a second thread against 15 on the thread that
loaded the model, benchmarks/app_latency.py). So a server answers pages on one intra-op thread (no team) and runs each
heavy job on a fresh thread with every core (`on_fresh_thread`, or `streaming_on_fresh_thread` for a job that
reports as it goes).
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any, TypeVar

import torch

T = TypeVar("T")
U = TypeVar("U")
SERVING_THREADS = 1
_DONE = object()  # what the worker puts last on a stream's queue


def all_cores() -> int:
    """The threads a heavy job may use: the CPUs this process may run on (a container's limit, not the host's
    count), or fewer where OMP_NUM_THREADS says so. An operator who shares the machine among processes sets it
    (as `make test` does for its two workers); two jobs with a team of every core each on the same cores spin
    against each other and each ran several times slower (a live audit 45 s alone, over 330 s beside another)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    asked = os.environ.get("OMP_NUM_THREADS", "")
    return max(1, min(cores, int(asked))) if asked.isdigit() else cores


def default_threads() -> int:
    """Torch's own choice (one thread per core) for one process; the cores shared out among the processes
    a launcher started on this machine, or they would oversubscribe the cores and each run slower."""
    local = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    return max(1, (os.cpu_count() or 1) // local) if local > 1 else torch.get_num_threads()


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Torch's intra-op threads for this OS thread, restored on exit."""
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


WORKER = "sua-worker"  # the name of every thread heavy work runs on: a test can see that work ended


def _with_every_core(fn: Callable[[], T], out: dict[str, Any]) -> None:
    """fn() with every core; its result, or its exception (raised again in the caller's thread, not lost in
    this one), in `out`."""
    try:
        with torch_threads(all_cores()):
            out["value"] = fn()
    except BaseException as err:
        out["error"] = err


def _result(out: dict[str, Any]) -> Any:
    if "error" in out:
        raise out["error"]
    return out["value"]


def on_fresh_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """fn(*args, **kwargs) on a new thread with every core, its result or its exception back in the caller."""
    out: dict[str, Any] = {}
    work = partial(_with_every_core, partial(fn, *args, **kwargs), out)
    thread = threading.Thread(target=work, daemon=True, name=WORKER)
    thread.start()
    thread.join()
    return _result(out)


def streaming_on_fresh_thread(
    fn: Callable[[Callable[[U], None]], T], tick: float | None = None
) -> Generator[U | None, None, T]:
    """fn(emit) on a new thread with every core, as a generator: yields each value fn emits as it comes, None
    after every `tick` seconds with nothing new (so a page's clock moves on), and returns fn's result or raises
    its exception: `value = yield from streaming_on_fresh_thread(fn, 1.0)`."""
    items: queue.Queue = queue.Queue()
    out: dict[str, Any] = {}

    def work() -> None:
        _with_every_core(partial(fn, items.put), out)
        items.put(_DONE)

    threading.Thread(target=work, daemon=True, name=WORKER).start()
    while True:
        try:
            item = items.get(timeout=tick)
        except queue.Empty:
            yield None
            continue
        if item is _DONE:
            return _result(out)
        yield item


def ticking_on_fresh_thread(fn: Callable[..., T], tick: float, *args: Any, **kwargs: Any) -> Generator[None, None, T]:
    """`on_fresh_thread`, as a generator that yields None every `tick` seconds while fn runs (so a page can show
    progress) and returns fn's result: `value = yield from ticking_on_fresh_thread(fn, 1.0, ...)`."""
    return streaming_on_fresh_thread(lambda _emit: fn(*args, **kwargs), tick)
