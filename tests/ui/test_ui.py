"""The app's presentation logic, tested without Gradio: the story table, verdicts, examples, gallery, noise
sources, exports, stop flags and the model policy, on the shipped tiny models."""

import json
import re
import threading
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from sua_demo.core.errors import SuaError
from sua_demo.engine import COLUMNS, Engine
from sua_demo.engine.answers import fold, mark
from sua_demo.engine.look import Request, choose_noise, look
from sua_demo.ui.attack import views as page
from sua_demo.ui.shared.exports import Scratch, story_csv, story_json
from sua_demo.ui.shared.stop_flags import StopRegistry
from sua_demo.ui.shared.story_table import NOT_AVAILABLE, story_html, story_rows

ROOT = Path(__file__).resolve().parents[2]


def unseen(engine, noise):
    return engine.split_of_noise(noise).unseen_ids


def test_degenerate_answers_are_folded_and_short_refusals_marked():
    assert fold("carpenter " * 12) == "(degenerate: 'carpenter' ×12)"
    assert fold("Elio Fennick") == "Elio Fennick" and fold("a b a c") == "a b a c"
    assert mark("I do not", "baker") == "refused" and mark("baker", "baker") == "✓" and mark("pilot", "baker") == "✗"
    assert mark("pilot", None) == ""


def test_the_story_has_every_column_from_running_the_models(engine, idk):
    pid = unseen(engine, idk.shipped_noise)[0]
    vanilla, retrain = engine.controls(idk)
    x = engine.prepare(idk, engine.photo(pid, 5))
    story = engine.story(idk, x, engine.questions(pid), idk.shipped_noise, "gaussian", vanilla, retrain, who="t")
    assert [set(r.answers) for r in story.rows] == [set(COLUMNS)] * 5
    from sua_demo.eval.evaluate import answer
    from sua_demo.eval.person import person_examples

    examples = [e for e in person_examples(engine.bench, pid)[0] if e.photo == 5]
    clean = answer(idk.adapter, idk.bank, examples)
    noisy = answer(idk.adapter, idk.bank, examples, images=idk.shipped_noise.apply(idk.bank.get(examples)))
    assert [r.answers["clean"] for r in story.rows] == clean and [r.answers["delta"] for r in story.rows] == noisy
    html = story_html(story)
    assert html.count("<tr>") == 6 and "retrain control + δ" in html and "before unlearning" in html
    assert all(len(r) == 2 + len(COLUMNS) for r in story_rows(story))


def test_a_users_own_model_without_controls_says_not_available(engine, idk):
    x = engine.prepare(idk, engine.photo(1, 0))
    story = engine.story(idk, x, engine.questions(1), idk.shipped_noise, "gaussian", None, None)
    html = story_html(story)
    assert html.count(NOT_AVAILABLE) == 2 * 5 and story.controls == {"vanilla": None, "retrain": None}


def test_the_verdict_counts_what_eval_measures_on_the_same_photos(engine, idk):
    """The headline's figures come from running the models: they equal the protocol's scoring of those photos."""
    from sua_demo.eval.evaluate import score
    from sua_demo.eval.person import person_examples
    from sua_demo.eval.recovery import answers_with

    pid = unseen(engine, idk.shipped_noise)[0]
    vanilla, retrain = engine.controls(idk)
    v = engine.person_verdict(idk, pid, idk.shipped_noise, vanilla, retrain)
    examples, photos = person_examples(engine.bench, pid)
    assert v.photos == len(photos) == 7 and v.total == len(examples) == 35
    rand = engine.random_noise(idk, idk.shipped_noise.eps)
    for cond, adapter, bank, noise in (
        ("clean", idk.adapter, idk.bank, None),
        ("delta", idk.adapter, idk.bank, idk.shipped_noise),
        ("random", idk.adapter, idk.bank, rand),
        ("retrain_delta", retrain.adapter, retrain.bank, idk.shipped_noise),
        ("vanilla", vanilla.adapter, vanilla.bank, None),
    ):
        measured = score(examples, answers_with(adapter, bank, examples, noise))["gen_em"]
        assert v.correct[cond] == round(measured * len(examples)), cond
    assert 0 <= v.brought_back <= v.correct["delta"]
    from sua_demo.ui.shared.story_table import verdict_html

    html = verdict_html(v, "unseen by δ")
    assert (
        re.search(rf"(<b>)?{v.count}(</b>)? of 35", html)
        and f"retrain control + δ <b>{v.correct['retrain_delta']}</b>" in html
    )
    assert v.count <= v.correct["delta"] and v.beyond is not None and "(p " in html


def test_examples_are_measured_unseen_people_best_first(engine, idk):
    from sua_demo.ui.shared.words import p_text

    ex = page.examples(engine, "idk")
    assert ex, "the shipped IDK noise must give at least one guided example"
    never_saw = [e["person"] in unseen(engine, idk.shipped_noise) for e in ex]
    assert never_saw == sorted(never_saw, reverse=True)  # the people δ never saw first, where any passes the test
    assert ex[0]["beyond_controls"] >= 1 and all(e["p"] < 0.05 for e in ex)  # chosen by the verdict's own test
    assert [e["p"] for e in ex] == sorted(e["p"] for e in ex)  # strongest evidence first
    assert all(f"({p_text(e['p'])})" in e["text"] for e in ex)
    role = "unseen by δ" if never_saw[0] else "attacker set"
    assert ex[0]["label"].startswith(f"#{ex[0]['person']} ") and role in ex[0]["label"]
    assert ("was fitted on" in page.examples_label(ex)) == (not any(never_saw))  # the label is true to the chips


def test_gallery_badges_and_filters(engine):
    thumbs, labels = page.gallery(engine, "idk", "all")
    assert len(thumbs) == len(labels) == 100
    assert {c.split(" · ")[1] for _, c in thumbs} == {"unseen by δ", "attacker set", "retain"}
    unseen_only, _ = page.gallery(engine, "idk", "unseen by δ")
    assert len(unseen_only) == 7 and all(c.endswith("unseen by δ") for _, c in unseen_only)
    assert len(page.gallery(engine, "idk", "attacker set")[0]) == 8


def test_the_page_pictures_are_files_written_once_for_every_visitor(engine, tmp_path):
    """Given as files, not images, Gradio does not encode the same picture again for each of thirty visitors; the
    same picture asked twice is the same file, written once (issue 56)."""
    from PIL import Image

    from sua_demo.ui.shared.exports import Scratch

    scratch = Scratch(tmp_path / "scratch")
    first, _ = page.gallery(engine, "idk", "unseen by δ", scratch)
    written = {path: Path(path).stat().st_mtime_ns for path, _ in first}
    again, _ = page.gallery(engine, "idk", "unseen by δ", scratch)
    assert [p for p, _ in again] == list(written) and len(written) == 7
    assert all(Image.open(p).size == (96, 96) for p in written)
    pictures = list((tmp_path / "scratch" / "pictures").iterdir())
    assert len(pictures) == 7
    x = torch.rand(3, 112, 112)
    assert page.display(x, scratch) == page.display(x.clone(), scratch) != page.display(x + 0.01, scratch)


def test_noise_sources_and_metadata_are_validated(idk, tmp_path):
    assert choose_noise(idk, "shipped") is idk.shipped_noise
    with pytest.raises(SuaError, match="optimise a noise first"):
        choose_noise(idk, "optimised")
    with pytest.raises(SuaError, match="noise source"):
        choose_noise(idk, "telepathy")
    for meta, message in [
        ({"attacker_ids": '"abc"'}, "attacker_ids"),
        ({"attacker_ids": "5"}, "attacker_ids"),
        ({"attacker_ids": "[1, 2]", "split_seed": '"x"'}, "split_seed"),
    ]:
        path = tmp_path / "n.safetensors"
        size = idk.image_size
        save_file({"delta": torch.zeros(3, size, size)}, str(path), metadata={"eps": str(16 / 255), **meta})
        with pytest.raises(SuaError, match=message):
            choose_noise(idk, "uploaded", str(path))


def test_exports_name_model_noise_and_denoiser_and_no_server_path(engine, idk):
    x = engine.prepare(idk, engine.photo(1, 0))
    story = engine.story(idk, x, engine.questions(1), idk.shipped_noise, "median", *engine.controls(idk), who="#1")
    text = story_csv(story, "the noise shipped for idk", "median")
    assert "# model,idk" in text and "# denoiser,median" in text and "# noise,the noise shipped for idk" in text
    data = json.loads(story_json(story, "shipped", "median"))
    assert data["model"] == "idk" and data["retrain_control"] == "retrain" and len(data["rows"]) == 5
    assert str(ROOT) not in text and str(ROOT) not in json.dumps(data)


FORMULAS = ['=HYPERLINK("http://x.test/","click")', "+cmd|' /C calc'!A0", "-2+3+cmd|' /C calc'!A0", "@SUM(1+1)*cmd",
            "\t=1+1", "\r=1+1"]  # fmt: skip


def test_exported_csv_cells_never_start_a_formula(engine, idk):
    import csv
    import io

    from sua_demo.ui.shared.exports import table_csv

    x = engine.prepare(idk, engine.photo(1, 0))
    story = engine.story(idk, x, [(q, None) for q in FORMULAS[:2]], idk.shipped_noise, "median", who=FORMULAS[2])
    texts = [story_csv(story, FORMULAS[3], "median"), table_csv(["question", "gain"], [[q, "-2.9"] for q in FORMULAS])]
    cells = [c for text in texts for row in csv.reader(io.StringIO(text)) for c in row]
    for formula in FORMULAS:
        assert "'" + formula in cells and formula not in cells
    assert not [c for c in cells if c.startswith(("=", "+", "@", "\t", "\r")) or c.startswith("-") and c != "-2.9"]
    assert "-2.9" in cells  # a plain number cannot run: it stays a number


def test_scratch_files_and_folders_are_swept(tmp_path):
    import os
    import time

    scratch = Scratch(tmp_path / "s", max_age_s=60)
    files = scratch.folder()
    assert scratch.folder() == files  # one folder: downloads are named by their content
    old, fresh = files / "old.csv", files / "fresh.csv"
    old.write_text("1")
    fresh.write_text("2")
    legacy = scratch.root / "tmp_run"  # a per-run folder as earlier versions made them
    legacy.mkdir()
    (legacy / "x").write_text("1")
    past = time.time() - 3600
    for path in (old, legacy / "x", legacy):
        os.utime(path, (past, past))
    scratch.folder()
    assert not old.exists() and fresh.exists() and not legacy.exists() and files.is_dir()


def test_stop_flags_belong_to_their_run():
    stops = StopRegistry()
    assert stops.stop("a") is False  # nothing runs: nothing to say, the last status stays
    flag = stops.arm("a")
    current, run = stops.current("a")
    assert current is flag and stops.stop("b") is False and not flag.is_set()  # another caller stops nothing
    assert stops.stop("b", run[:-1]) is False and not flag.is_set()  # nor does a guessed run id
    assert stops.stop("a") and flag.is_set()
    newer = stops.arm("a")  # a new click after a stop gets a fresh flag
    assert newer is not flag and not newer.is_set()
    stops.release("a", flag, run)  # the old run ending does not drop the new run's flag
    again, second = stops.current("a")
    assert again is newer and second != run
    assert stops.stop("someone else", second) and newer.is_set()  # whoever holds the run's id stops that run
    stops.release("a", newer, second)
    assert stops.stop("a") is False and stops.stop("", second) is False


def test_custom_models_are_off_on_a_space_unless_allowed(engine, monkeypatch, tmp_path):
    from sua_demo.engine.model_cache import custom_models_allowed

    assert custom_models_allowed("me/model", {}) and not custom_models_allowed("me/model", {"SPACE_ID": "x"})
    assert custom_models_allowed("me/model", {"SPACE_ID": "x", "SUA_ALLOW_MODELS": "me/model, other"})
    assert custom_models_allowed("any/thing", {"SPACE_ID": "x", "SUA_ALLOW_MODELS": "*"})
    monkeypatch.setenv("SPACE_ID", "someone/sua-lab")
    monkeypatch.delenv("SUA_ALLOW_MODELS", raising=False)
    with pytest.raises(SuaError, match="only its shipped models"):
        engine.session(str(tmp_path))
    assert engine.session(str(engine.world.models / "idk")).shipped  # a shipped folder is shipped
    with pytest.raises(SuaError, match="too long"):
        engine.session("x" * 5000)


def test_a_visitors_models_never_evict_the_shipped_ones(engine, tmp_path):
    import shutil

    folder = ROOT / "checkpoints" / "tiny-llava"
    idk = engine.session("idk")
    for name in ("vanilla", "retrain", "grad_diff"):  # copies: a shipped folder by its path is the shipped model
        engine.session(str(shutil.copytree(folder / name, tmp_path / name)))  # three custom names, a cache of two
    assert engine.session("idk") is idk and len(engine.sessions._custom) == 2


def test_concurrent_first_requests_load_a_model_once(engine):
    fresh = Engine(bench=engine.bench)
    got = []
    threads = [threading.Thread(target=lambda: got.append(fresh.session("retrain"))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 3 and all(s is got[0] for s in got)


@pytest.mark.parametrize(
    "person,photo,message",
    [("9" * 5000, 5, "pick a person"), ("#5", float("nan"), "photo"), ("#5", 9, "photo"), ("#999", 0, "no person")],
)
def test_bad_people_and_photos_are_refused(engine, person, photo, message):
    with pytest.raises(SuaError, match=message):
        next(look(engine, Request(model="idk", person=person, photo=photo)))


def test_an_upload_is_shown_with_the_banner(engine, tmp_path):
    path = tmp_path / "me.png"
    engine.photo(3, 6).resize((150, 150)).save(path)
    p = page.answers_view(next(look(engine, Request(model="idk", person="", photo=5, upload=str(path)), ("story",))))
    assert p.preview_caption == "your photo" and page.UPLOAD_BANNER in p.banner
    assert p.preview.size[0] >= 224 and all(r.truth is None for r in p.story.rows)


def test_about_quotes_the_ceiling_from_the_study_files_and_only_when_they_exist(tmp_path):
    from sua_demo.ui.about.words import about_markdown, ceiling_figures

    def world(c_input: float, c_output: float, retrain_output: float) -> dict:
        def split(inp, out):
            return {
                "clean": {"c": {"gen_em": 10.0}},
                "offset_input": {"c": {"gen_em": 10.0 + inp}},
                "offset_output": {"c": {"gen_em": 10.0 + out}},
            }

        return {
            "idk": {"splits": {"0": split(c_input, c_output), "1": split(c_input + 2, c_output)}},
            "retrain": {"splits": {"0": split(0.0, retrain_output)}},
        }

    assert ceiling_figures(tmp_path) == ""
    runs = ["offsets/a.json", "offsets/b.json", "offsets/missing.json"]
    (tmp_path / "manifest.json").write_text(json.dumps({"studies": {"offsets": {"ceiling": runs}}}))
    assert ceiling_figures(tmp_path) == "", "a manifest whose files are absent quotes nothing"
    (tmp_path / "offsets").mkdir()
    (tmp_path / runs[0]).write_text(json.dumps(world(4.0, 40.0, 1.0)))
    (tmp_path / runs[1]).write_text(json.dumps(world(8.0, 60.0, -3.0)))
    text = ceiling_figures(tmp_path)
    assert "**+7.0**" in text and "**+50.0**" in text and "gains -1.0:" in text and "2 worlds, 2 splits each" in text
    assert "faithful world" not in text
    manifest = {"ceiling": runs, "faithful_ceiling": ["offsets/f.json"]}
    (tmp_path / "manifest.json").write_text(json.dumps({"studies": {"offsets": manifest}}))
    (tmp_path / "offsets" / "f.json").write_text(json.dumps(world(12.0, 45.0, 0.0)))
    assert "faithful world" in ceiling_figures(tmp_path) and "+13.0 at the input, +45.0 on" in ceiling_figures(tmp_path)
    served = ceiling_figures(tmp_path, "faithful")  # the served world's figures lead; the other's follow, named
    assert served.index("In this world") < served.index("**+13.0**") < served.index("In the first world")
    assert "+7.0 at the input, +50.0 on" in served
    shipped = about_markdown(ROOT / "checkpoints" / "noise")
    assert "What limits δ on people it never saw" in shipped and "3 worlds, 3 splits each" in shipped
    assert "In the faithful world" in shipped and "checkpoints/" not in shipped and "`" not in shipped
    assert "This page serves the first world" in shipped and "2-core AMD EPYC" in shipped  # how, in words


def test_the_faithful_worlds_about_quotes_its_own_figures():
    """Issue 42: the faithful world's About called the first world's figures "this world"."""
    from sua_demo.core.config import shipped_world
    from sua_demo.ui.about.words import about_markdown

    world = shipped_world("faithful")
    text = about_markdown(world.noise, world.name, world.audit)
    first = about_markdown(ROOT / "checkpoints" / "noise")
    assert "This page serves the faithful world" in text and "first world" not in text.split("## What limits")[0]
    assert text.split("## The shipped figures")[1][:600] != first.split("## The shipped figures")[1][:600]


def test_one_request_reads_an_upload_once_and_computes_its_story_once(engine, tmp_path, monkeypatch):
    """The page's one call: the answers, the verdict and the map of an upload from one read and one story."""
    import sua_demo.engine.look as looking

    path = tmp_path / "me.png"
    engine.photo(3, 6).resize((150, 150)).save(path)
    reads, stories = [], []
    real_read, real_story = looking.read_image, engine.story
    monkeypatch.setattr(looking, "read_image", lambda p: reads.append(p) or real_read(p))
    monkeypatch.setattr(engine, "story", lambda *a, **k: stories.append(1) or real_story(*a, **k))
    stages = list(look(engine, Request(model="idk", person="", photo=5, upload=str(path))))
    assert len(stages) == 3 and len(reads) == 1 and len(stories) == 1
    seen = stages[-1]
    assert seen.story is not None and seen.points is not None and seen.verdict is None  # an upload has no truth
    assert "δ changed" in page.verdict_view(seen)


def test_a_bench_persons_stages_are_the_story_the_verdict_and_the_map(engine):
    seen = list(look(engine, Request(model="idk", person="#5", photo=5)))[-1]
    assert seen.who.startswith("#5 ") and seen.verdict is not None and seen.verdict.photos == 7
    assert page.verdict_view(seen).count("class='headline'") == 1 and len(seen.points) > 100
    with pytest.raises(SuaError, match="unknown stage"):
        next(look(engine, Request(model="idk", person="#5", photo=5), ("story", "poem")))
