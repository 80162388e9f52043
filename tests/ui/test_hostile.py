"""Hostile inputs and faults (issue 26, item 10): every one is refused or survived in one line that names no
library and no server path, never a raw parser, decoder or loader message."""

from __future__ import annotations

import errno
import fcntl
import io
import json
import os
import pickle
import re
import shutil
import signal
import struct
import subprocess
import sys
import time
import urllib.request
import zlib
from pathlib import Path
from typing import Any

import pytest
import torch
from conftest import free_port
from PIL import EpsImagePlugin, Image, PngImagePlugin
from safetensors.torch import save

from sua_demo.attacks.noise import Noise, load_noise
from sua_demo.cli import main
from sua_demo.core.config import CHECKPOINTS
from sua_demo.core.errors import SuaError
from sua_demo.core.images import read_image, strip_png_metadata
from sua_demo.engine import Story, StoryRow
from sua_demo.models.loading import check_safetensors, load_adapter, load_failure
from sua_demo.ui.shared import exports
from sua_demo.ui.shared.exports import Scratch

LIBRARIES = ("pillow", "safetensors", "torch", "transformers", "huggingface", "pickle", "recursion", "traceback")
TINY = CHECKPOINTS / "tiny-llava"


def one_line(err: BaseException, allow: tuple[str, ...] = ()) -> str:
    """The message, checked to be one line that names no library (but the file formats in `allow`)."""
    text = str(err)
    assert "\n" not in text and text, text
    words = text.lower().replace(".safetensors", "").replace("pytorch_model.bin", "")  # file names, not libraries
    assert not any(name in words for name in LIBRARIES if name not in allow), text
    return text


# -- 1. noise metadata ----------------------------------------------------------------------------------------
def _noise_file(tmp_path, meta: dict[str, str], delta: torch.Tensor | None = None):
    path = tmp_path / "n.safetensors"
    d = torch.zeros(3, 8, 8) if delta is None else delta
    path.write_bytes(save({"delta": d}, metadata=meta))
    return path


@pytest.mark.parametrize(
    "meta, words",
    [
        ({"eps": "0.05", "config": "[" * 100_000 + "]" * 100_000}, "too long, too deeply nested"),
        ({"eps": "0.05", "config": "[" * 5_000 + "]" * 5_000}, "too long, too deeply nested"),
        ({"eps": "0.05", "step": "9" * 4500}, "too many digits"),
        ({"eps": "0.05", "step": "9" * 4000}, "too many digits"),
        ({"eps": "1" * 4000}, "too many digits"),
        ({"eps": "0." + "1" * 5000}, "too many digits"),
        ({"eps": "true"}, "non-numeric 'eps'"),
        ({"eps": "false"}, "non-numeric 'eps'"),
        ({"eps": "[0.05]"}, "non-numeric 'eps'"),
        ({"eps": "1e999"}, "eps must be in (0, 1]"),
    ],
)
def test_hostile_noise_metadata_is_one_line(tmp_path, meta, words):
    with pytest.raises(SuaError) as err:
        load_noise(_noise_file(tmp_path, meta))
    assert words in one_line(err.value)


def test_ordinary_metadata_still_reads(tmp_path):
    meta = {"eps": "0.05", "config": json.dumps({"steps": 4, "nested": [[1, [2]]]}), "note": "a [bracket"}
    noise = load_noise(_noise_file(tmp_path, meta))
    assert noise.eps == 0.05 and noise.meta["config"]["nested"] == [[1, [2]]] and noise.meta["note"] == "a [bracket"


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"garbage",
        struct.pack("<Q", 2**40) + b"{}",  # a header length far beyond the file: "header too large"
        struct.pack("<Q", 10) + b"not json!!",
        save({"delta": torch.zeros(3, 8, 8)}, metadata={"eps": "0.05"})[:-20],  # truncated
    ],
)
def test_a_file_that_is_not_safetensors_is_one_plain_line(tmp_path, data):
    path = tmp_path / "n.safetensors"
    path.write_bytes(data)
    with pytest.raises(SuaError) as err:
        load_noise(path)
    assert "not a readable noise file" in one_line(err.value) and "header" not in str(err.value)


def test_an_integer_noise_names_its_dtype_without_the_library(tmp_path):
    with pytest.raises(SuaError) as err:
        load_noise(_noise_file(tmp_path, {"eps": "0.05"}, torch.zeros(3, 8, 8, dtype=torch.int64)))
    assert "got int64" in one_line(err.value)


# -- 2. images --------------------------------------------------------------------------------------------------
def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def _png(*extra: bytes, after_pixels: bool = False) -> bytes:
    """A 16x16 PNG with `extra` chunks after its header (or after its pixel data)."""
    buf = io.BytesIO()
    Image.new("RGB", (16, 16), (10, 200, 30)).save(buf, "PNG")
    data = buf.getvalue()
    at = data.rindex(b"IEND") - 4 if after_pixels else 33  # 8-byte signature + the 25-byte IHDR chunk
    return data[:at] + b"".join(extra) + data[at:]


BIG = zlib.compress(b"\0" * (PngImagePlugin.MAX_TEXT_CHUNK + 1))


@pytest.mark.parametrize(
    "data",
    [
        _png(_chunk(b"zTXt", b"comment\0\0" + BIG)),
        _png(_chunk(b"iTXt", b"comment\0\1\0\0\0" + BIG)),
        _png(_chunk(b"iCCP", b"profile\0\0" + BIG)),
        _png(_chunk(b"zTXt", b"comment\0\0" + BIG), after_pixels=True),
    ],
    ids=["zTXt", "iTXt", "iCCP", "zTXt-after-pixels"],
)
def test_a_png_whose_metadata_exceeds_the_decoders_caps_is_read_without_it(data):
    with pytest.raises(ValueError):  # the decoder alone refuses the picture
        Image.open(io.BytesIO(data)).load()
    rgb, notes = read_image(data)
    assert rgb.size == (16, 16) and rgb.getpixel((3, 3)) == (10, 200, 30) and "image metadata dropped" in notes


def test_a_png_with_too_much_text_in_all_is_read_without_it(monkeypatch):
    monkeypatch.setattr(PngImagePlugin, "MAX_TEXT_MEMORY", 2**20)  # the same check, at a size a test can afford
    text = zlib.compress(b"a" * 600_000)
    rgb, notes = read_image(_png(*(_chunk(b"zTXt", b"k%d\0\0" % i + text) for i in range(3))))
    assert rgb.size == (16, 16) and "image metadata dropped" in notes


def test_an_ordinary_png_keeps_its_metadata_and_gets_no_note():
    rgb, notes = read_image(_png(_chunk(b"tEXt", b"Comment\0hello")))
    assert rgb.size == (16, 16) and notes == []


def test_stripping_leaves_a_png_that_runs_past_its_end_as_it_is():
    data = _png()
    broken = data[:33] + struct.pack(">I", 2**31) + b"zTXt" + b"x" * 10
    assert strip_png_metadata(broken) == broken


def _encoded(fmt: str) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (16, 16), (1, 2, 3)).save(buf, fmt)
    return buf.getvalue()


@pytest.mark.parametrize(
    "data",
    [
        b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 16 16\n%%EndComments\nshowpage\n",
        _encoded("TIFF"),
        _encoded("PPM"),
        _encoded("ICO"),
    ],
    ids=["eps", "tiff", "ppm", "ico"],
)
def test_formats_beyond_the_accepted_ones_never_reach_a_decoder(data, monkeypatch):
    opened = []
    monkeypatch.setattr(EpsImagePlugin.EpsImageFile, "_open", lambda self: opened.append(1))
    with pytest.raises(SuaError) as err:
        read_image(data)
    assert "JPEG, PNG, WebP, GIF or BMP" in one_line(err.value) and not opened


@pytest.mark.parametrize("fmt", ["JPEG", "PNG", "WEBP", "GIF", "BMP"])
def test_every_accepted_format_reads(fmt):
    rgb, _ = read_image(_encoded(fmt))
    assert rgb.size == (16, 16) and rgb.mode == "RGB"


def test_a_decoding_failure_quotes_no_decoder_message():
    data = _encoded("JPEG")
    with pytest.raises(SuaError) as err:
        read_image(data[: len(data) // 2])
    text = one_line(err.value)
    assert "truncated or corrupt" in text and "(" not in text and "image file is truncated" not in text


# -- 3. weights ----------------------------------------------------------------------------------------------------
FORMATS_NAMED = ("safetensors", "pickle")  # the weights' formats are what a person must convert between


def _pickled_model(folder):
    """A model folder as a pickle-era checkpoint ships it: the shipped tiny model's config, only a .bin."""
    folder.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "processor_config.json"):
        shutil.copy(TINY / "vanilla" / name, folder / name)
    torch.save({"weight": torch.zeros(1)}, folder / "pytorch_model.bin")
    return folder


@pytest.fixture
def no_unpickling(monkeypatch):
    """Fails the test if anything unpickles (torch.load) while it runs."""
    calls = []
    monkeypatch.setattr(torch, "load", lambda *a, **k: calls.append(a) or pytest.fail("torch.load was called"))
    return calls


def test_a_model_folder_with_only_pickled_weights_is_refused_before_loading(tmp_path, no_unpickling):
    folder = _pickled_model(tmp_path / "m")
    with pytest.raises(SuaError) as err:
        load_adapter(folder)
    text = one_line(err.value, allow=FORMATS_NAMED)
    assert "holds no .safetensors weights" in text and "pytorch_model.bin" in text and "convert it" in text
    assert not no_unpickling


def test_a_lora_folder_with_only_pickled_weights_is_refused_before_loading(tmp_path, no_unpickling):
    folder = tmp_path / "lora"
    folder.mkdir()
    shutil.copy(TINY / "ga_lora" / "adapter_config.json", folder / "adapter_config.json")
    torch.save({"weight": torch.zeros(1)}, folder / "adapter_model.bin")
    with pytest.raises(SuaError) as err:
        load_adapter(folder)
    assert "holds no adapter_model.safetensors" in one_line(err.value, allow=FORMATS_NAMED)


def test_check_safetensors_passes_a_shipped_model_and_refuses_an_empty_folder(tmp_path):
    check_safetensors(TINY / "vanilla")
    check_safetensors(TINY / "ga_lora", lora=True)
    with pytest.raises(SuaError) as err:
        check_safetensors(tmp_path)
    assert "no weights" in one_line(err.value, allow=FORMATS_NAMED)


@pytest.mark.parametrize("name", ["bad repo id!!", "a b", "-lead/x", "x" * 200])
def test_an_invalid_hub_id_is_one_line(name):
    with pytest.raises(SuaError) as err:
        load_adapter(name)
    text = one_line(err.value)
    assert "valid Hub id" in text and "repo id must" not in text.lower()


@pytest.mark.parametrize(
    "err, words",
    [
        (
            pickle.UnpicklingError(
                "Weights only load failed. Re-running `torch.load` with `weights_only` set to "
                "`False` will likely succeed, but it can result in arbitrary code execution."
            ),
            "holds pickled weights",
        ),
        (
            OSError("x does not appear to have a file named model.safetensors or pytorch_model.bin"),
            "holds no .safetensors weights",
        ),
        (OSError("We couldn't connect to 'https://huggingface.co' to load the files"), "local Hub cache"),
        (OSError("Unable to load weights from checkpoint: header too large"), "truncated or corrupt"),
    ],
)
def test_library_load_failures_become_our_one_line(err, words):
    wrapped = OSError("Unable to load weights from pytorch checkpoint file")
    wrapped.__cause__ = err
    for raised in (err, wrapped):
        text = one_line(load_failure(raised, "org/name", local=False), allow=FORMATS_NAMED)
        assert words in text and "arbitrary code" not in text and "huggingface.co" not in text


# -- 4. exports ----------------------------------------------------------------------------------------------------
def _story(answer: str = "Glenmere", vanilla: str | None = "/srv/private/models/vanilla-7b") -> Story:
    blank = torch.zeros(3, 8, 8)
    row = StoryRow("Where was this person born?", "Glenmere", {"vanilla": answer, "clean": "I don't know"})
    return Story(
        model="/srv/private/models/idk-7b",
        controls={"vanilla": vanilla, "retrain": "/srv/private/models/retrain-7b"},
        who="#1",
        rows=[row],
        clean=blank,
        noisy=blank,
        denoised=blank,
        delta_view=blank,
        diff_view=blank,
        pixels={"linf_255": 16.0},
        cosines={},
    )


def test_the_same_answers_reuse_their_files_and_other_answers_get_others(tmp_path):
    scratch = Scratch(tmp_path / "s")
    first = exports.write_story(scratch.folder(), _story(), "shipped", "median")
    again = exports.write_story(scratch.folder(), _story(), "shipped", "median")
    other = exports.write_story(scratch.folder(), _story("Aldmoor"), "shipped", "median")
    assert first == again and set(first).isdisjoint(other)
    assert [p.suffix for p in first] == [".csv", ".json"]
    assert all(re.fullmatch(r"sua_answers_[0-9a-f]{12}\.(csv|json)", p.name) for p in first + other)
    assert len(list(scratch.root.rglob("*"))) == 1 + 4  # the files folder and four files, however often asked


def test_exports_name_no_server_path(tmp_path):
    story = _story()
    out = exports.write_story(tmp_path, story, "shipped", "median") + exports.write_story(
        tmp_path, _story(vanilla=None), "shipped", "median"
    )
    for path in out:
        text = path.read_text(encoding="utf-8")
        assert "/srv/private" not in text and "/srv" not in path.name, text
    data = json.loads(out[1].read_text(encoding="utf-8"))
    assert (data["model"], data["before_unlearning"], data["retrain_control"]) == ("idk-7b", "vanilla-7b", "retrain-7b")
    assert json.loads(out[3].read_text(encoding="utf-8"))["before_unlearning"] is None


def test_noise_downloads_are_named_by_content_and_pair_up(tmp_path):
    noise = Noise(torch.full((3, 8, 8), 0.01), 16 / 255, {"model": "idk"})
    path, png = exports.write_noise(tmp_path, noise, "sua_idk_eps16_last")
    assert exports.write_noise(tmp_path, noise, "sua_idk_eps16_last") == [path, png]
    assert re.fullmatch(r"sua_idk_eps16_last_[0-9a-f]{12}\.safetensors", path.name)
    assert png.name == f"{path.stem}_amplified.png" and load_noise(path).eps == pytest.approx(16 / 255)
    other, _ = exports.write_noise(tmp_path, Noise(torch.zeros(3, 8, 8), 16 / 255), "sua_idk_eps16_last")
    assert other != path


def test_a_model_name_becomes_a_safe_file_name_part():
    assert exports.safe_stem("org/model name") == "org_model_name" and exports.safe_stem("../..") == "model"


# -- 6. the CLI's --out and its checkpoints --------------------------------------------------------------------
QUICK = ["--people", "20", "--forget", "10", "--bench-seed", "1", "--batch-size", "2", "--no-eot"]
QUICK += ["--stealth-weight", "0", "--precision", "fp32", "--device", "cpu", "--dtype", "float32"]


def _cli(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


@pytest.fixture
def read_only(tmp_path, monkeypatch):
    """A folder this process cannot write in (root ignores permissions, so for root the check is told so)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    if os.geteuid() == 0:
        real = os.access
        monkeypatch.setattr(os, "access", lambda p, mode, **k: False if Path(p) == folder else real(p, mode, **k))
    yield folder
    folder.chmod(0o755)


@pytest.mark.parametrize(
    "argv",
    [
        ["attack", "MODEL", "--out", "{ro}/d.safetensors"],
        ["attack-eval", "MODEL", "--out", "{ro}/protocol"],
        ["eval", "MODEL", "--out", "{ro}/eval.json"],
        ["audit", "MODEL", "--out", "{ro}/audit"],
        ["build-noises", "--out", "{ro}/deep/noises"],
        ["mllmu-protocol", "MODEL", "--mllmu", "nowhere", "--out", "{ro}/p"],
    ],
    ids=["attack", "attack-eval", "eval", "audit", "build-noises", "mllmu-protocol"],
)
def test_a_read_only_out_is_refused_before_the_first_step(capsys, read_only, argv, monkeypatch):
    started = []
    monkeypatch.setattr("sua_demo.cli.common.bench_of", lambda *a: started.append(1) or pytest.fail("the run started"))
    code, err = _cli(capsys, *(a.replace("{ro}", str(read_only)) for a in argv))
    assert code == 2 and err.count("\n") == 1 and "is read-only here" in err and not started, err


@pytest.mark.parametrize("out", ["f.txt/d.safetensors", "f.txt/deeper/d.safetensors"])
def test_an_out_under_a_regular_file_is_refused_before_the_first_step(capsys, tmp_path, out):
    (tmp_path / "f.txt").write_text("a file")
    code, err = _cli(capsys, "attack", "MODEL", "--out", str(tmp_path / out))
    assert code == 2 and err.count("\n") == 1 and "which is a file, not a folder" in err, err
    code, err = _cli(capsys, "attack-eval", "MODEL", "--out", str(tmp_path / "f.txt"))
    assert code == 2 and "is a file, not a folder" in err


def test_a_full_disk_while_saving_is_one_line_that_says_it_resumes(capsys, saved_micro, tmp_path, monkeypatch):
    def full(path, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("sua_demo.attacks.noise.atomic_write_bytes", full)
    out = tmp_path / "d.safetensors"
    code, err = _cli(capsys, "attack", str(saved_micro), "--out", str(out), "--steps", "2", "--save-every", "1", *QUICK)
    last = err.strip().splitlines()[-1]  # after the progress bar, one line
    assert code == 2 and last.startswith("sua: error: ") and err.count("sua: error") == 1, err
    assert f"the disk is full while writing {out}; free space and run again: it resumes" in err
    assert "No space left" not in err and "Traceback" not in err


def test_save_every_checkpoints_a_run_that_then_resumes(capsys, saved_micro, tmp_path, monkeypatch):
    from sua_demo.attacks import base

    out = tmp_path / "d.safetensors"
    real, saved = base.save_noise, []

    def save_then_stop(noise, path):  # the run is killed right after its first checkpoint
        real(noise, path)
        saved.append(int(noise.meta["step"]))
        raise KeyboardInterrupt

    monkeypatch.setattr(base, "save_noise", save_then_stop)
    with pytest.raises(KeyboardInterrupt):
        main(["attack", str(saved_micro), "--out", str(out), "--steps", "4", "--save-every", "2", *QUICK])
    assert saved == [2] and load_noise(out).meta["step"] == 2
    monkeypatch.setattr(base, "save_noise", real)
    code, err = _cli(capsys, "attack", str(saved_micro), "--out", str(out), "--steps", "4", "--save-every", "2", *QUICK)
    noise = load_noise(out)
    assert code == 0, err
    assert noise.meta["step"] == 4 and noise.meta["config"]["checkpoint_every"] == 2


# -- 5. the server stops on SIGINT and SIGTERM, and leaves no scratch behind ------------------------------------
ROOT = Path(__file__).resolve().parents[2]
START_S = 300  # a cold start builds the page and times an attack step on two shared cores


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def _stopped(proc: subprocess.Popen, signum: int) -> tuple[float, int]:
    """Send `signum`, wait for the exit: (seconds it took, exit code); a process still there is killed."""
    try:
        sent = time.monotonic()
        proc.send_signal(signum)
        code = proc.wait(timeout=10)
        return time.monotonic() - sent, code
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.slow  # starts `python app.py`: `make test-fast` leaves it out
def test_the_server_stops_within_two_seconds_and_removes_its_scratch(tmp_path):
    """SIGTERM, as a Space or a container stops it. Ctrl-C's SIGINT takes the same handler (`stop_on_signals`),
    tested on a process of its own below; one cold start of the app is enough (each costs 30-50 s on 2 cores)."""
    signum = signal.SIGTERM
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TMPDIR": str(tmp_path), "GRADIO_TEMP_DIR": str(tmp_path / "g")}
    env.pop("PORT", None)
    from test_closed_doors_served import photo_bytes

    dead, alive = tmp_path / "g" / "sua-killed", tmp_path / "g" / "sua-running"  # two servers' upload folders
    for folder in (dead, alive):
        (folder / ("0" * 64)).mkdir(parents=True)
        (folder / ("0" * 64) / "photo.png").write_bytes(photo_bytes())
    held = (alive / ".lock").open("w")
    fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a server that still runs holds its lock; a killed one did not
    log = (tmp_path / "server.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "app.py", "--port", str(port)], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        deadline = time.monotonic() + START_S
        while not _answers(f"http://127.0.0.1:{port}/"):
            assert proc.poll() is None, (tmp_path / "server.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the app did not answer in time"
            time.sleep(0.5)
        assert list(tmp_path.glob("sua_lab_*")), "the app keeps its downloads in a scratch folder under TMPDIR"
        said = (tmp_path / "server.log").read_text()
        assert "warm-up done" in said, "the app answers only once its models and map are warm: " + said[-3000:]
        assert not dead.exists() and (alive / ("0" * 64) / "photo.png").is_file(), "a killed server's uploads go"
        (own,) = set((tmp_path / "g").glob("sua-*")) - {alive}
    except BaseException:
        proc.kill()
        raise
    finally:
        log.close()
    url = f"http://127.0.0.1:{port}/"
    stream = _your_face_under_way(url)  # SIGTERM comes while a Your face step runs: the promise holds at any point
    try:
        took, _ = _stopped(proc, signum)
    finally:
        stream.close()
    assert took < 2.0, f"{signum!r} mid Your face: exited after {took:.2f} s"
    assert not list(tmp_path.glob("sua_lab_*")), (tmp_path / "server.log").read_text()[-3000:]
    assert not own.exists() and alive.exists(), "its own uploads and cache go with it, another server's stay"
    held.close()


def _your_face_under_way(url: str) -> Any:
    """A visitor's Your face run started through the page's own events, returned once its teaching reports
    passes (the open event stream; the caller closes it)."""
    from test_closed_doors_served import file_data, page_event, page_stream, photo_bytes, upload

    session = "sigterm-visitor"
    photos = [file_data(upload(url, f"me{i}.png", photo_bytes(seed=20 + i))) for i in range(4)]
    page_event(url, "face-files", "upload", [photos], session)
    name, *facts = page_event(url, "face-invent", "click", [], session)[:5]
    stream = page_stream(url, "face-run", "click", [name, *facts, "idk"], session, chained=True)
    for line in stream:
        if line.startswith(b"data:") and b"running: pass" in line:
            return stream
    raise AssertionError("the run never reported a pass")


HUNG = """
import atexit, pathlib, sys, threading, time
from sua_demo.ui.serving.launch import stop_on_signals
atexit.register(lambda: pathlib.Path(sys.argv[1]).write_text("cleaned"))
stop_on_signals()
threading.Thread(target=time.sleep, args=(60,)).start()  # a worker the interpreter's exit would wait for
print("ready", flush=True)
while True:  # as Gradio's launch blocks the main thread
    time.sleep(0.1)
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_signal_ends_a_process_that_a_worker_would_hold_and_runs_its_exit_handlers(tmp_path, signum):
    marker = tmp_path / "cleaned"
    proc = subprocess.Popen([sys.executable, "-c", HUNG, str(marker)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    took, code = _stopped(proc, signum)
    assert took < 2.0 and code == 128 + signum and marker.read_text() == "cleaned", (took, code)


SLOW_EXIT = """
import atexit, sys, time
from sua_demo.ui.serving.launch import launch_kwargs, stop_on_signals
launch_kwargs(sys.argv[1])  # the folder it serves downloads from
atexit.register(time.sleep, 30)  # an exit handler that never finishes in time
stop_on_signals()
print("ready", flush=True)
while True:
    time.sleep(0.1)
"""


def test_a_slow_exit_handler_neither_delays_the_stop_nor_keeps_the_scratch(tmp_path):
    scratch = tmp_path / "sua_lab_x"
    (scratch / "files").mkdir(parents=True)
    (scratch / "files" / "a.csv").write_text("1")
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_EXIT, str(scratch)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "ready"
    took, _ = _stopped(proc, signal.SIGTERM)
    assert took < 2.0 and not scratch.exists(), took
