"""Forward-only greedy answers (eval/forced.py) against `generate`: the same text, row for row."""

from pathlib import Path

import pytest
import torch

from sua_demo.data import ImageBank, batches, image_examples, text_examples
from sua_demo.eval.evaluate import answer
from sua_demo.eval.forced import forced_greedy

SHIPPED = Path(__file__).resolve().parents[1] / "checkpoints" / "tiny-llava"


def generated(adapter, bank, examples, images=None):
    """The reference: `generate` for every row, nothing else."""
    out = {}
    for chunk in batches(examples, 64):
        idx = [examples.index(e) for e in chunk]
        x = images[idx] if images is not None and chunk[0].photo is not None else bank.get(chunk)
        out.update(zip(idx, adapter.generate(x, [e.item.question for e in chunk]), strict=True))
    return [out[i] for i in range(len(examples))]


def test_forced_greedy_reads_back_what_generate_wrote(micro_adapter, micro_bench):
    """Teacher-forcing the generated text itself gives it back (rows with a near-tie stay undecided, which
    an untrained model has a few of); a wrong candidate is never taken."""
    bench, _ = micro_bench
    bank = ImageBank(bench, micro_adapter)
    examples = image_examples(bench, bench.ids("forget"), "train", ("gen", "mc"))[:24]
    x, questions = bank.get(examples), [e.item.question for e in examples]
    texts = micro_adapter.generate(x, questions, max_new_tokens=4)
    settled = forced_greedy(micro_adapter, x, questions, [texts], max_new_tokens=4)
    assert all(s is None or s == t for s, t in zip(settled, texts, strict=True))
    assert sum(s is not None for s in settled) >= len(texts) // 2
    wrong = [t + " zebra" if t else "zebra" for t in texts]
    assert forced_greedy(micro_adapter, x, questions, [wrong], max_new_tokens=8) == [None] * len(texts)


def test_answer_equals_generate_on_the_micro_model(micro_adapter, micro_bench):
    bench, _ = micro_bench
    bank = ImageBank(bench, micro_adapter)
    examples = image_examples(bench, bench.ids("retain"), "train", ("gen", "mc", "cloze"))
    examples += text_examples(bench, bench.ids("retain"), ("gen",))
    assert answer(micro_adapter, bank, examples) == generated(micro_adapter, bank, examples)


@pytest.mark.skipif(not (SHIPPED / "idk" / "config.json").exists(), reason="shipped checkpoints not present")
@pytest.mark.parametrize("name", ["vanilla", "idk"])
def test_answer_equals_generate_on_a_shipped_model(name):
    """Trained models answer mostly the truth or the refusal: the fast path settles most rows, and every
    row, clean or under noise, matches `generate` exactly."""
    from sua_demo.bench import build_bench
    from sua_demo.config import BenchConfig
    from sua_demo.models import load_adapter

    bench = build_bench(BenchConfig())
    adapter = load_adapter(SHIPPED / name)
    bank = ImageBank(bench, adapter)
    people = bench.ids("forget")[:4] + bench.ids("retain")[:4]
    examples = image_examples(bench, people, "heldout", ("gen", "mc", "cloze"), photos_per_person=1)
    x = bank.get(examples)
    noisy = (x + 0.06 * torch.randn(x.shape, generator=torch.Generator().manual_seed(0))).clamp(0, 1)
    for images in (None, noisy):
        fast = answer(adapter, bank, examples, images=images)
        assert fast == generated(adapter, bank, examples, images)
    settled = forced_greedy(
        adapter, x, [e.item.question for e in examples], [[e.item.answer for e in examples], ["I do not know"] * len(x)]
    )
    assert sum(s is not None for s in settled) > len(examples) / 2
