"""Where torch work runs, on how many threads, and the one line heavy jobs wait in.

Measured on this project's 2-core Xeon (benchmarks/README.md, "A class at once"):
- An OpenMP team waits at every barrier for its slowest thread. A team of every core beside one core-bound process
  ran Your face 10.4x slower than alone (39 s, 408 s): the thread sharing its core with the other process is
  descheduled for whole time slices while its partner spins. So a heavy job's team is sized to the cores that
  other work leaves free, and sized again as the job goes (`CoreMeter`, at every report the job makes), within
  the cores this process may use at all: its affinity and its CPU quota (`usable_cores`, a container's cgroup
  limit read by joblib/loky).
- Page work in this process counts as other work too: each page answer runs on one intra-op thread (no team; a
  second live team on the same cores halved the attack, 6.2 steps/s against 15), and the heavy job leaves it
  its core while it runs (`serving`).
- Heavy jobs run one at a time on one long-lived worker thread (`HeavyLine`), not on a fresh thread each: a fresh
  thread builds a new OpenMP team and takes a malloc arena of its own, and what each run left in its arena stayed
  in the server's memory. The line tells each waiting job its place and an estimated wait from the times jobs of
  its kind took here (`Waiting`); a waiting job whose `stop` is set leaves the line.
"""

from __future__ import annotations

import collections
import ctypes
import ctypes.util
import functools
import os
import queue
import threading
import time
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import torch

from sua_demo.core.errors import SuaError

T = TypeVar("T")
U = TypeVar("U")
SERVING_THREADS = 1
WORKER = "sua-worker"  # the name of the one thread heavy work runs on
RESIZE_EVERY = 0.5  # seconds: how often a running job's team is sized again to the cores free now
TIMED = 5  # a kind's wait is estimated from the last this many jobs of that kind that finished here
_DONE = object()  # what the worker puts last on a stream's queue


def usable_cores() -> int:
    """The cores this process may use: its CPU affinity and its CPU quota (a container's cgroup `cpu.max`, as
    Spaces and Kubernetes set it: the host's cores are all visible there), as joblib's loky reads them; fewer where
    OMP_NUM_THREADS says so (an operator sharing the machine among processes, as `make test` does)."""
    from joblib import cpu_count

    cores = max(1, int(cpu_count()))
    asked = os.environ.get("OMP_NUM_THREADS", "")
    return max(1, min(cores, int(asked))) if asked.isdigit() else cores


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Torch's intra-op threads for this OS thread, restored on exit."""
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


_serving = 0  # page answers under way in this process, each on one thread (`serving`)
_serving_lock = threading.Lock()


@contextmanager
def serving() -> Iterator[None]:
    """A page answer under way on one intra-op thread: a heavy job leaves it a core while it runs."""
    global _serving
    with _serving_lock:
        _serving += 1
    try:
        with torch_threads(SERVING_THREADS):
            yield
    finally:
        with _serving_lock:
            _serving -= 1


def idle() -> bool:
    """Nothing of the server's own is running: no page answer under way and no heavy job in the line."""
    return _serving == 0 and LINE.length() == 0


class CoreMeter:
    """How many cores a heavy job should use now: the cores this process may run on (`usable_cores`), less the
    cores other processes kept busy over the last window (the machine's busy time on this process's CPUs, from
    /proc/stat through psutil, less this process's own CPU time), less one for each page answer under way here."""

    def __init__(self, cores: int | None = None) -> None:
        self.cores = cores or usable_cores()
        self._cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
        self._last = self._read()

    def _read(self) -> tuple[float, float, float]:
        import psutil

        per_cpu = psutil.cpu_times(percpu=True)
        mine = [per_cpu[i] for i in self._cpus if i < len(per_cpu)] if self._cpus else per_cpu
        # steal: a virtual core the hypervisor gave to someone else is as busy as one another process uses
        busy = sum(t.user + t.nice + t.system + t.irq + t.softirq + getattr(t, "steal", 0.0) for t in mine)
        return time.monotonic(), busy, time.process_time()

    def others(self) -> float:
        """Cores kept busy by other processes since the last reading (0 over a window too short to say)."""
        now = self._read()
        (t0, busy0, own0), (t1, busy1, own1) = self._last, now
        if t1 - t0 < 0.05:
            return 0.0
        self._last = now
        return max(0.0, (busy1 - busy0) - (own1 - own0)) / (t1 - t0)

    def free(self) -> int:
        """Threads for a heavy job now: at least one, at most the usable cores."""
        room = (len(self._cpus) if self._cpus else self.cores) - self.others() - _serving
        return max(1, min(self.cores, int(room + 0.5)))


def _give_back_memory() -> None:
    """Return the heap's free pages to the system after a heavy job (glibc's malloc_trim; elsewhere nothing):
    a job's tensors are freed into malloc's heap, which would otherwise keep them resident for the next job."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim, looked up once, not at every job (finding the C library asks ldconfig)."""
    name = ctypes.util.find_library("c")
    return getattr(ctypes.CDLL(name), "malloc_trim", None) if name and "libc" in name else None


@dataclass(frozen=True)
class Waiting:
    """A job waiting in the line: `ahead` jobs before it (the one running among them), and the estimated seconds
    until it starts (None where a job ahead is of a kind no run has timed here yet)."""

    ahead: int
    wait: float | None

    def words(self) -> str:
        others = "1 job" if self.ahead == 1 else f"{self.ahead} jobs"
        when = (
            "its wait is not known yet: no job ahead of it has been timed on this server"
            if self.wait is None
            else f"it starts in about {_duration(self.wait)}"
        )
        return f"In line: place {self.ahead + 1} ({others} ahead of yours, one running); {when}. Stop leaves the line."


def _duration(seconds: float) -> str:
    seconds = max(1, round(seconds))
    return f"{seconds} s" if seconds < 90 else f"{seconds // 60} min {seconds % 60:02d} s"


class LeftTheLine(SuaError):
    """A waiting job whose stop was set: it left the line and never started."""


LEFT = "stopped while waiting: it left the line and nothing of it ran"


class _Ticket:
    """One job in the line: what it runs, what it says, how long it is expected to take."""

    def __init__(
        self,
        kind: str,
        fn: Callable[[Callable[[Any], None]], Any],
        expected: float | None,
        stop: threading.Event | None = None,
    ) -> None:
        self.kind, self.fn, self.expected, self.stop = kind, fn, expected, stop
        self.items: queue.Queue = queue.Queue()
        self.out: dict[str, Any] = {}
        self.begun = threading.Event()
        self.started: float | None = None


class HeavyLine:
    """Heavy jobs, one at a time, in the order they came, on one long-lived worker thread (`WORKER`)."""

    def __init__(self) -> None:
        self._waiting: collections.deque[_Ticket] = collections.deque()
        self._running: _Ticket | None = None
        self._cond = threading.Condition()
        self._took: dict[str, collections.deque[float]] = {}
        self._worker: threading.Thread | None = None
        self.meter: CoreMeter | None = None

    def join(
        self,
        kind: str,
        fn: Callable[[Callable[[Any], None]], Any],
        expected: float | None = None,
        stop: threading.Event | None = None,
    ) -> _Ticket:
        """Put `fn(emit)` in the line; `expected` seconds, where the caller knows (else the kind's times here). A
        ticket whose `stop` is set by its turn never starts: its caller hears `LeftTheLine`, even when the stop came
        in the instant between the caller's last look at the line and the worker taking the ticket."""
        ticket = _Ticket(kind, fn, expected, stop)
        with self._cond:
            self._waiting.append(ticket)
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._serve, daemon=True, name=WORKER)
                self._worker.start()
            self._cond.notify_all()
        return ticket

    def leave(self, ticket: _Ticket) -> bool:
        """Take a waiting ticket out of the line; False if it has started already."""
        with self._cond:
            if ticket in self._waiting:
                self._waiting.remove(ticket)
                return True
            return False

    def waiting(self, ticket: _Ticket) -> Waiting | None:
        """Where `ticket` stands; None once it has started."""
        with self._cond:
            if ticket not in self._waiting:
                return None
            ahead = list(self._waiting)[: self._waiting.index(ticket)]
            running = self._running
        wait: float | None = 0.0
        if running is not None:
            took = self._expected(running)
            elapsed = time.monotonic() - (running.started or time.monotonic())
            wait = None if took is None else max(took - elapsed, 0.1 * took)
        for other in ahead:
            took = self._expected(other)
            wait = None if wait is None or took is None else wait + took
        return Waiting(len(ahead) + (running is not None), wait)

    def length(self) -> int:
        """Jobs waiting or running."""
        with self._cond:
            return len(self._waiting) + (self._running is not None)

    def _expected(self, ticket: _Ticket) -> float | None:
        if ticket.expected is not None:
            return ticket.expected
        times = sorted(self._took.get(ticket.kind, ()))
        return times[len(times) // 2] if times else None

    def _serve(self) -> None:
        self.meter = self.meter or CoreMeter()
        while True:
            with self._cond:
                while not self._waiting:
                    self._cond.wait()
                ticket = self._running = self._waiting.popleft()
                ticket.started = time.monotonic()
                ticket.begun.set()
            try:
                self._run(ticket)
            finally:
                took = time.monotonic() - ticket.started
                _give_back_memory()  # before the job reports its end: what it freed is back with the system
                with self._cond:
                    self._took.setdefault(ticket.kind, collections.deque(maxlen=TIMED)).append(took)
                    self._running = None
                ticket.items.put(_DONE)

    def _run(self, ticket: _Ticket) -> None:
        """The job, its team sized to the cores free now and again at its reports; its result or exception kept
        for the caller's thread (raised there, not lost in this one)."""
        if ticket.stop is not None and ticket.stop.is_set():
            ticket.out["error"] = LeftTheLine(LEFT)
            return
        meter = self.meter
        assert meter is not None, "_serve makes the meter before the first job"
        meter.others()  # a fresh window: what was busy while nothing of ours ran is not what is busy now
        time.sleep(0.1)
        resized = [time.monotonic()]

        def emit(item: Any) -> None:
            if time.monotonic() - resized[0] > RESIZE_EVERY:
                resized[0] = time.monotonic()
                if (n := meter.free()) != torch.get_num_threads():  # setting it, even unchanged, costs (40 % slower)
                    torch.set_num_threads(n)
            ticket.items.put(item)

        try:
            with torch_threads(meter.free()):
                ticket.out["value"] = ticket.fn(emit)
        except BaseException as err:
            ticket.out["error"] = err


LINE = HeavyLine()  # the process's one line


def _result(out: dict[str, Any]) -> Any:
    if "error" in out:
        raise out["error"]
    return out["value"]


def heavy_stream(
    fn: Callable[[Callable[[U], None]], T],
    kind: str = "job",
    tick: float | None = None,
    stop: threading.Event | None = None,
    expected: float | None = None,
) -> Generator[U | Waiting | None, None, T]:
    """fn(emit) in the line, as a generator: a `Waiting` every `tick` seconds while it waits (its place and wait),
    then each value fn emits as it comes, None after every `tick` seconds with nothing new (so a page's clock moves
    on), and fn's result or its exception: `value = yield from heavy_stream(fn, "optimise", 1.0)`. With `stop` set
    while it waits, it leaves the line and raises `LeftTheLine`; closed while it waits, it leaves the line too."""
    ticket = LINE.join(kind, fn, expected, stop)
    try:
        while (place := LINE.waiting(ticket)) is not None:
            if stop is not None and stop.is_set() and LINE.leave(ticket):
                raise LeftTheLine(LEFT)
            if place.ahead:  # with nothing ahead it starts at once: nothing to tell
                yield place
            ticket.begun.wait(tick or 1.0)
    except GeneratorExit:
        LINE.leave(ticket)
        raise
    while True:
        try:
            item = ticket.items.get(timeout=tick)
        except queue.Empty:
            yield None
            continue
        if item is _DONE:
            return _result(ticket.out)
        yield item


def heavy(fn: Callable[..., T], *args: Any, kind: str = "job", **kwargs: Any) -> T:
    """fn(*args, **kwargs) in the line, waited for: its result, or its exception, in the caller's thread."""
    stream = heavy_stream(lambda _emit: fn(*args, **kwargs), kind)
    while True:
        try:
            next(stream)
        except StopIteration as done:
            return done.value


def heavy_ticking(
    fn: Callable[..., T], tick: float, *args: Any, kind: str = "job", **kwargs: Any
) -> Generator[Waiting | None, None, T]:
    """`heavy`, as a generator that yields while fn waits and runs (a `Waiting`, or None every `tick` seconds) and
    returns fn's result: `value = yield from heavy_ticking(fn, 1.0, ...)`."""
    return heavy_stream(lambda _emit: fn(*args, **kwargs), kind, tick)
