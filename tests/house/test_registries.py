"""Tests follow the registries: an attack, unlearning method or denoiser is tested the moment it is registered."""

import math

import pytest
import torch

from sua_demo.attacks import ATTACKS, AttackConfig, load_noise, save_noise
from sua_demo.denoisers import DENOISERS, build_denoiser
from sua_demo.models.examples import ExampleSampler, ImageBank, image_examples, text_examples
from sua_demo.unlearning import METHODS


@pytest.mark.parametrize("name", ATTACKS.names())
def test_every_attack_stays_in_its_budget_and_round_trips(name, micro_adapter, micro_bench, tmp_path):
    bench, _ = micro_bench
    examples = image_examples(bench, bench.forget_ids, "train", ("gen",))
    cfg = AttackConfig(eps=8 / 255, alpha=2 / 255, steps=2, batch_size=4, precision="fp32")
    noise = ATTACKS.get(name)(micro_adapter, cfg).run(ImageBank(bench, micro_adapter), examples, progress=False)
    linf = float(noise.delta.abs().max())
    assert 0 < linf <= noise.eps + 1e-6 and noise.delta.shape == (3, 64, 64)
    if noise.meta.get("norm", "linf") == "linf":
        assert noise.eps == pytest.approx(8 / 255)
    else:
        assert float(noise.delta.norm()) <= 8 / 255 * noise.delta.numel() ** 0.5 + 1e-5
    again = load_noise(save_noise(noise, tmp_path / f"{name}.safetensors"), 64)
    assert torch.equal(again.delta, noise.delta)


@pytest.mark.parametrize("name", METHODS.names())
def test_every_unlearning_method_gives_a_finite_loss_that_moves_the_weights(name, micro_model_cfg, micro_bench):
    from sua_demo.core.config import UnlearnConfig
    from sua_demo.training.finetune import build_tiny

    bench, _ = micro_bench
    adapter = build_tiny(bench, micro_model_cfg)
    method_cls = METHODS.get(name)
    reference = build_tiny(bench, micro_model_cfg) if method_cls.needs_reference else None
    method = method_cls(UnlearnConfig(method=name), reference)
    bank = ImageBank(bench, adapter)
    forget = ExampleSampler(image_examples(bench, bench.forget_ids, "train", ("gen",)), 4, 0)()
    retain = ExampleSampler(image_examples(bench, bench.retain_ids, "train", ("gen",)), 4, 1)()
    adapter.model.train()
    loss = method.compute_loss(adapter, bank, forget, retain)
    assert loss.ndim == 0 and math.isfinite(float(loss))
    loss.backward()
    grads = [p.grad for p in adapter.model.parameters() if p.grad is not None]
    assert grads and any(float(g.abs().sum()) > 0 for g in grads)


@pytest.mark.parametrize("name", DENOISERS.names())
def test_every_denoiser_keeps_shape_and_range_and_passes_gradients(name):
    x = torch.rand(2, 3, 64, 64, requires_grad=True)
    y = build_denoiser(name)(x)  # the shipped weights, where the denoiser has any
    assert y.shape == x.shape and 0 <= float(y.min()) and float(y.max()) <= 1
    y.sum().backward()
    assert x.grad is not None and float(x.grad.abs().sum()) > 0


def test_npo_loss_matches_a_hand_computation():
    from sua_demo.unlearning.losses import npo

    logp, ref, beta = torch.tensor([-1.0, -3.0]), torch.tensor([-2.0, -2.0]), 0.5
    # -(2/beta) * mean(log sigmoid(-beta (logp - ref))): the two rows give log sigmoid(-0.5) and log sigmoid(0.5)
    by_hand = -(2 / beta) * (math.log(1 / (1 + math.exp(0.5))) + math.log(1 / (1 + math.exp(-0.5)))) / 2
    assert float(npo(logp, ref, beta)) == pytest.approx(by_hand, rel=1e-6)
    assert float(npo(ref, ref, beta)) == pytest.approx(-(2 / beta) * math.log(0.5), rel=1e-6)  # at the reference


def test_text_only_batches_are_sampled_apart_from_image_ones(micro_bench):
    bench, _ = micro_bench
    examples = image_examples(bench, bench.forget_ids, "train", ("gen",)) + text_examples(bench, bench.forget_ids)
    sampler = ExampleSampler(examples, 4, 0)
    kinds = {tuple(e.photo is None for e in sampler()) for _ in range(20)}
    assert all(len(set(k)) == 1 for k in kinds)


def test_a_registry_entry_carries_its_setting_and_refuses_one_the_class_lacks():
    from sua_demo.core.registry import Registry

    class Probe:
        steps: int

    reg: Registry[Probe] = Registry("probe")
    reg.register("probe3", steps=3)(Probe)
    reg.register("probe9", steps=9)(Probe)
    assert (reg.get("probe3").steps, reg.get("probe9")().steps) == (3, 9) and reg.names() == ["probe3", "probe9"]
    with pytest.raises(ValueError, match="declares no step"):
        reg.register("typo", step=3)(Probe)
    with pytest.raises(ValueError, match="registered twice"):
        reg.register("probe3", steps=4)(Probe)


def test_one_list_of_shipped_models():
    """The builds, the model box, the CLI and the Makefile read `sua_demo.core.shipped`; the builds' recipes are exactly
    its models, and every model has a readable label."""
    import subprocess
    import sys

    from sua_demo.cli import parser
    from sua_demo.core import shipped
    from sua_demo.engine.model_cache import SHIPPED_MODELS
    from sua_demo.worlds.build import DEMO_MODELS, NOISE_MODELS, RECIPES
    from sua_demo.worlds.faithful import ROBUST

    assert {r.name for r in (*RECIPES, *ROBUST)} == set(shipped.MODELS) and SHIPPED_MODELS == shipped.MODELS
    assert NOISE_MODELS == shipped.UNLEARNED and DEMO_MODELS == shipped.DEMO
    assert all(shipped.label(m) != m for m in shipped.MODELS)
    with pytest.raises(SystemExit):
        parser().parse_args(["enrol", "--method", "ga_lora", "--out", "x"])  # Your face forgets the demo ways only
    out = subprocess.run([sys.executable, "-m", "sua_demo.core.shipped", "unlearned"], capture_output=True, text=True)
    assert out.stdout.split() == list(shipped.UNLEARNED)
