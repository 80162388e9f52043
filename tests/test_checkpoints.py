"""The shipped checkpoints load offline and reproduce their recorded figures (on a subset, for speed)."""

import json
from pathlib import Path

import pytest

from sua_demo.bench import build_bench
from sua_demo.build import RECIPES
from sua_demo.config import BenchConfig
from sua_demo.data import ImageBank, image_examples
from sua_demo.eval.evaluate import answer, score
from sua_demo.models import load_adapter

ROOT = Path(__file__).resolve().parent.parent / "checkpoints" / "tiny-llava"
NAMES = [r.name for r in RECIPES]


def test_every_recipe_is_shipped_in_safetensors_and_small():
    total = 0
    for name in NAMES:
        folder = ROOT / name
        assert (folder / "sua_config.json").exists() and (folder / "eval.json").exists(), name
        weights = list(folder.glob("*.safetensors"))
        assert weights, f"{name} has no safetensors weights"
        total += sum(f.stat().st_size for f in folder.iterdir())
    assert not list(ROOT.rglob("*.bin")) and not list(ROOT.rglob("*.pt"))
    assert total <= 40 * 2**20, f"checkpoints are {total / 2**20:.1f} MiB"


@pytest.mark.parametrize("name", NAMES)
def test_checkpoint_reproduces_recorded_figures(name):
    """Recompute forget generation EM on held-out photos; it must match the record to within one answer
    (batches are composed differently here, and padding can flip a near-tie)."""
    bench = build_bench(BenchConfig())
    adapter = load_adapter(ROOT / name)
    recorded = json.loads((ROOT / name / "eval.json").read_text())["report"]
    examples = image_examples(bench, bench.forget_ids, "heldout", ("gen",))
    got = score(examples, answer(adapter, ImageBank(bench, adapter), examples))
    one = 1 / len(examples) + 1e-9
    assert got["gen_em"] == pytest.approx(recorded["forget/heldout"]["gen_em"], abs=one)
    assert got["gen_refusal"] == pytest.approx(recorded["forget/heldout"]["gen_refusal"], abs=one)
