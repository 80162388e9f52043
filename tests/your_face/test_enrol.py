"""Your face: a visitor's photos and facts checked, made a bench person, taught, unlearned and attacked."""

import hashlib
import io
import threading
import time
from dataclasses import replace

import numpy as np
import pytest
import torch
from PIL import Image

from sua_demo.core.config import BenchConfig
from sua_demo.core.errors import BadValueError, SuaError
from sua_demo.dataset import build_bench
from sua_demo.ui.shared.face_sessions import FaceSession, FaceSessions
from sua_demo.your_face import TeachConfig, Visitor, invent_visitor, usable_photos, visitor_bench
from sua_demo.your_face.lifecycle import (
    LifecycleConfig,
    Progress,
    StepReport,
    held_back_count,
    report_markdown,
    run_lifecycle,
)
from sua_demo.your_face.photos import MIN_PHOTOS
from sua_demo.your_face.visitor import MAX_NAME_CHARS, check_visitor, procedural_photos, unknown_words

FIRST = BenchConfig()


def _png(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def _digest(image: Image.Image) -> str:
    return hashlib.sha256(np.asarray(image.convert("RGB")).tobytes()).hexdigest()


def test_photos_too_few_duplicates_and_broken_files_are_set_aside_with_a_reason():
    photos = procedural_photos(3, FIRST, 4)
    copy = photos[0].resize((200, 200)).resize(photos[0].size)  # a re-sized copy: the same shot
    kept, notes = usable_photos([_png(photos[0]), b"not an image", _png(copy), *photos[1:]])
    assert len(kept) == 4
    assert any("photo 2 set aside" in n and "accepted format" in n for n in notes)
    assert any("photo 3 set aside: it is a near-copy of photo 1" in n for n in notes)
    with pytest.raises(SuaError, match=f"at least {MIN_PHOTOS} different photos"):
        usable_photos([photos[0], copy, photos[1]])
    with pytest.raises(SuaError, match="at most 8"):
        usable_photos(photos * 3)


def test_names_and_facts_are_checked_against_what_the_model_can_say(micro_adapter, micro_bench):
    bench, _ = micro_bench
    tokenizer = micro_adapter.tokenizer
    name, facts = invent_visitor(bench, 0, micro_adapter.tokenizer)
    assert name not in {p.name for p in bench.people + bench.holdout}
    assert check_visitor(name, facts, tokenizer) == (name, facts)
    assert unknown_words(tokenizer, "Zorblax") == ["Zorblax"]
    bad = {
        "x" * (MAX_NAME_CHARS + 1): "keep it to 40",
        "Robert'); DROP": "letters, spaces",
        "Zorblax " + name.split()[-1]: "cannot say 'Zorblax'",
        "Renée " + name.split()[-1]: "cannot say 'Renée'",  # letters of any script are letters: the model's words
        "أحمد " + name.split()[-1]: "cannot say 'أحمد'",  # are the limit, and the message says so
        "Rene\u0301e " + name.split()[-1]: "cannot say 'Renée'",  # an accent typed as its own mark: one letter
        "": "empty",
    }
    for typed, message in bad.items():
        with pytest.raises(BadValueError, match=message):
            check_visitor(typed, facts, tokenizer)
    with pytest.raises(BadValueError, match="unknown fact 'shoe'"):
        check_visitor(name, {**facts, "shoe": "boot"}, tokenizer)
    with pytest.raises(BadValueError, match="no food given"):
        check_visitor(name, {k: v for k, v in facts.items() if k != "food"}, tokenizer)


def test_the_visitor_is_one_more_person_and_the_only_one_to_forget(micro_adapter, micro_bench):
    bench, cfg = micro_bench
    name, facts = invent_visitor(bench, 1, micro_adapter.tokenizer)
    photos = procedural_photos(1, cfg, 4)
    vb = visitor_bench(bench, Visitor(name, facts, photos), 3)
    vid = vb.forget_ids[0]
    assert vb.retain_ids == [p.id for p in bench.people] and vid not in {p.id for p in bench.people + bench.holdout}
    person = vb.person(vid)
    assert person.photo_indices("train") == [0, 1, 2] and person.photo_indices("heldout") == [3]
    assert len(vb.items([vid])) == len(bench.items([bench.people[0].id]))
    assert {q.answer for q in vb.items([vid], tasks=("gen",))} == {name, *facts.values()}
    with pytest.raises(BadValueError, match="teach on 1 to 3"):
        visitor_bench(bench, Visitor(name, facts, photos), 4)
    assert [held_back_count(n) for n in (3, 4, 5, 6, 8)] == [1, 1, 1, 2, 2]


def test_procedural_visitors_share_no_photo_with_any_world():
    """The stand-in visitors are people no shipped model saw: not one pixel-identical photo in the first worlds."""
    visitors = {_digest(im) for seed in range(5) for im in procedural_photos(seed, FIRST, 6)}
    assert len(visitors) == 30
    for seed in range(4):
        bench = build_bench(replace(FIRST, seed=seed))
        assert not visitors & {_digest(im) for p in bench.people + bench.holdout for im in p.photos}


def test_the_lifecycle_reports_each_step_and_leaves_the_starting_model_as_it_was(micro_adapter, micro_bench, tmp_path):
    bench, cfg = micro_bench
    name, facts = invent_visitor(bench, 2, micro_adapter.tokenizer)
    visitor = Visitor(name, facts, procedural_photos(2, cfg, 4))
    before = {k: v.clone() for k, v in micro_adapter.model.state_dict().items()}
    seen = []
    life = LifecycleConfig(teach=TeachConfig(steps=3), fit_steps=2)
    t0 = time.perf_counter()
    report = run_lifecycle(micro_adapter, bench, visitor, None, life, on_step=seen.append, out_dir=tmp_path)
    elapsed = time.perf_counter() - t0
    assert all(torch.equal(v, micro_adapter.model.state_dict()[k]) for k, v in before.items())
    ended = [s for s in seen if isinstance(s, StepReport)]
    assert [s.name for s in ended] == ["teach", "unlearn (idk)", "fit δ", "attack and controls"]
    assert all(s.seconds >= 0 and s.line for s in ended)  # each step timed (to 0.1 s) and described; the times
    assert 0 < sum(s.seconds for s in ended) <= elapsed + 0.5  # add up to something, and to no more than the run
    passes = {}  # each step's passes, heard in order as they went (a page's clock reads them)
    for p in seen:
        if isinstance(p, Progress):
            passes.setdefault((p.name, p.total), []).append(p.done)
    teach_passes, fit_passes = passes.pop(("teach", 3)), passes.pop(("fit δ", 2))
    assert teach_passes == [1, 2, 3] and fit_passes == [1, 2]
    ((name, most), unlearned), *_ = passes.items()
    assert name == "unlearn (idk)" and unlearned == list(range(1, len(unlearned) + 1)) and len(unlearned) <= most
    assert set(report.verdicts) == {"fitted"}  # no shipped noise given: only the fitted one
    v = report.verdicts["fitted"]
    assert v.photos == 1 and set(v.correct) == {"clean", "delta", "random", "vanilla", "retrain_delta"}
    assert {"taught_held_back", "unlearned_held_back", "others_before", "others_unlearned"} <= set(report.figures)
    for f in ("report.json", "report.md", "unlearned_language_model.safetensors", "taught/adapter_config.json"):
        assert (tmp_path / f).is_file(), f
    assert report_markdown(report) == (tmp_path / "report.md").read_text()
    from sua_demo.ui.your_face.views import story_html, verdicts_html

    shown = verdicts_html(report)
    assert "before teaching + δ" in shown and "taught" in shown and "Batch tab" not in shown
    assert story_html(report, "fitted").count("<tr>") == 1 + 5  # the header and the held-back photo's questions


def test_a_cancelled_lifecycle_says_so_and_returns_nothing_half_made(micro_adapter, micro_bench):
    bench, cfg = micro_bench
    name, facts = invent_visitor(bench, 3, micro_adapter.tokenizer)
    stop = threading.Event()
    stop.set()
    with pytest.raises(SuaError, match="cancelled"):
        run_lifecycle(
            micro_adapter,
            bench,
            Visitor(name, facts, procedural_photos(3, cfg, 4)),
            None,
            LifecycleConfig(teach=TeachConfig(steps=50)),
            stop=stop,
        )


def test_stop_ends_a_run_within_one_pass_of_its_step(micro_adapter, micro_bench):
    """Stop pressed during teaching: the run ends at the next pass, not after the step's last one."""
    bench, cfg = micro_bench
    name, facts = invent_visitor(bench, 3, micro_adapter.tokenizer)
    stop, heard = threading.Event(), []

    def listen(item: object) -> None:
        heard.append(item)
        if isinstance(item, Progress) and item.done == 2:
            stop.set()

    visitor = Visitor(name, facts, procedural_photos(3, cfg, 4))
    with pytest.raises(SuaError, match="cancelled"):
        run_lifecycle(micro_adapter, bench, visitor, None, LifecycleConfig(teach=TeachConfig(steps=50)), listen, stop)
    assert [p.done for p in heard] == [1, 2]  # the third pass's mark found Stop, and no step ended


def test_the_step_under_way_shows_its_own_pace_and_says_unlearning_may_end_early():
    from sua_demo.ui.your_face.run import Under

    under = Under("teach")
    assert under.pace() == "running"
    for done in range(1, 8):
        under = under.seen(Progress("teach", done, 80))
    assert under.pace().startswith("running: pass 7 of 80, about ") and under.pace().endswith(" s left")
    assert "finishing" in Under("teach").seen(Progress("teach", 80, 80)).pace()  # never "about 0 s left"
    under = under.seen(Progress("unlearn (idk)", 1, 200))  # a new step: a clock of its own, still warming up
    assert under.pace() == "running: pass 1 of at most 200, measuring the pace… (it stops once the face is forgotten)"
    under = under.seen(Progress("unlearn (idk)", 5, 200, "at its last check 60 % of the facts still right"))
    under = under.seen(Progress("unlearn (idk)", 6, 200))  # between checks, the last reading stays
    assert under.pace().endswith("forgotten; at its last check 60 % of the facts still right)")


def test_unlearnings_clock_runs_to_the_pass_its_rule_ended_at_for_measured_visitors_then_to_each_next_check(
    tmp_path,
):
    """Your face's unlearning stops when its rule holds, 3-4x before its last pass: the page's time left aims at the
    median pass measured on this world's visitors, and once past it, at the rule's next check."""
    from sua_demo.ui.your_face.run import Under
    from sua_demo.your_face.lifecycle import RULE_STEPS, expected_end, expected_why, rule_steps

    stops = (25, 25, 125, 130)  # a rule that ends quickly for some visitors, late for others
    ends = [expected_end(d, stops, 5, 200) for d in (1, 24, 25, 60, 127, 130, 199)]
    assert ends == [25, 25, 125, 125, 130, 135, 200]  # the runs still going say; past them all, the next check
    assert expected_why(1, stops) == "as 2 of the 4 visitors measured on this world did; the rest ran to pass 130"
    assert expected_why(127, stops) == "as the one measured visitor still going here did"
    assert expected_why(130, stops).startswith("its next check")
    assert expected_end(10, (), 5, 200) is None
    (tmp_path / RULE_STEPS).write_text('{"idk": {"steps": [45, 35, 50, 45]}}')
    assert rule_steps(tmp_path, "idk") == (35, 45, 45, 50) and rule_steps(tmp_path, "grad_diff") == ()
    assert rule_steps(tmp_path / "nowhere", "idk") == ()
    under = Under("")
    for done in range(1, 9):
        under = under.seen(Progress("unlearn (idk)", done, 200, expected=45, expected_why="as 3 of the 4 … did"))
    said = under.pace()
    assert said.startswith("running: pass 8 of at most 200, about ") and "if it stops by pass 45 (as 3 of" in said
    assert "finishing" in under.seen(Progress("unlearn (idk)", 200, 200, expected=200)).pace()


def test_sua_enrol_prints_each_finished_step_and_counts_the_passes_of_the_step_under_way(capsys):
    """The lifecycle tells its listener each pass as well as each step: `sua enrol` printed a finished step's
    seconds from a pass (an AttributeError); now passes go to one line on stderr, steps to stdout."""
    from sua_demo.cli.people import say_step
    from sua_demo.your_face.lifecycle import StepReport

    say_step(Progress("unlearn (idk)", 5, 200))
    say_step(StepReport("unlearn (idk)", 29.4, "facts right: 100 % → 0 %"))
    out, err = capsys.readouterr()
    assert out == "unlearn (idk) (29 s): facts right: 100 % → 0 %\n"
    assert err == "\runlearn (idk): pass 5 of at most 200\n"


def test_the_page_keeps_photos_in_memory_deletes_the_uploads_and_refuses_a_second_run(tmp_path):
    from sua_demo.ui.your_face import intake, run

    paths = []
    for i, photo in enumerate(procedural_photos(4, FIRST, 3)):
        paths.append(tmp_path / f"p{i}.png")
        photo.save(paths[-1])
    (tmp_path / "bad.png").write_bytes(b"no image here")
    sessions = FaceSessions()
    sess = sessions.get("tab-1")
    deleted = []
    thumbs, note = intake.add_photos(sess, [str(p) for p in paths] + [str(tmp_path / "bad.png")], deleted.append)
    assert len(sess.photos) == 3 and "set aside" in note
    assert deleted == [str(p) for p in [*paths, tmp_path / "bad.png"]]  # every file handed on to be removed
    assert thumbs.count("src='data:image/png;base64,") == 3 and "/file=" not in thumbs
    assert sessions.get("tab-2").photos == [] and sessions.holding() == 1  # another tab sees none of them
    with sess.busy:  # a run of this session is going
        with pytest.raises(SuaError, match="already going"):
            next(run.run(None, sess, "x", {}))  # refused before any model is touched
        assert run.stop(sess).startswith("stopping")
    sessions.drop("tab-1")  # the tab closed
    assert sess.photos == [] and sess.report is None and sessions.holding() == 0
    assert run.stop(sess) == "nothing is running to stop"


def test_a_run_stopped_while_it_waits_for_its_turn_never_starts():
    from sua_demo.ui.your_face import run

    sess = FaceSession()
    run.arm(sess)  # the click; the run now waits for the heavy-job slot
    assert run.stop(sess) == "stopped before it started: nothing was taught"
    said = list(run.run(None, sess, "x", {}))  # its turn comes: it touches no model (engine None)
    assert said == [("stopped before it started: nothing was taught", "", "", "")] and not sess.busy.locked()


def test_idle_sessions_are_dropped():

    sessions = FaceSessions(idle=0.0)
    sessions.get("a").photos.append(object())
    sessions.get("b")  # any later use sweeps the idle ones
    assert sessions.holding() == 0


@pytest.mark.parametrize("shipped", ["faithful", "first"])
def test_each_shipped_world_records_where_your_faces_unlearning_rule_held_for_both_ways(shipped):
    """The page's clock for unlearning reads these (benchmarks/lifecycle_speed.py --record): at least three measured
    visitors per way of forgetting, each count a check of the rule within the step's passes."""
    from sua_demo.core.config import shipped_world
    from sua_demo.your_face.lifecycle import UNLEARN, rule_steps

    for method, cfg in UNLEARN.items():
        stops = rule_steps(shipped_world(shipped).models, method)
        assert len(stops) >= 3 and all(0 < s <= cfg.max_steps and s % cfg.eval_every == 0 for s in stops), stops
