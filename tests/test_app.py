"""The app's handlers on the shipped tiny models: the same functions the UI calls, without a browser."""

import io
import subprocess
import sys
from pathlib import Path

import gradio as gr
import numpy as np
import pytest
import torch
from PIL import Image
from safetensors.torch import save_file

ROOT = Path(__file__).resolve().parent.parent
UNSEEN_FORGET = "#5"  # a forget person the shipped IDK noise never saw (split 0)


def test_importing_the_app_does_no_work():
    code = (
        "import sys, threading, app\n"
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules, 'import loaded the models stack'\n"
        "assert app._engine.cache_info().currsize == 0\n"
        "assert threading.active_count() == 1, 'import started threads'\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


@pytest.fixture(scope="module")
def app():
    import app as module

    return module


def ask(app, person=UNSEEN_FORGET, photo=5, upload=None, question="", source="shipped", noise_file=None, model="idk"):
    return app.answer(model, "", person, photo, upload, question, source, noise_file, None, "gaussian")


def test_load_model_lists_people_and_marks_the_attacker_set(app):
    status, person, gallery = app.load_model("idk", "")
    assert "LlavaForConditionalGeneration" in status and "64 px" in status
    assert len(gallery) == 100 and len(person["choices"]) == 100
    labels = person["choices"]
    assert labels[0].startswith(UNSEEN_FORGET) and "unseen by δ" in labels[0]
    assert sum("in δ's attacker set" in x for x in labels) == 8 and sum("(retain)" in x for x in labels) == 85


def test_a_model_that_cannot_be_loaded_gives_a_clear_message(app):
    with pytest.raises(gr.Error, match="no model folder"):
        app.load_model("idk", "/nowhere/model")
    with pytest.raises(gr.Error, match="local cache"):
        app.load_model("idk", "someone/not-a-cached-model")


def test_shipped_noise_changes_answers_on_a_person_it_never_saw(app):
    images, rows, metrics, note = ask(app)
    assert len(images) == 5 and all(im.size == (256, 256) for im, _ in images)
    assert len(rows) == 5 and all(r[1] != "?" for r in rows)  # bench person: truths known
    assert "refused" in rows[0][2], "the IDK model refuses the name question on the clean photo"
    assert any("✓" in r[3] for r in rows), f"the shipped noise should bring back a true answer: {rows}"
    linf = float(dict(metrics)["L∞ (×255)"])
    assert 0 < linf <= 16.05
    assert "unseen by δ" in note


def test_free_question_is_answered_and_an_overlong_one_refused(app):
    _, rows, _, _ = ask(app, question="Where was this person born?")
    assert len(rows) == 6 and rows[-1][1] == "?"
    with pytest.raises(gr.Error, match="characters"):
        ask(app, question="why " * 200)


def _encoded(im: Image.Image, fmt: str, **kw) -> bytes:
    buf = io.BytesIO()
    im.save(buf, format=fmt, **kw)
    return buf.getvalue()


def _photo() -> Image.Image:
    from sua_demo.bench import build_bench

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
def test_uploads_in_any_common_format_are_answered(app, tmp_path, name, make):
    path = tmp_path / name
    path.write_bytes(make(_photo()))
    images, rows, _, note = ask(app, upload=str(path))
    assert len(rows) == 5 and all(r[1] == "?" for r in rows)  # an upload has no known truths
    assert images[0][0].size == (256, 256)
    if "animated" in name:
        assert "first frame" in note


@pytest.mark.parametrize(
    "name, data, message",
    [
        ("notes.png", b"this is not an image", "not an image"),
        ("tiny.png", _encoded(Image.new("RGB", (1, 1)), "PNG"), "at least 8x8"),
    ],
)
def test_bad_uploads_give_a_clear_error(app, tmp_path, name, data, message):
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(gr.Error, match=message):
        ask(app, upload=str(path))


def test_truncated_and_bomb_uploads(app, tmp_path):
    from tests.test_images import png_bytes

    whole = _encoded(_photo().resize((300, 300)), "JPEG")
    (tmp_path / "cut.jpg").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(gr.Error, match="truncated"):
        ask(app, upload=str(tmp_path / "cut.jpg"))
    (tmp_path / "bomb.png").write_bytes(png_bytes(30000, 30000))
    with pytest.raises(gr.Error, match="megapixels"):
        ask(app, upload=str(tmp_path / "bomb.png"))


def test_unknown_person_or_denoiser_gives_a_clear_error(app):
    with pytest.raises(gr.Error, match="no person #999"):
        ask(app, person="999")
    with pytest.raises(gr.Error, match="unknown denoiser"):
        app.answer("idk", "", UNSEEN_FORGET, 5, None, "", "shipped", None, None, "wavelet")
    with pytest.raises(gr.Error, match="no person #0"):
        app.show_person("#0 nobody", 0)


def test_a_stop_keeps_the_noise_so_far(app):
    request = gr.Request(session_hash="stop-test")
    run = app.optimise("idk", "", 16, 200, "gaussian", 1.0, request)
    next(run)  # the first streamed update: the worker is running
    assert "stopping" in app.stop_optimising(request)
    *_, (_, status, files, path, _) = run
    assert status.startswith("stopped early") and len(files) == 2 and path.endswith(".safetensors")
    assert "nothing is being optimised" in app.stop_optimising(request)


def test_uploaded_noise_files_are_validated(app, tmp_path):
    good = ROOT / "checkpoints" / "noise" / "idk" / "delta_split0.safetensors"
    _, rows, _, _ = ask(app, source="uploaded", noise_file=str(good))
    assert len(rows) == 5
    bad = {
        "shape.safetensors": ({"delta": torch.zeros(3, 32, 32)}, "32 px"),
        "nan.safetensors": ({"delta": torch.full((3, 64, 64), float("nan"))}, "NaN"),
    }
    for name, (tensors, message) in bad.items():
        save_file(tensors, str(tmp_path / name), metadata={"eps": str(16 / 255)})
        with pytest.raises(gr.Error, match=message):
            ask(app, source="uploaded", noise_file=str(tmp_path / name))
    (tmp_path / "pickle.safetensors").write_bytes(b"\x80\x04\x95not safetensors")
    with pytest.raises(gr.Error, match="not a valid safetensors"):
        ask(app, source="uploaded", noise_file=str(tmp_path / "pickle.safetensors"))
    with pytest.raises(gr.Error, match="upload a .safetensors"):
        ask(app, source="uploaded", noise_file=None)
    save_file({"delta": torch.zeros(3, 64, 64)}, str(tmp_path / "eps.safetensors"), metadata={"eps": "lots"})
    with pytest.raises(gr.Error, match="non-numeric 'eps'"):
        ask(app, source="uploaded", noise_file=str(tmp_path / "eps.safetensors"))


def test_embedding_map_has_the_bench_sample_and_the_users_image(app):
    fig = app.embedding_map("idk", "", UNSEEN_FORGET, 5, None, "shipped", None, None, "gaussian")
    n = sum(len(t.x) for t in fig.data)
    assert 190 <= n <= 210
    names = {t.name for t in fig.data}
    assert {"clean · forget", "noisy · retain", "denoised · your image"} <= names


def test_optimise_streams_progress_and_offers_the_noise(app):
    from sua_demo.attacks import load_noise

    steps = list(app.optimise("idk", "", 16, 3, "gaussian", 1.0, gr.Request(session_hash="t")))
    *live, (fig, status, files, path, source) = steps
    assert live, "the loss curve must be streamed while optimising"
    assert "3 steps" in status and source["value"] == "optimised"
    assert [Path(f).suffix for f in files] == [".safetensors", ".png"]
    noise = load_noise(path, 64)
    assert float(noise.delta.abs().max()) <= 16 / 255 + 1e-6 and float(noise.delta.abs().max()) > 0
    assert len(fig.data[0].x) == 3


def test_a_stop_pressed_while_queued_cancels_the_run(app):
    """The click arms the stop before the run queues; a Stop pressed while it waits cancels it at its turn."""
    request = gr.Request(session_hash="queued-stop")
    app.arm_stop(request)
    assert "stopping" in app.stop_optimising(request)
    updates = list(app.optimise("idk", "", 16, 200, "gaussian", 1.0, request))
    assert len(updates) == 1 and updates[0][1] == "stopped before it started"
    assert "nothing is being optimised" in app.stop_optimising(request)


def test_the_optimise_controls_start_at_the_library_recipe(app):
    """The app's sliders read AttackConfig, so a recipe change reaches the UI, the CLI and the shipped noises alike."""
    from sua_demo.attacks import AttackConfig

    recipe = AttackConfig()
    labels = {b.label: b.value for b in app.build_app().blocks.values() if isinstance(b, gr.Slider | gr.Dropdown)}
    assert labels["ε (/255)"] == round(recipe.eps * 255)
    assert labels["stealth weight λ"] == recipe.stealth_weight
    assert labels["denoiser in the loss"] == recipe.denoiser
