"""The app's handlers on the shipped tiny models: the same functions the UI calls, without a browser."""

import io
import re
import subprocess
import sys
from pathlib import Path

import gradio as gr
import numpy as np
import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parents[2]


def test_importing_the_app_does_no_work():
    code = (
        "import sys, threading, app\n"
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules, 'import loaded the models stack'\n"
        "assert 'sua_demo.ui.shared.server' not in sys.modules, 'import built the app state'\n"
        "assert threading.active_count() == 1, 'import started threads'\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_help_says_how_to_serve_and_starts_nothing():
    out = subprocess.run([sys.executable, "app.py", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "--port" in out.stdout and "GRADIO_SERVER_PORT" in out.stdout, out.stderr[-2000:]
    assert "loaded" not in out.stderr, "--help loaded a model"


def test_flags_override_the_environments_host_and_port(monkeypatch, tmp_path):
    from sua_demo.ui.serving.launch import app_arguments, launch_kwargs

    monkeypatch.setenv("PORT", "9000")
    assert launch_kwargs(tmp_path)["server_port"] == 9000
    args = app_arguments(["--host", "0.0.0.0", "--port", "8000"])
    kwargs = launch_kwargs(tmp_path, args.host, args.port)
    assert (kwargs["server_name"], kwargs["server_port"]) == ("0.0.0.0", 8000)


def test_app_py_is_the_tabs_and_the_api():
    """app.py reaches the library only through `sua_demo.ui`, and lays out no tab itself: each tab it lists is a
    folder of `sua_demo/ui` with its title, its layout and its handlers (a tab's layout and wiring are read in
    one place, not packed into app.py)."""
    import ast
    import importlib

    import app

    tree = ast.parse((ROOT / "app.py").read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    ours = {m for m in imported if m.split(".")[0] == "sua_demo"}
    assert ours and all(m == "sua_demo.ui" or m.startswith("sua_demo.ui.") for m in ours), ours
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func).startswith("gr.") and
                ast.unparse(n.func) not in ("gr.Tabs", "gr.Tab", "gr.Markdown")]  # fmt: skip
    assert app.TABS == ("attack", "batch", "audit", "your_face", "about")
    for name in app.TABS:
        tab = importlib.import_module(f"sua_demo.ui.{name}")
        assert tab.TITLE and callable(tab.build) and (ROOT / "sua_demo" / "ui" / name / "layout.py").is_file()


def test_the_queue_polls_calmly_and_runs_two_jobs():
    """Gradio's own 1 ms poll took the GIL from the attack thread a thousand times a second."""
    from sua_demo.ui.serving.launch import CONCURRENCY, QUEUE_POLL, queued

    with gr.Blocks() as demo:
        gr.Button()
    queue = queued(demo)._queue
    assert queue.sleep_when_free >= QUEUE_POLL and queue.default_concurrency_limit == CONCURRENCY == 2


@pytest.fixture(scope="module")
def app():
    """The Attack tab's handlers (sua_demo/ui/attack/handlers.py), as its layout wires them (the API's are tested
    served)."""
    from sua_demo.ui.attack import handlers

    return handlers


@pytest.fixture(scope="module")
def first(app):
    """The guided first run: the model's best measured example."""
    from sua_demo.ui.attack import actions

    return actions.load(app.state(), "idk")


def shown(app, person, photo=5, upload=None, question="", source="shipped", noise_file=None, model="idk",
          denoiser="gaussian"):  # fmt: skip
    """What the page's one action shows first: the answers' eight outputs, then the verdict (the map is left out)."""
    from sua_demo.engine.request import Request
    from sua_demo.ui.serving.gradio_parts import handler

    req = Request(model=model, person=person, photo=photo, upload=upload, question=question, noise_source=source,
                  noise_file=noise_file, denoiser=denoiser)  # fmt: skip
    run = handler(app.show_page)(req)
    answers, verdict = next(run)[:8], next(run)[8]
    run.close()
    return answers, verdict


def ask(app, person, photo=5, upload=None, question="", source="shipped", noise_file=None, model="idk", **kw):
    return shown(app, person, photo, upload, question, source, noise_file, model, **kw)[0]


def test_load_starts_on_a_measured_example_and_badges_every_person(app, first):
    status, thumbs, people, photo, samples = app.load_widgets("idk", "", "all")
    size = app.state().engine.session("idk").image_size  # the served world's photos (112 px on the default one)
    assert f"{size}-pixel" in status and "Llava" not in status, "the status names no class"
    assert len(thumbs["value"]) == 100 and "IDK" in thumbs["label"] and len(people["choices"]) == 100
    assert people["value"] == first.person and (first.person.isdigit())  # the value is the number the API takes
    label = dict((v, k) for k, v in first.people)[first.person]
    role = "attacker set" if "was fitted on" in first.examples_label else "unseen by δ"  # as the chips' label says
    assert role in label and photo["value"] == first.photo and samples["samples"]


def test_a_model_change_keeps_the_person(app, first):
    _, _, people, photo, _ = app.load_widgets("grad_diff", first.person, "all")
    assert people["value"] == first.person and "value" not in photo
    table, note, *_ = ask(app, people["value"], model="grad_diff")
    assert "model **GradDiff (gradient difference)**" in note


def test_the_guided_example_shows_delta_bringing_an_answer_back_and_its_controls_not(app, first):
    (table, note, preview, views, slider, metrics, files, banner), html = shown(app, first.person, first.photo)
    assert table.count("<tr>") == 6 and banner == ""
    rows = [r.split("</td>") for r in table.split("<tr>")[2:]]
    cols = ["truth", "vanilla", "clean", "delta", "random", "retrain_delta", "denoised"]
    wins = [dict(zip(cols, r, strict=False)) for r in rows]
    assert any("✓" in w["delta"] and "✓" not in w["random"] and "✓" not in w["retrain_delta"] for w in wins), table
    from PIL import Image

    assert Image.open(preview[0][0]).size[0] >= 224 and len(views) == 4 and len(slider) == 2
    largest = re.search(r"largest change of one pixel \(of 255\)</th><td>([\d.]+)</td>", metrics)
    assert largest and 0 < float(largest[1]) <= 16.05, metrics  # how visible δ is: an HTML table, every path
    assert [Path(f).suffix for f in files] == [".csv", ".json"]
    assert "δ brings back" in html and "retrain control + δ" in html and "random noise" in html


def test_the_warm_up_computes_the_first_example_and_fits_the_map_before_it_returns(app):
    """app.py serves only after the warm-up: its UMAP compile in the background made the first click wait 15-25 s,
    and a class opening the first example at once computed its story and verdict thirty times (issue 56)."""
    from sua_demo.engine.look import look
    from sua_demo.engine.model_cache import DEFAULT_MODEL
    from sua_demo.engine.request import Request
    from sua_demo.ui.serving.launch import warm_up

    state = app.state()
    from sua_demo.ui.attack.actions import load

    first = load(state, DEFAULT_MODEL)
    warm_up(state, first.person, first.photo)
    eng = state.engine
    sess = eng.session(DEFAULT_MODEL)
    assert sess.maps, "the embedding map was fitted"
    kept = len(eng._verdicts), len(eng._stories)
    seen = list(look(eng, Request(model=DEFAULT_MODEL, person=first.person, photo=first.photo)))[-1]
    assert (len(eng._verdicts), len(eng._stories)) == kept  # the page's first request: both already computed
    assert seen.verdict is eng.person_verdict(sess, int(first.person), sess.shipped_noise, *eng.controls(sess))


def test_a_free_question_is_answered_and_an_overlong_one_refused(app, first):
    table, *_ = ask(app, first.person, question="Where was this person born?")
    assert table.count("<tr>") == 7
    with pytest.raises(gr.Error, match="characters"):
        ask(app, first.person, question="why " * 200)


def _encoded(im: Image.Image, fmt: str, **kw) -> bytes:
    buf = io.BytesIO()
    im.save(buf, format=fmt, **kw)
    return buf.getvalue()


def _photo() -> Image.Image:
    from sua_demo.dataset import build_bench

    return build_bench().person(2).photos[5]


@pytest.mark.parametrize(
    "name, make",
    [
        ("face.jpg", lambda im: _encoded(im, "JPEG", quality=95)),
        ("face.webp", lambda im: _encoded(im, "WEBP")),
        ("face_cmyk.jpg", lambda im: _encoded(im.convert("CMYK"), "JPEG")),
        ("face_palette.png", lambda im: _encoded(im.convert("P"), "PNG")),
        ("face_alpha.png", lambda im: _encoded(im.convert("RGBA"), "PNG")),
        ("face_16bit.png", lambda im: _encoded(Image.fromarray(np.asarray(im.convert("L"), np.uint16) * 257), "PNG")),
        (
            "face_animated.gif",
            lambda im: _encoded(im, "GIF", save_all=True, append_images=[im.rotate(90)], duration=40, loop=0),
        ),
    ],
)
def test_uploads_in_any_common_format_are_answered_and_shown(app, tmp_path, name, make):
    path = tmp_path / name
    path.write_bytes(make(_photo()))
    (table, note, preview, *_, banner), verdict = shown(app, "", upload=str(path))
    assert "<td>?</td>" in table and preview[0][1] == "your photo" and "fictitious" in banner
    if "animated" in name:
        assert "first frame" in note
    assert "δ changed" in verdict


@pytest.mark.parametrize(
    "name, data, message",
    [
        ("notes.png", b"this is not an image", "not an image"),
        ("tiny.png", _encoded(Image.new("RGB", (1, 1)), "PNG"), "at least 8x8"),
        ("strip.png", _encoded(Image.new("RGB", (20000, 8)), "PNG"), "strip"),
    ],
)
def test_bad_uploads_give_a_clear_error(app, tmp_path, name, data, message):
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(gr.Error, match=message):
        ask(app, "", upload=str(path))


def test_unknown_person_or_denoiser_gives_a_clear_error(app, caplog):
    with pytest.raises(gr.Error, match="no person #999"):
        ask(app, "999")
    with pytest.raises(gr.Error, match="unknown denoiser"):
        ask(app, "#5", denoiser="wavelet")
    assert "Traceback" not in caplog.text and "user error in show_page: no person #999" in caplog.text


def test_optimise_streams_progress_and_offers_last_and_best(app):
    from sua_demo.attacks import load_noise

    steps = list(app.optimise_on_page("idk", 16, 3, "gaussian", 100.0, request=gr.Request(session_hash="t")))
    *live, (fig, status, preview, files) = steps
    path = files[0]
    assert "3 steps" in status and preview is not None
    unhashed = sorted(re.sub(r"_[0-9a-f]{12}", "", Path(f).name) for f in files)  # named by content (issue 26)
    assert unhashed == sorted(
        f"sua_idk_eps16_{k}{s}" for k in ("last", "best") for s in (".safetensors", "_amplified.png")
    )
    noise = load_noise(path, app.state().engine.session("idk").image_size)
    assert 0 < float(noise.delta.abs().max()) <= 16 / 255 + 1e-6 and noise.meta["model"] == "idk"
    assert len(fig.data[0].x) == 3


def test_a_stop_keeps_the_noise_so_far_and_a_stop_with_nothing_running_changes_nothing(app):
    request = gr.Request(session_hash="stop-test")
    run = app.optimise_on_page("idk", 16, 200, "gaussian", 100.0, request=request)
    next(run)
    assert app.stop_on_page(request) == gr.skip()  # the run says it stops, in its own status line (one writer)
    *_, (_, status, _, files) = run
    path = files[0]
    assert status.startswith("stopped early") and re.search(r"_last_[0-9a-f]{12}\.safetensors$", path)
    assert any(re.search(r"_best_[0-9a-f]{12}\.safetensors$", f) for f in files), (
        f"a stopped run keeps its lowest-loss δ too: {files}"
    )
    assert app.stop_on_page(request) == "nothing is running to stop"


def test_a_stop_pressed_while_queued_cancels_the_run(app):
    request = gr.Request(session_hash="queued-stop")
    app.arm_stop(request)
    assert app.stop_on_page(request) == gr.skip()
    updates = list(app.optimise_on_page("idk", 16, 200, "gaussian", 100.0, request=request))
    assert len(updates) == 1 and updates[0][1] == "stopped before it started"


@pytest.mark.parametrize(
    "eps, steps, stealth, message",
    [(16, float("nan"), 100, "steps"), (16, 10, float("nan"), "stealth"), (0, 10, 100, "eps"), ("x", 10, 1, "eps")],
)
def test_optimise_refuses_bad_numbers(app, eps, steps, stealth, message):
    with pytest.raises(gr.Error, match=message):
        list(app.optimise_on_page("idk", eps, steps, "gaussian", stealth, request=gr.Request(session_hash="bad")))


def test_the_controls_start_at_the_library_recipe(app):
    """The page's sliders read AttackConfig, so a recipe change reaches the UI, the CLI and the noises alike."""
    from sua_demo.attacks import AttackConfig

    recipe = AttackConfig()
    import app as page

    blocks = [b for b in page.build_app().blocks.values() if isinstance(b, gr.Slider | gr.Dropdown)]
    values = {b.label: b.value for b in blocks}
    assert values["ε (/255)"] == round(recipe.eps * 255) and values["stealth weight λ"] == recipe.stealth_weight
    assert values["denoiser in the loss"] == recipe.denoiser
    denoisers = next(b for b in blocks if b.label == "denoiser in the loss").choices
    assert {c[0] for c in denoisers} == {"gaussian", "median", "jpeg", "dncnn", "ddpm"}
