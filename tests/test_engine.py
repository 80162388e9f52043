"""The engine under the app: stopping an optimisation keeps its work; the batch protocol measures real recovery."""

import threading

import pytest

from sua_demo.engine import Engine, check_question
from sua_demo.errors import SuaError


@pytest.fixture(scope="module")
def engine():
    return Engine()


@pytest.fixture(scope="module")
def idk(engine):
    return engine.session("idk")


def test_sessions_are_cached_and_evicted(engine):
    small = Engine(bench=engine.bench, max_models=1)
    a = small.session("idk")
    assert small.session("idk") is a
    small.session("retrain")
    assert "idk" not in small._sessions


def test_vanilla_and_retrain_get_the_idk_noise_as_the_same_delta_control(engine, idk):
    retrain = engine.session("retrain")
    assert retrain.shipped_noise is not None and "same-delta control" in retrain.noise_note
    assert retrain.shipped_noise.delta.equal(idk.shipped_noise.delta)


def test_stop_ends_early_and_keeps_the_delta_so_far(engine, idk, tmp_path):
    stop = threading.Event()
    seen = []

    def on_step(i, stats):
        seen.append(i)
        if i == 2:
            stop.set()

    noise = engine.optimise(idk, steps=50, on_step=on_step, stop=stop, workdir=tmp_path)
    assert seen == [1, 2]
    assert noise.meta["stopped_early"] and noise.meta["step"] == 2
    assert 0 < float(noise.delta.abs().max()) <= 16 / 255 + 1e-6
    assert not list(tmp_path.iterdir()), "the in-progress checkpoint is cleaned up"


def test_bad_settings_are_refused(engine, idk):
    with pytest.raises(SuaError, match="eps"):
        engine.optimise(idk, eps_255=0)
    with pytest.raises(SuaError, match="steps"):
        engine.optimise(idk, steps=0)
    with pytest.raises(SuaError, match="empty"):
        check_question("   ")


def test_batch_report_shows_recovery_against_clean_and_random(engine, idk):
    rec, tables = engine.batch_report(idk, idk.shipped_noise, retain_people=2)
    assert set(rec) == {"clean", "noise", "random"}
    a = {cond: rec[cond]["a_attacker_images"]["gen_em"] for cond in rec}
    assert a["noise"] >= a["clean"] + 0.2, f"the shipped noise should recover the attacker's own photos: {a}"
    assert abs(a["random"] - a["clean"]) <= 0.05
    assert "a_attacker_images" in tables and "gen refusal" in tables


def test_optimise_stream_yields_steps_then_the_noise_and_closing_it_stops_the_worker(engine, idk, tmp_path):
    from sua_demo.attacks import Noise

    items = list(engine.optimise_stream(idk, 16, 3, "gaussian", 1.0, threading.Event(), tmp_path))
    assert [i[0] for i in items[:-1]] == [1, 2, 3] and isinstance(items[-1], Noise)
    stop = threading.Event()
    stream = engine.optimise_stream(idk, 16, 500, "gaussian", 1.0, stop, tmp_path)
    next(stream)
    stream.close()  # what Gradio does when the page goes away
    assert stop.is_set()
    with idk.attack_lock:  # acquired only once the worker has ended its run
        pass


def test_concurrent_first_requests_load_a_model_once(engine):
    fresh = Engine(bench=engine.bench)
    got = []
    threads = [threading.Thread(target=lambda: got.append(fresh.session("retrain"))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 3 and all(s is got[0] for s in got)
