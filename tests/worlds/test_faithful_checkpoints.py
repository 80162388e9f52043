"""What the faithful world ships (docs/world.md): one pretrained tower and projector, carried byte for byte by every
model of the world (or lent to it by the general model's folder, models/shared_weights.py); LoRA adapters that never
touch them; the whole checkpoints/ folder small and safetensors only."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import pytest
from safetensors import safe_open
from transformers import LlavaForConditionalGeneration

from sua_demo.core.config import served_world
from sua_demo.models.shared_weights import MARKER, whole_state

pytestmark = pytest.mark.slow  # shipped checkpoints: `make test-fast` leaves them out

CHECKPOINTS = Path(__file__).resolve().parents[2] / "checkpoints"
FAITHFUL = served_world({}).models  # the default world's models (no SUA_WORLD): the faithful world's
GENERAL = FAITHFUL / "general"
VISION_SIDE = ("vision_tower.", "multi_modal_projector.")


def _vision_side(path: Path) -> dict[str, bytes]:
    with safe_open(path, "pt") as f:
        return {k: f.get_tensor(k).numpy().tobytes() for k in f.keys() if any(s in k for s in VISION_SIDE)}


def _models() -> list[Path]:
    return sorted(p for p in FAITHFUL.iterdir() if p.is_dir() and p.name != "general" and (p / "eval.json").is_file())


def test_the_general_model_is_shipped_with_its_tower_record():
    record = json.loads((GENERAL / "sua_config.json").read_text())
    assert record["tower"]["steps"] == 1000 and record["machine"].startswith("CPU: ")
    assert set(record["tower"]["identification"]) == {"pretrained", "random"}
    assert len(_vision_side(GENERAL / "model.safetensors")) > 10


@pytest.mark.parametrize("folder", _models() if FAITHFUL.is_dir() else [], ids=lambda p: p.name)
def test_every_model_of_the_default_world_carries_the_shipped_tower_and_projector_byte_for_byte(folder):
    shipped = _vision_side(GENERAL / "model.safetensors")
    weights = folder / "model.safetensors"
    if (folder / MARKER).is_file():  # it keeps only what it changed and takes the rest from the general model
        lent = json.loads((folder / MARKER).read_text())
        assert (folder / lent["from"]).resolve() == GENERAL.resolve() and not _vision_side(weights), folder.name
        state = whole_state(folder)
        assert {k: state[k].numpy().tobytes() for k in shipped} == shipped, folder.name
        return
    if weights.is_file():
        assert _vision_side(weights) == shipped, folder.name
        return
    config = json.loads((folder / "adapter_config.json").read_text())  # a LoRA adapter on ../vanilla
    with safe_open(folder / "adapter_model.safetensors", "pt") as f:
        assert not [k for k in f.keys() if any(s in k for s in VISION_SIDE)], folder.name
    pattern = re.compile(config["target_modules"])  # peft matches it against the loaded model's module names
    modules = [name for name, _ in _general_model().named_modules()]
    hits = [m for m in modules if pattern.fullmatch(m)]
    assert hits and not [m for m in hits if any(s in m for s in VISION_SIDE)], folder.name


@functools.cache
def _general_model() -> LlavaForConditionalGeneration:
    return LlavaForConditionalGeneration.from_pretrained(GENERAL)


def test_checkpoints_stay_small_and_safetensors_only():
    files = [f for f in CHECKPOINTS.rglob("*") if f.is_file()]
    assert not [f for f in files if f.suffix in (".bin", ".pt", ".pth", ".pkl")]
    total = sum(f.stat().st_size for f in files)
    assert total <= 60 * 2**20, f"checkpoints/ is {total / 2**20:.1f} MiB"


def test_the_gate_table_over_worlds_is_rebuilt_from_the_shipped_gates(tmp_path):
    """gates_worlds.md says what each world's shipped gates.json says: under the shipped rules (the default world's,
    and the copies of the others' reports under checkpoints/faithful/validation/), and under the train-photo rule
    the worlds were first built with (checkpoints/faithful/worlds/)."""
    from sua_demo.cli.build import ROBUST_TITLE
    from sua_demo.worlds.faithful import FAITHFUL, REPORTS, gates_over_worlds, train_rule_gates

    assert gates_over_worlds(tmp_path) == (FAITHFUL / "gates_worlds.md").read_text()
    robust = gates_over_worlds(tmp_path, title=ROBUST_TITLE, stem="robust_gates")  # docs/robust.md's models
    assert robust == (FAITHFUL / "robust_gates_worlds.md").read_text() and "| idk_robust | forget/train |" in robust
    assert train_rule_gates(tmp_path) == (REPORTS / "gates_worlds.md").read_text()  # the worlds as first built


def test_the_default_world_is_the_faithful_one_and_the_first_is_one_name_away():
    """No SUA_WORLD: the app's engine loads the faithful models, their noise and their 112-px bench (issue 41);
    SUA_WORLD=first serves the first world."""
    from sua_demo.core.config import WORLD_ENV, served_world
    from sua_demo.core.errors import UnknownNameError
    from sua_demo.engine import Engine
    from sua_demo.worlds.faithful import FAITHFUL

    assert served_world({}).name == "faithful" == served_world({WORLD_ENV: " "}).name
    assert served_world({WORLD_ENV: "first"}).name == "first"
    with pytest.raises(UnknownNameError, match="first or faithful"):
        served_world({WORLD_ENV: "second"})
    eng = Engine(served_world({}))
    assert "rmu_lora" not in eng.sessions.shipped and {"idk", "ga_lora", "retrain"} <= set(eng.sessions.shipped)
    first = Engine(served_world({WORLD_ENV: "first"}), bench=eng.bench)
    assert {"rmu_lora", "simnpo_lora"} <= set(first.sessions.shipped)
    sess = eng.session("idk")
    assert sess.adapter.image_size == 112 and sess.noise_owner == "idk" and eng.bench.holdout and sess.shipped
    own = eng.session(str(FAITHFUL / "idk"))  # the shipped folder named by its path is the shipped model (issue 42)
    assert own is sess and eng.controls(own) == eng.controls(sess)
    pid = eng.bench.forget_ids[0]
    verdict = eng.person_verdict(sess, pid, sess.shipped_noise, *eng.controls(sess))
    assert verdict.photos == len(eng.bench.person(pid).photos)


def test_a_world_rebuilt_to_attack_one_more_model_is_read_from_its_shipped_reports(tmp_path, monkeypatch):
    """World 1's models did not outlive the session that attacked IDK on it; GradDiff is attacked later from a rebuilt
    folder that holds only GradDiff's noise. The comparison must still read both, from the shipped copy."""
    import sua_demo.worlds.faithful as faithful

    shipped, runs = tmp_path / "worlds", tmp_path / "runs"
    for folder in (shipped / "world1" / "noise" / "idk", shipped / "world1" / "noise" / "grad_diff"):
        folder.mkdir(parents=True)
    (runs / "world1" / "noise" / "grad_diff").mkdir(parents=True)
    monkeypatch.setattr(faithful, "REPORTS", shipped)
    monkeypatch.setattr(faithful, "RUNS", runs)
    assert faithful.attacked_worlds()["seed1"] == shipped / "world1" / "noise"
    with pytest.raises(faithful.UnknownNameError, match="demo models"):
        faithful.attack_world(1, only=["ga_lora"])


def test_the_default_world_holds_every_gate_its_models_measure():
    """Issue 41: under the shipped rules the default world's models hold all 17 gates, as their own eval.json say."""
    from sua_demo.eval.gates import all_met, gate_rows
    from sua_demo.unlearning.recipe import gates

    reports = {p.parent.name: json.loads(p.read_text())["report"] for p in FAITHFUL.glob("*/eval.json")}
    rows = gate_rows(reports, gates("world"))
    assert len(rows) == 17 and all_met(rows)
    assert json.loads((FAITHFUL / "gates.json").read_text())["gates"] == json.loads(json.dumps(rows))


def test_a_long_report_is_written_on_one_line_and_reads_back_the_same(tmp_path):
    """Reports past COMPACT_OVER characters go on one line (checkpoints/ budget); short ones stay indented."""
    from sua_demo.core.io import COMPACT_OVER, write_json

    short, long = {"a": [1.5, "é"]}, {"rows": [{"value": k / 7, "name": f"row {k}"} for k in range(COMPACT_OVER // 20)]}
    for name, obj, lines in (("short", short, 6), ("long", long, 1)):
        write_json(tmp_path / f"{name}.json", obj)
        text = (tmp_path / f"{name}.json").read_text()
        assert json.loads(text) == obj and text.count("\n") == lines, name
