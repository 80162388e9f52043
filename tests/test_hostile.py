"""Hostile inputs and faults (issue 26, item 10): every one is refused or survived in one line that names no
library and no server path, never a raw parser, decoder or loader message."""

from __future__ import annotations

import json
import struct

import pytest
import torch
from safetensors.torch import save

from sua_demo.attacks.noise import load_noise
from sua_demo.errors import SuaError

LIBRARIES = ("pillow", "safetensors", "torch", "transformers", "huggingface", "pickle", "recursion", "traceback")


def one_line(err: BaseException) -> str:
    """The message, checked to be one line that names no library."""
    text = str(err)
    assert "\n" not in text and text, text
    words = text.lower().replace(".safetensors", "")  # the file type people upload is not the library's name
    assert not any(name in words for name in LIBRARIES), text
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
