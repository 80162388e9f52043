"""Issue 41: with no SUA_WORLD, everything a user starts meets the faithful world: `sua demo`, the CLI's default
models, noises and bench; SUA_WORLD=first is one name away. (The app: `faithful_url`, started with no SUA_WORLD.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _sua(*args: str, world: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "SUA_WORLD"}  # a user starts it with none
    if world is not None:
        env["SUA_WORLD"] = world
    command = [sys.executable, "-m", "sua_demo", *args]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow  # loads the shipped models in a fresh process
def test_sua_demo_tells_the_story_on_the_faithful_world_by_default_and_on_the_first_by_name():
    """Issue 57: the default shows what the tool is for, the model's first guided example, every condition named:
    δ brings an answer back that the unlearned model withholds clean and random noise does not."""
    import json
    import re

    from sua_demo.core.config import shipped_world
    from sua_demo.dataset import build_bench

    for name, world in (("faithful", None), ("first", "first")):
        served = shipped_world(name)
        bench = build_bench(served.bench)
        first = json.loads((served.noise / "idk" / "examples.json").read_text())["examples"][0]
        person = bench.person(int(first["person"]))
        done = _sua("demo", world=world)
        assert done.returncode == 0, done.stderr[-2000:]
        head = f"person {person.id}: {person.name} ("
        assert (
            done.stdout.startswith(head)
            and f"photo {first['photo']}; model idk; noise: the shipped δ" in done.stdout
            and f"the {name} world (bench seed" in done.stdout
        ), done.stdout[:300]
        rows = re.findall(r"unlearned, clean: (.*)\n\s+unlearned \+ δ: (.*)\n\s+\+ random noise: (.*)\n", done.stdout)
        assert len(rows) == 5 and any(d.endswith("✓") and not c.endswith("✓") and not r.endswith("✓")
                                      for c, d, r in rows), done.stdout  # fmt: skip
    refused = _sua("demo", "--model", "rmu_lora")  # shipped by the first world only: not offered here
    assert (
        refused.returncode == 2 and "invalid choice: 'rmu_lora'" in refused.stderr and "Traceback" not in refused.stderr
    )


def _defaults(command: str) -> dict:
    from sua_demo.cli import parser

    (sub,) = [a for a in parser()._actions if a.dest == "command"]
    needed = {"attack-eval": ["m"], "unlearn": ["--method", "idk"]}.get(command, [])
    return vars(sub.choices[command].parse_args([*needed, "--out", "x"]))


def test_the_cli_defaults_name_the_served_worlds_models_noise_and_bench(monkeypatch):
    from sua_demo.core.config import CHECKPOINTS, shipped_world

    monkeypatch.delenv("SUA_WORLD", raising=False)
    faithful = shipped_world("faithful")
    enrol = _defaults("enrol")
    assert Path(enrol["model"]) == faithful.models / "vanilla" and Path(enrol["noise"]).is_relative_to(faithful.noise)
    assert _defaults("attack-eval")["bench_base"] == faithful.bench and faithful.bench.image_size == 112
    assert Path(_defaults("unlearn")["start"]) == CHECKPOINTS / "tiny-llava" / "vanilla"  # the first world's recipe
    monkeypatch.setenv("SUA_WORLD", "first")
    assert Path(_defaults("enrol")["model"]) == shipped_world("first").models / "vanilla"


def test_a_first_world_model_keeps_its_worlds_bench_controls_and_files_whatever_the_default(monkeypatch, tmp_path):
    """`sua audit checkpoints/tiny-llava/idk` (as `make audits` runs it) must not read the faithful world's bench,
    retrain control and noises, nor write into its audits."""
    from sua_demo.cli import common
    from sua_demo.core.config import shipped_world

    monkeypatch.delenv("SUA_WORLD", raising=False)
    first = shipped_world("first")
    assert common.world(str(first.models / "idk")) == first and common.world("./elsewhere/idk").name == "faithful"
    args = _defaults_of("audit", [str(first.models / "idk")])
    assert args.retrain is None and common.bench_of(args)[1] == first.bench != shipped_world("faithful").bench


def _defaults_of(command: str, given: list[str]):
    from sua_demo.cli import parser

    (sub,) = [a for a in parser()._actions if a.dest == "command"]
    return sub.choices[command].parse_args(given)
