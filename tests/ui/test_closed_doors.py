"""Closed doors (issue 39): a planted file never runs, the CLI answers every bad input in one line, the page's
private events take no caller's path, and one caller cannot stop another's run. The served-app cases of the
issue are in test_app_server.py and test_mcp.py, which serve the app once for the whole module."""

from __future__ import annotations

import json

import pytest
import torch

from sua_demo.cli import main
from sua_demo.core.errors import SuaError
from sua_demo.core.resume import Checkpointed, read_state, state_bytes


class Payload:
    """Unpickling this writes a marker file: proof that code ran."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (exec, (f"open({self.marker!r}, 'w').write('ran')",))


def _plant(path, marker) -> None:
    """A state file as an attacker would plant it: torch.save's pickle (zip), with the payload inside."""
    run, args = Payload(str(marker)).__reduce__()
    run(*args)  # what unpickling it would call
    assert marker.read_text() == "ran"  # the payload is real: called here, on purpose, it ran...
    marker.unlink()  # ...and the build below must not run it again
    torch.save({"step": 1, "seconds": 0.0, "x": Payload(str(marker))}, path)


# -- 1. no pickle anywhere ------------------------------------------------------------------------------------
def test_a_state_round_trips_tensors_optimiser_state_and_numpy_generators(tmp_path):
    import numpy as np

    model = torch.nn.Linear(3, 2)
    opt = torch.optim.AdamW(model.parameters(), lr=0.1)
    model(torch.ones(1, 3)).sum().backward()
    opt.step()
    rng = np.random.default_rng(3)
    gen = torch.Generator().manual_seed(1).get_state()
    state = {"step": 4, "losses": [0.5, float("inf")], "model": model.state_dict(), "optimizer": opt.state_dict(),
             "rng": rng.bit_generator.state, "gen": gen, "none": None}  # fmt: skip
    (tmp_path / "s.safetensors").write_bytes(state_bytes(state))
    back = read_state(tmp_path / "s.safetensors")
    assert back["step"] == 4 and back["losses"] == [0.5, float("inf")] and back["none"] is None
    assert back["rng"] == rng.bit_generator.state and torch.equal(back["gen"], state["gen"])
    again = torch.optim.AdamW(model.parameters(), lr=0.1)
    again.load_state_dict(back["optimizer"])  # int keys and tuple betas came back as they went
    assert again.state_dict()["param_groups"] == opt.state_dict()["param_groups"]
    for k, v in opt.state_dict()["state"][0].items():
        assert torch.equal(back["optimizer"]["state"][0][k], v), k


@pytest.mark.parametrize("content", ["pickle", b"not a state", b'\x10\x00\x00\x00\x00\x00\x00\x00{"a": 1}'])
def test_a_planted_state_file_never_runs_and_is_refused_in_one_line(tmp_path, content):
    marker, path = tmp_path / "ran", tmp_path / ".m.train-state.safetensors"
    if content == "pickle":
        _plant(path, marker)
    else:
        path.write_bytes(content)
    with pytest.raises(SuaError) as err:
        Checkpointed(path)
    assert not marker.exists()
    assert "\n" not in str(err.value) and "delete it" in str(err.value) and str(tmp_path) not in str(err.value)


def test_sua_finetune_beside_a_planted_state_file_says_one_line_and_runs_nothing(tmp_path, capsys):
    marker = tmp_path / "ran"
    _plant(tmp_path / ".m.train-state.safetensors", marker)
    code = main(["finetune", "--people", "8", "--forget", "15", "--out", str(tmp_path / "m")])
    err = capsys.readouterr().err
    assert code == 2 and not marker.exists() and err.count("\n") == 1 and "Traceback" not in err
    assert ".m.train-state.safetensors is not a build state" in err


def test_no_source_file_unpickles():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    sources = [*root.joinpath("sua_demo").rglob("*.py"), *root.joinpath("studies").rglob("*.py"), root / "app.py"]
    for path in sources:
        text = path.read_text()
        assert "weights_only=False" not in text and "torch.load(" not in text, path
        assert "import pickle" not in text or "UnpicklingError" in text, path  # only to name the error it refuses


# -- 6. one sentence, no traceback, on every CLI path ---------------------------------------------------------
def _cli(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    err = capsys.readouterr().err
    return code, err


def _audits(tmp_path, content: bytes | str):
    (tmp_path / "a" / "idk").mkdir(parents=True)
    path = tmp_path / "a" / "idk" / "audit.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return tmp_path / "a"


@pytest.mark.parametrize(
    "content, words",
    [
        ("{not json", "is not JSON"),
        ("{}", "is not an audit"),
        ("7", "is not an audit"),
        ('{"summary": 1}', "is not an audit"),
        ('{"summary": {"clean": {"em": {"retain": {"mean": "x"}}}, "gcg": 3}}', "is not an audit"),
        (b"\xff\xfe\x00binary", "is not a text file"),
        ("[" * 100_000 + "]" * 100_000, "nests deeper"),
    ],
)
def test_report_card_on_a_bad_audit_is_one_line(capsys, tmp_path, content, words):
    code, err = _cli(capsys, "report-card", "--audits", str(_audits(tmp_path, content)), "--out", str(tmp_path / "o"))
    assert code == 2 and err.count("\n") == 1 and words in err and "Traceback" not in err, err
    assert not (tmp_path / "o" / "report_card.json").exists()


def test_report_card_on_a_missing_folder_creates_nothing(capsys, tmp_path):
    code, err = _cli(capsys, "report-card", "--audits", str(tmp_path / "nope"))
    assert code == 2 and err.count("\n") == 1 and "no folder at" in err and not (tmp_path / "nope").exists()
    (tmp_path / "empty").mkdir()
    code, err = _cli(capsys, "report-card", "--audits", str(tmp_path / "empty"))
    assert code == 2 and "holds no <model>/audit.json" in err and not any((tmp_path / "empty").iterdir())


@pytest.mark.parametrize("membership, words", [(None, "no file at"), ("[1]", "is not a membership card"),
                                               ('{"models": {"idk": 3}}', "is not a membership card")])  # fmt: skip
def test_report_card_with_a_bad_membership_file_is_one_line(capsys, tmp_path, membership, words):
    from sua_demo.core.config import CHECKPOINTS

    path = tmp_path / "m.json"
    if membership is not None:
        path.write_text(membership)
    argv = ("report-card", "--audits", str(CHECKPOINTS / "audit"), "--membership", str(path), "--out", str(tmp_path))
    code, err = _cli(capsys, *argv)
    assert code == 2 and err.count("\n") == 1 and words in err and "Traceback" not in err, err


@pytest.mark.parametrize("content, words", [(b"\x89PNG\r\n\x1a\n\x00\xff", "is not a text file"),
                                            ("[" * 100_000 + "]", "nests deeper")])  # fmt: skip
def test_mia_on_a_binary_or_deeply_nested_file_is_one_line(capsys, tmp_path, content, words):
    from sua_demo.core.config import CHECKPOINTS

    bad, good = tmp_path / "bad.jsonl", tmp_path / "good.jsonl"
    bad.write_bytes(content if isinstance(content, bytes) else content.encode())
    good.write_text(json.dumps({"question": "q?", "answer": "a"}) + "\n")
    code, err = _cli(capsys, "mia", str(CHECKPOINTS / "tiny-llava" / "idk"), "--members", str(bad),
                     "--nonmembers", str(good))  # fmt: skip
    assert code == 2 and err.count("\n") == 1 and words in err and "Traceback" not in err, err


@pytest.mark.parametrize("flag, value", [("--procedural", "-1"), ("--procedural", str(2**40)), ("--seed", "-3")])
def test_enrol_with_a_bad_seed_is_one_line(capsys, tmp_path, flag, value):
    with pytest.raises(SystemExit) as stop:  # argparse's own one line, with the usage
        main(["enrol", flag, value, "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "must be from 0 to" in err and "Traceback" not in err


def test_a_mistyped_world_stops_the_app_in_one_line(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {"SUA_WORLD": "garbage", "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, str(root / "app.py")], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert "unknown world 'garbage'" in done.stderr and "first or faithful" in done.stderr


# -- 5. bounded disk -----------------------------------------------------------------------------------------------
class _Blocks:
    def __init__(self) -> None:
        self.upload_file_set: set[str] = set()


def _put(folder, name: str, size: int, age: float, blocks=None) -> str:
    import os
    import time

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(b"x" * size)
    then = time.time() - age
    os.utime(path, (then, then))
    os.utime(folder, (then, then))
    if blocks is not None:
        blocks.upload_file_set.add(str(path))
    return str(path)


def test_the_sweeper_removes_old_uploads_the_oldest_past_the_budget_and_empty_litter(tmp_path):
    from sua_demo.ui.serving.upload_sweep import UploadSweeper

    blocks, cache = _Blocks(), tmp_path / "gradio"
    old = _put(cache / ("a" * 64), "old.png", 10, 3600, blocks)
    big = _put(cache / ("b" * 64), "big.png", 300, 120, blocks)
    new = _put(cache / ("c" * 64), "new.png", 300, 60, blocks)
    served = _put(cache / ("d" * 64), "preview.png", 10, 3600)  # made by the server, not uploaded: kept
    empty_tmp = _put(cache, "tmpabc123", 0, 3600)
    young_tmp = _put(cache, "tmpyoung", 0, 1)  # may be an upload on its way in
    (cache / ("e" * 64)).mkdir()
    import os
    import time

    os.utime(cache / ("e" * 64), (time.time() - 3600,) * 2)
    removed = UploadSweeper(blocks, cache, ttl=600, budget=400).sweep()
    from pathlib import Path

    assert not Path(old).exists() and not Path(old).parent.exists()  # past its time, with its folder
    assert not Path(big).exists() and Path(new).exists()  # 600 bytes held > 400: the older one goes
    assert Path(served).exists() and Path(young_tmp).exists()
    assert not Path(empty_tmp).exists() and not (cache / ("e" * 64)).exists()
    assert blocks.upload_file_set == {new} and removed == 4


def test_the_file_boxes_leave_no_empty_temporary_file(tmp_path, monkeypatch):
    from gradio.data_classes import FileData, ListFiles

    from sua_demo.ui.serving.gradio_parts import FileInput

    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "cache"))
    photo = tmp_path / "me.png"
    photo.write_bytes(b"png")
    box = FileInput(file_count="multiple", file_types=["image"])
    box.GRADIO_CACHE = str(tmp_path / "cache")
    (tmp_path / "cache").mkdir()
    assert box.preprocess(ListFiles(root=[FileData(path=str(photo))])) == [str(photo)]
    assert list((tmp_path / "cache").iterdir()) == []  # gr.File's own leaves one empty file per file here


def test_a_log_line_quotes_at_most_log_line_characters():
    import logging

    from sua_demo.ui.serving.launch import LOG_LINE, CappedLines

    record = logging.LogRecord("sua", logging.WARNING, __file__, 1, "user error: %s", ("9" * 2_000_000,), None)
    CappedLines().filter(record)
    assert len(record.getMessage()) < LOG_LINE + 50 and "more characters" in record.getMessage()


def test_a_folder_that_needs_remote_code_is_refused_for_that_reason(tmp_path):
    from sua_demo.models.loading import load_adapter

    folder = tmp_path / "custom"
    folder.mkdir()
    config = {"model_type": "sua_unheard_of", "auto_map": {"AutoConfig": "modeling_x.XConfig"}, "architectures": ["X"]}
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "model.safetensors").write_bytes(state_bytes({"w": torch.zeros(1)}))
    with pytest.raises(SuaError) as err:
        load_adapter(str(folder))
    said = str(err.value)
    assert "trust_remote_code" in said and "never runs" in said and "\n" not in said, said
