"""A model folder that keeps only the tensors it changed (models/shared_weights.py) loads to the very model it was
saved as, and refuses a base that is missing or was rebuilt since."""

from __future__ import annotations

import shutil

import pytest
import torch

from sua_demo.core.config import served_world
from sua_demo.core.errors import SuaError
from sua_demo.models.loading import load_adapter
from sua_demo.models.shared_weights import MARKER, WEIGHTS, share_weights

FAITHFUL = served_world({}).models


@pytest.fixture()
def world(tmp_path):
    for name in ("general", "vanilla"):
        shutil.copytree(FAITHFUL / name, tmp_path / name, ignore=shutil.ignore_patterns(MARKER))
    if (FAITHFUL / "vanilla" / MARKER).is_file():  # the shipped vanilla shares already: make the copy whole
        from safetensors.torch import save_file

        from sua_demo.models.shared_weights import whole_state

        save_file(whole_state(FAITHFUL / "vanilla"), str(tmp_path / "vanilla" / WEIGHTS), metadata={"format": "pt"})
    return tmp_path


def test_a_folder_that_lends_its_tower_loads_to_the_same_model_and_answers_the_same(world):
    whole = load_adapter(world / "vanilla").model.state_dict()
    size = (world / "vanilla" / WEIGHTS).stat().st_size
    saved = share_weights(world / "vanilla", world / "general")
    assert saved > 1_500_000 and (world / "vanilla" / WEIGHTS).stat().st_size == size - saved  # tower + projector
    assert share_weights(world / "vanilla", world / "general") == 0  # once only
    shared = load_adapter(world / "vanilla").model.state_dict()
    assert shared.keys() == whole.keys() and all(torch.equal(shared[k], whole[k]) for k in whole)
    assert all(v.dtype == torch.float32 for v in shared.values())


def test_a_base_missing_or_rebuilt_since_is_refused_by_name(world):
    share_weights(world / "vanilla", world / "general")
    weights = world / "general" / WEIGHTS
    original = weights.read_bytes()
    weights.write_bytes(original[:-1] + bytes([original[-1] ^ 1]))
    with pytest.raises(SuaError, match="changed since it was saved"):
        load_adapter(world / "vanilla")
    weights.unlink()
    with pytest.raises(SuaError, match="which is missing"):
        load_adapter(world / "vanilla")
