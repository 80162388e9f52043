"""The server's threading policy (sua_demo/engine/threads.py): heavy jobs one at a time on one long-lived worker, in a
line whose waiters know their place; a team no wider than the cores the process may use and other work leaves free."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest
import torch

from sua_demo.core.errors import BadValueError
from sua_demo.engine import threads
from sua_demo.engine.threads import (
    LINE,
    CoreMeter,
    LeftTheLine,
    Waiting,
    heavy,
    heavy_stream,
    heavy_ticking,
    torch_threads,
    usable_cores,
)


def _fails(*_: object) -> None:
    raise BadValueError("from the job")


def _drain(gen):  # type: ignore[no-untyped-def]
    """What a generator yields, and what it returns."""
    items = []
    try:
        while True:
            items.append(next(gen))
    except StopIteration as done:
        return items, done.value


def test_heavy_jobs_run_on_one_long_lived_worker_and_pages_keep_one_thread():
    """The caller keeps its one thread; every job runs on the same worker thread (a fresh thread per job built a
    new OpenMP team and malloc arena each time), with at most the usable cores; its exception comes back."""
    with torch_threads(1):
        first, threads_used = heavy(lambda: (threading.get_ident(), torch.get_num_threads()))
        second, _ = heavy(lambda: (threading.get_ident(), 0))
        assert torch.get_num_threads() == 1
    assert first == second != threading.get_ident()
    assert 1 <= threads_used <= usable_cores()
    with pytest.raises(BadValueError, match="from the job"):
        heavy(_fails)
    assert heavy(lambda: "still serving") == "still serving"


def test_a_stream_yields_what_the_job_emits_in_order_then_returns_its_result():
    def job(emit):  # type: ignore[no-untyped-def]
        for i in range(3):
            emit(i)
        return "done"

    items, value = _drain(heavy_stream(job))
    assert [i for i in items if not isinstance(i, Waiting)] == [0, 1, 2] and value == "done"
    with pytest.raises(BadValueError, match="from the job"):
        _drain(heavy_stream(_fails))


def test_a_quiet_job_ticks_so_a_page_clock_moves_on():
    items, value = _drain(heavy_ticking(lambda x: time.sleep(0.2) or x, 0.02, "done"))
    assert value == "done"
    assert items and None in items


def test_a_waiting_job_hears_its_place_and_wait_and_stop_takes_it_out_of_the_line():
    """Behind a running job expected to take 30 s: place 2, one job ahead, a wait under 30 s; a Stop while it waits
    leaves the line, and its work never runs."""
    release, started = threading.Event(), threading.Event()
    ran = []

    def long_job(_emit):  # type: ignore[no-untyped-def]
        started.set()
        release.wait(10)
        return "first"

    first = heavy_stream(long_job, "test", 0.05, expected=30.0)
    while not started.is_set():
        next(first)
    stop = threading.Event()
    second = heavy_stream(lambda _emit: ran.append(1), "test", 0.05, stop)
    place = next(second)
    assert isinstance(place, Waiting) and place.ahead == 1 and 0 < place.wait <= 30
    assert "place 2" in place.words() and "1 job ahead" in place.words()
    stop.set()
    with pytest.raises(LeftTheLine):
        next(second)
    release.set()
    _, value = _drain(first)
    assert value == "first" and LINE.length() == 0 and ran == []


def test_a_job_stopped_as_its_turn_comes_never_starts():
    """The stop lands between the waiter's last look at the line and the worker taking its ticket (the waiter's next
    look is up to a tick away): the worker, not the waiter, must see it, or the job starts after its Stop."""
    release, started = threading.Event(), threading.Event()
    ran = []
    first = heavy_stream(lambda _emit: started.set() or release.wait(10), "test", 0.05)
    while not started.is_set():
        next(first)
    stop = threading.Event()
    second = heavy_stream(lambda _emit: ran.append(1), "test", 60.0, stop)  # it looks at the line once a minute
    assert isinstance(next(second), Waiting)
    stop.set()
    release.set()
    _drain(first)
    with pytest.raises(LeftTheLine):
        _drain(second)
    assert ran == [] and LINE.length() == 0


def test_the_wait_comes_from_the_times_jobs_of_that_kind_took_here():
    heavy(time.sleep, 0.3, kind="timed")  # one timed job of the kind
    release = threading.Event()
    first = heavy_stream(lambda _emit: release.wait(10), "timed", 0.05)
    place = next(first)
    while isinstance(place, Waiting):
        place = next(first)
    second = heavy_stream(lambda _emit: None, "timed", 0.05)
    waiting = next(second)
    assert isinstance(waiting, Waiting) and waiting.wait is not None and waiting.wait < 1.0
    release.set()
    _drain(first), _drain(second)
    release.clear()
    untimed = heavy_stream(lambda _emit: release.wait(10), "never timed", 0.05)
    while isinstance(next(untimed), Waiting):
        pass
    behind = heavy_stream(lambda _emit: None, "timed", 0.05)
    assert next(behind).wait is None  # behind a job of a kind not timed here: said, never guessed
    release.set()
    _drain(untimed), _drain(behind)


def test_heavy_jobs_keep_to_the_threads_an_operator_asked_for(monkeypatch):
    """OMP_NUM_THREADS caps a heavy job's team (two servers on the same cores would otherwise spin against each
    other); unset or not a number, a job gets the cores this process may use."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)  # `make test` sets it for its workers
    cores = usable_cores()
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert usable_cores() == 1
    monkeypatch.setenv("OMP_NUM_THREADS", str(cores + 7))
    assert usable_cores() == cores
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert usable_cores() == cores
    monkeypatch.setenv("OMP_NUM_THREADS", "lots")
    assert usable_cores() == cores


def test_a_cpu_quota_of_two_sizes_the_pool_at_two_while_eight_cores_are_visible(monkeypatch, tmp_path):
    """A container limited by a CPU quota (cgroup v2 `cpu.max`: 200000 of every 100000 µs) sees every host core:
    the pool is the quota's 2, not the 8 cores in view. The quota file is faked; joblib/loky reads it."""
    from joblib.externals.loky.backend import context

    quota = tmp_path / "cpu.max"
    quota.write_text("200000 100000\n")
    real_exists, real_open = os.path.exists, open

    def exists(path):  # type: ignore[no-untyped-def]
        return True if path == "/sys/fs/cgroup/cpu.max" else real_exists(path)

    def opened(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        return real_open(quota if path == "/sys/fs/cgroup/cpu.max" else path, *args, **kwargs)

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("LOKY_MAX_CPU_COUNT", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(8)))
    monkeypatch.setattr(os.path, "exists", exists)
    monkeypatch.setattr(context, "open", opened, raising=False)
    assert usable_cores() == 2
    assert CoreMeter().cores == 2
    quota.write_text("max 100000\n")  # no quota: every core in view
    assert usable_cores() == 8


def test_the_meter_gives_a_core_to_other_work_and_to_each_page_answer(monkeypatch):
    """Free threads = the cores in view, less the cores other processes kept busy (machine busy time less this
    process's own), less one per page answer under way here; never under one, never over the usable cores."""
    readings = iter([(0.0, 0.0, 0.0), (1.0, 2.0, 1.0), (2.0, 4.0, 3.0), (3.0, 4.5, 4.5), (4.0, 5.0, 5.0)])
    monkeypatch.setattr(CoreMeter, "_read", lambda self: next(readings))
    meter = CoreMeter(cores=2)
    meter._cpus = [0, 1]
    assert meter.free() == 1  # 2 busy core-seconds in 1 s, 1 of them ours: one core taken by others
    assert meter.free() == 2  # all the busy time was ours
    assert meter.free() == 2
    with threads.serving():
        assert meter.free() == 1  # a page answer under way takes its core
        assert torch.get_num_threads() == 1


def test_the_meter_sees_a_core_bound_process():
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        meter = CoreMeter()
        time.sleep(1.0)
        assert meter.others() >= 0.7
    finally:
        busy.kill()
        busy.wait()
