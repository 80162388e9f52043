"""The server's threading policy (sua_demo/threads.py): one live OpenMP team at a time, results and errors back."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from sua_demo.errors import BadValueError
from sua_demo.threads import (
    all_cores,
    on_fresh_thread,
    streaming_on_fresh_thread,
    ticking_on_fresh_thread,
    torch_threads,
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


def test_heavy_jobs_run_on_a_fresh_thread_with_every_core_and_pages_on_one():
    """The caller keeps its one thread, the job gets every core on a thread of its own, and the job's exception
    comes back to the caller."""
    with torch_threads(1):
        ident, threads = on_fresh_thread(lambda: (threading.get_ident(), torch.get_num_threads()))
        assert torch.get_num_threads() == 1
    assert ident != threading.get_ident() and threads == all_cores()
    with pytest.raises(BadValueError, match="from the job"):
        on_fresh_thread(_fails)


def test_a_stream_yields_what_the_job_emits_in_order_then_returns_its_result():
    def job(emit):  # type: ignore[no-untyped-def]
        for i in range(3):
            emit(i)
        return threading.get_ident(), torch.get_num_threads()

    with torch_threads(1):
        items, (ident, threads) = _drain(streaming_on_fresh_thread(job))
    assert items == [0, 1, 2]
    assert ident != threading.get_ident() and threads == all_cores()
    with pytest.raises(BadValueError, match="from the job"):
        _drain(streaming_on_fresh_thread(_fails))


def test_a_quiet_job_ticks_so_a_page_clock_moves_on():
    items, value = _drain(ticking_on_fresh_thread(lambda x: time.sleep(0.2) or x, 0.02, "done"))
    assert value == "done"
    assert items and set(items) == {None}


def test_heavy_jobs_keep_to_the_threads_an_operator_asked_for(monkeypatch):
    """OMP_NUM_THREADS caps a heavy job's team (two servers on the same cores would otherwise spin against each
    other); unset or not a number, a job gets every core this process may run on."""
    import os

    cores = len(os.sched_getaffinity(0))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert all_cores() == 1
    monkeypatch.setenv("OMP_NUM_THREADS", str(cores + 7))
    assert all_cores() == cores
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert all_cores() == cores
    monkeypatch.setenv("OMP_NUM_THREADS", "lots")
    assert all_cores() == cores
