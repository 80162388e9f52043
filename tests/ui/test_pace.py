"""The waits the app promises, from a job's own measured pace (stubbed clocks: the logic, not the machine)."""

import pytest

from sua_demo.ui.shared.clock import RunClock, WorkClock


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_the_time_left_comes_from_the_steps_after_the_warm_up():
    now = Clock()
    clock = RunClock(100, warm_up=3, now=now)
    for step, seconds in enumerate([5.0, 2.0, 1.0] + [0.5] * 7, start=1):  # slow first steps, then steady
        now.t += seconds
        clock.step(step)
        if step < 4:
            assert clock.left() is None and "measuring the pace" in clock.status()
    assert clock.seconds_per_step() == pytest.approx(0.5)
    assert clock.left() == pytest.approx(90 * 0.5)  # the first steps' 8 s do not inflate the 90 steps to go


def test_the_time_left_moves_on_between_slow_steps_and_a_slower_machine_shows():
    now = Clock()
    clock = RunClock(20, warm_up=1, now=now)
    for step in range(1, 5):
        now.t += 3.0  # a busy machine: 3 s a step, not the start-up probe's 0.1 s
        clock.step(step)
    assert clock.left() == pytest.approx(16 * 3.0)
    now.t += 1.0  # a second into the next step, with no step done: the clock still moves
    assert clock.left() == pytest.approx(16 * 3.0 - 1.0)
    assert clock.status().startswith("step 4/20 · 13 s so far, about 47 s left")
    for step in range(5, 21):
        clock.step(step)
    assert clock.status().endswith("finishing…")  # every step done, the noise still being saved


def test_unequal_parts_are_weighed_by_their_work():
    """The live audit: asking parts take 0.5 s, a step of relearning 0.4 s; the first part warms up, and so does
    the first part with work (its first backward passes: measured, relearn5 cost twice a pass of the later ones)."""
    work = [0, 0, 0, 5, 20, 50, 30]
    cost = [3.0] + [0.5 + 0.4 * w for w in work[1:]]
    cost[3] += 2.0  # the first relearning's warm-up
    now = Clock()
    clock = WorkClock(work, now=now)
    for done, seconds in enumerate(cost, start=1):
        now.t += seconds
        clock.step(done)
        rest = sum(cost[done:])
        if done < 5:  # no part with work fitted yet: no honest figure for the relearning to come
            assert clock.left() is None
        elif done < len(work):
            assert clock.left() == pytest.approx(rest, rel=1e-6), done
    assert clock.left() == 0.0 and clock.status("method").startswith("method 7/7")
    assert clock.status().endswith("finishing…")  # its last figures are being made: never "about 0 s left"


def test_a_clock_never_sits_on_zero_while_work_is_left():
    """Issue 42: the live audit sat on 'about 0 s left' for 55 s. A part that overruns its estimate is given a
    share of the time it has run so far, and never under a second, until it ends."""
    from sua_demo.ui.shared.clock import OVERDUE, WorkClock

    t = [0.0]
    clock = WorkClock([1, 1, 1], now=lambda: t[0])
    for done, when in ((1, 10.0), (2, 20.0)):
        t[0] = when
        clock.step(done)
    t[0] = 25.0
    assert clock.left() == pytest.approx(5.0)  # the last part, 10 s a part, half done
    t[0] = 60.0  # 40 s into a part estimated at 10
    assert clock.left() == pytest.approx(OVERDUE * 40.0) and clock.left() >= 1.0
    runs = RunClock(10, warm_up=0, now=lambda: t[0])
    for i, when in enumerate((60.0, 61.0, 62.0), start=1):
        t[0] = when
        runs.step(i)
    t[0] = 92.0  # a step 30 s long, at 1 s a step
    assert runs.left() == pytest.approx(6 * 1.0 + OVERDUE * 30.0)
    runs.step(10)
    assert runs.left() == 0.0


def test_a_run_that_checks_every_few_steps_is_paced_over_whole_cycles():
    """Unlearning checks its rule every 5 passes (a check costs 4 passes' time): paced from pass to pass between
    two checks, the clock read 2.5x too fast; paced over whole cycles it reads the run's real mean."""
    now = Clock()
    clock = RunClock(100, warm_up=5, now=now, every=5)
    for step in range(1, 23):
        now.t += 0.5 + (2.0 if step % 5 == 0 else 0.0)
        clock.step(step)
    assert clock.seconds_per_step() == pytest.approx((5 * 0.5 + 2.0) / 5)  # from the check at 5 to the one at 20
