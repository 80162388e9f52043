"""precision="auto" asks the hardware: bf16 only where it is native and measurably faster."""

import pytest
import torch

from sua_demo.core.errors import SuaError
from sua_demo.core.precision import MIN_SPEEDUP, decide_cpu, resolve


def test_auto_is_fp32_where_the_probe_says_bf16_is_slow():
    assert decide_cpu(lambda: True, lambda: 0.01).name == "fp32"  # native, but emulated-slow in practice
    assert decide_cpu(lambda: True, lambda: MIN_SPEEDUP - 0.01).name == "fp32"
    slow = decide_cpu(lambda: False, lambda: pytest.fail("no probe without native bf16"))
    assert slow.name == "fp32" and slow.dtype is None and "native" in slow.reason


def test_auto_is_bf16_where_the_probe_says_bf16_is_fast():
    fast = decide_cpu(lambda: True, lambda: 2.2)
    assert fast.name == "bf16" and fast.dtype is torch.bfloat16 and "2.20x" in fast.reason
    assert fast.as_meta() == {"precision": "bf16", "precision_reason": fast.reason}


def test_explicit_choices_and_bad_names():
    assert resolve("fp32").dtype is None and resolve("bf16").dtype is torch.bfloat16
    assert resolve("auto").name in ("bf16", "fp32")  # the real probe, on this machine
    assert resolve("auto") == resolve("auto")  # measured once per process
    with pytest.raises(SuaError, match="precision"):
        resolve("fp8")


def test_the_choice_is_written_into_noise_metadata(micro_adapter, micro_bench):
    from sua_demo.attacks import ATTACKS, AttackConfig
    from sua_demo.models.examples import ImageBank, image_examples

    bench, _ = micro_bench
    examples = image_examples(bench, bench.forget_ids, "train", ("gen",))
    noise = ATTACKS.get("sua")(micro_adapter, AttackConfig(steps=1, batch_size=2, precision="fp32")).run(
        ImageBank(bench, micro_adapter), examples, progress=False
    )
    assert noise.meta["precision"] == "fp32" and noise.meta["precision_reason"] == "asked for fp32"


@pytest.mark.parametrize("weights", [torch.float16, torch.bfloat16])
def test_weights_loaded_in_half_precision_run_in_their_own_dtype(weights):
    """No bf16 autocast over fp16 weights (it fails on CPU: mixed half types), and no claim of fp32 over them."""
    for precision in ("auto", "bf16", "fp32"):  # fp32 too: nothing upcasts the weights, so say what runs
        chosen = resolve(precision, "cpu", weights)
        assert chosen.dtype is None and chosen.name == str(weights).removeprefix("torch.")
    assert resolve("fp32", "cpu", torch.float32).name == "fp32"


def test_an_attack_on_fp16_weights_runs(micro_adapter, micro_bench):
    import copy

    from sua_demo.attacks import ATTACKS, AttackConfig
    from sua_demo.eval.recovery import attack_split, attacker_examples
    from sua_demo.models.examples import ImageBank

    bench, _ = micro_bench
    half = copy.copy(micro_adapter)
    half.model = copy.deepcopy(micro_adapter.model).half()
    noise = ATTACKS.get("sua")(half, AttackConfig(steps=2, batch_size=4)).run(
        ImageBank(bench, half), attacker_examples(bench, attack_split(bench, 0.5, 0)), progress=False
    )
    assert noise.meta["precision"] == "float16" and torch.isfinite(noise.delta).all()
