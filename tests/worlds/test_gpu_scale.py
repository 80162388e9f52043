"""benchmarks/gpu_scale.sh, the size study's GPU call, tested where every session can run it: on the CPU, at toy
size, through the same code and stages a GPU runs ($SUA_DEVICE says where every stage computes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from sua_demo.core.errors import SuaError
from sua_demo.models.loading import build_device, load_adapter

ROOT = Path(__file__).resolve().parents[2]


def test_the_build_device_is_what_sua_device_says_and_a_bad_one_is_refused_in_one_line(monkeypatch):
    monkeypatch.delenv("SUA_DEVICE", raising=False)
    assert build_device() == torch.device("cpu")
    monkeypatch.setenv("SUA_DEVICE", "auto")
    assert build_device() == torch.device("cuda" if torch.cuda.is_available() else "cpu")
    monkeypatch.setenv("SUA_DEVICE", "toaster")
    with pytest.raises(SuaError, match="unknown device 'toaster'"):
        build_device()
    if not torch.cuda.is_available():
        monkeypatch.setenv("SUA_DEVICE", "cuda")
        with pytest.raises(SuaError, match="no CUDA GPU is visible"):
            load_adapter(ROOT / "checkpoints" / "faithful" / "idk")


@pytest.mark.slow
def test_the_gpu_script_builds_and_attacks_a_toy_size_blind_with_its_controls_on_the_cpu(tmp_path):
    """Every stage a GPU would run: the size's tower and general model, vanilla, the retrain control, IDK and
    GradDiff with their gates, the attack with its controls, and the trend that reads it."""
    shipped = {p: p.stat().st_mtime for p in (ROOT / "checkpoints" / "faithful" / "scale").rglob("*")}
    env = {**os.environ, "SUA_DEVICE": "cpu", "OMP_NUM_THREADS": "1", "PYTHON": sys.executable}
    call = ["bash", "benchmarks/gpu_scale.sh", "--plan", "toy", "--out", str(tmp_path), "S"]
    run = subprocess.run(call, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "device cpu, plan toy, sizes S" in run.stdout
    world = tmp_path / "reports" / "S" / "world0"
    gates = json.loads((world / "gates.json").read_text())["gates"]
    assert {r["model"] for r in gates} == {"vanilla", "retrain", "idk", "grad_diff"}
    for model in ("idk", "grad_diff"):
        summary = json.loads((world / "noise" / model / "report.json").read_text())["summary"]
        for key in ("unlearned/c_unseen_heldout/gain_sua", "unlearned/c_unseen_heldout/gain_random",
                    "retrain/c_unseen_heldout/gain_same_delta", "retrain/c_unseen_heldout/gain_own_delta"):  # fmt: skip
            assert key in summary, (model, key)
    trend = json.loads((tmp_path / "reports" / "trend.json").read_text())
    assert [p["size"] for p in trend["models"]["idk"]["c_unseen_heldout"]["points"]].count("S") == 1  # one split
    assert {p: p.stat().st_mtime for p in (ROOT / "checkpoints" / "faithful" / "scale").rglob("*")} == shipped
