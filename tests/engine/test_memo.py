"""The engine's memo (engine/memo.py): a class asking for the same story at once waits for one computation."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from sua_demo.engine.memo import Memo, digest


def test_many_callers_at_once_share_one_computation_and_the_oldest_goes_past_its_size():
    memo: Memo[int] = Memo(2)
    calls = []

    def slow() -> int:
        calls.append(1)
        time.sleep(0.2)
        return 42

    got: list[int] = []
    threads = [threading.Thread(target=lambda: got.append(memo.get("a", slow))) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == [42] * 10 and len(calls) == 1
    memo.get("b", lambda: 1)
    memo.get("c", lambda: 2)
    assert len(memo) == 2 and memo.get("a", lambda: 7) == 7  # "a" was the least recently used: computed again


def test_a_failed_computation_is_not_kept_and_the_next_caller_computes_it():
    memo: Memo[int] = Memo(4)

    def fails() -> int:
        raise ValueError("no")

    with pytest.raises(ValueError):
        memo.get("k", fails)
    assert memo.get("k", lambda: 3) == 3


def test_equal_tensors_share_a_digest():
    x = torch.rand(3, 8, 8)
    assert digest(x) == digest(x.clone()) != digest(x + 1e-3)


def test_a_verdict_asked_twice_is_computed_once_and_is_the_same(engine, idk):
    noise = idk.shipped_noise
    first = engine.person_verdict(idk, 1, noise)
    t0 = time.perf_counter()
    again = engine.person_verdict(idk, 1, noise)
    assert again is first and time.perf_counter() - t0 < 0.05
    assert engine.person_verdict(idk, 2, noise) is not first
