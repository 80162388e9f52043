"""The engine under the app: stopping an optimisation keeps its work; the batch protocol measures real recovery."""

import threading

import pytest

from sua_demo.core.errors import SuaError
from sua_demo.engine import check_question


def test_vanilla_and_retrain_get_the_idk_noise_as_the_same_delta_control(engine, idk):
    retrain = engine.session("retrain")
    assert retrain.shipped_noise is not None and "same-δ control" in retrain.noise_note
    assert retrain.shipped_noise.delta.equal(idk.shipped_noise.delta)


def test_stop_ends_early_and_keeps_the_delta_so_far(engine, idk):
    stop = threading.Event()
    seen = []

    def on_step(i, stats, delta):
        seen.append((i, float(delta.abs().max())))
        if i == 2:
            stop.set()

    noise, best = engine.optimise(idk, steps=50, on_step=on_step, stop=stop)
    assert [i for i, _ in seen] == [1, 2] and seen[-1][1] > 0  # the live preview sees the delta as it grows
    assert noise.meta["stopped_early"] and noise.meta["step"] == 2
    assert best is not None and best.meta["kept"] == "best" and 1 <= best.meta["step"] <= 2  # lowest loss so far
    assert best.meta["model"] == "idk" and "smoothed_loss" in best.meta
    assert 0 < float(noise.delta.abs().max()) <= 16 / 255 + 1e-6 and noise.meta["model"] == "idk"


def test_a_finished_run_offers_last_and_lowest_loss_deltas(engine, idk):
    last, best = engine.optimise(idk, steps=4)
    assert last.meta["step"] == 4 and 1 <= best.meta["step"] <= 4 and best.meta["kept"] == "best"
    assert "/" not in last.meta["model"] and last.meta["precision"] in ("bf16", "fp32")


def test_bad_settings_are_refused(engine, idk):
    with pytest.raises(SuaError, match="eps"):
        engine.optimise(idk, eps_255=0)
    with pytest.raises(SuaError, match="steps"):
        engine.optimise(idk, steps=0)
    with pytest.raises(SuaError, match="empty"):
        check_question("   ")


def test_batch_report_shows_recovery_against_clean_and_random(engine, idk):
    rec, tables, tests = engine.batch_report(idk, idk.shipped_noise, retain_people=2)
    assert set(rec) == {"clean", "noise", "random"} and set(tests) == set(rec["noise"])
    attacker = tests["a_attacker_images"]  # the paired test reads the same questions the rates do
    n = rec["noise"]["a_attacker_images"]["gen_n"]
    gain = round((rec["noise"]["a_attacker_images"]["gen_em"] - rec["random"]["a_attacker_images"]["gen_em"]) * n)
    assert attacker.only_first - attacker.only_second == gain and attacker.first_wins
    a = {cond: rec[cond]["a_attacker_images"]["gen_em"] for cond in rec}
    assert a["noise"] >= a["clean"] + 0.2, f"the shipped noise should recover the attacker's own photos: {a}"
    assert abs(a["random"] - a["clean"]) <= 0.05
    assert "a_attacker_images" in tables and "gen refusal" in tables


def test_optimise_stream_yields_steps_then_the_noise_and_closing_it_stops_the_worker(engine, idk):
    from sua_demo.attacks import Noise

    items = list(engine.optimise_stream(idk, threading.Event(), steps=3))
    assert [i[0] for i in items[:-1]] == [1, 2, 3] and isinstance(items[-1][0], Noise)
    stop = threading.Event()
    stream = engine.optimise_stream(idk, stop, steps=500)
    next(stream)
    stream.close()  # what Gradio does when the page goes away
    assert stop.is_set()
    with idk.attack_lock:  # acquired only once the worker has ended its run
        pass


def test_a_shipped_model_named_by_its_folder_is_the_shipped_model(engine):
    """Issue 42: loaded by its folder path, a shipped model said "no shipped noise" (and the message began with
    the path, capitalised). It is the shipped model, with its noise and controls."""
    import os

    folder = engine.world.models / "grad_diff"
    for name in (str(folder), os.path.relpath(folder), f"{folder}/"):
        sess = engine.session(name)
        assert sess is engine.session("grad_diff") and sess.shipped and sess.shipped_noise is not None
