import math
from dataclasses import replace

import pytest
import torch
from safetensors.torch import save_file

from sua_demo.attacks import ATTACKS, AttackConfig, Noise, load_noise, save_noise
from sua_demo.attacks.noise import as_saved
from sua_demo.attacks.per_image import per_image_pgd
from sua_demo.attacks.speed import attack_mode
from sua_demo.core.augment import light_jitter, photo_jitter
from sua_demo.core.errors import SuaError
from sua_demo.denoisers import DENOISERS, build_denoiser
from sua_demo.models.examples import ImageBank, image_examples


@pytest.mark.parametrize("name", ["gaussian", "median", "jpeg", "dncnn"])
def test_denoisers_keep_shape_range_and_pass_gradients(name):
    x = torch.rand(2, 3, 32, 32, requires_grad=True)
    y = build_denoiser(name, weights=None)(x) if name == "dncnn" else build_denoiser(name)(x)
    assert y.shape == x.shape and 0 <= y.min() and y.max() <= 1
    y.sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0


def test_denoisers_remove_noise():
    torch.manual_seed(0)
    clean = torch.nn.functional.avg_pool2d(torch.rand(1, 3, 64, 64), 8)
    clean = torch.nn.functional.interpolate(clean, size=64, mode="bilinear")
    noisy = (clean + 0.08 * torch.randn_like(clean)).clamp(0, 1)
    for name in ("gaussian", "median"):
        assert (build_denoiser(name)(noisy) - clean).abs().mean() < (noisy - clean).abs().mean()
    with pytest.raises(ValueError):
        build_denoiser("gaussian")(torch.rand(3, 8, 8))
    assert set(DENOISERS.names()) >= {"gaussian", "median", "jpeg"}


def test_dncnn_trains_and_roundtrips(tmp_path):
    from sua_demo.denoisers.dncnn import DnCNN, train_dncnn

    torch.manual_seed(0)
    images = torch.nn.functional.interpolate(torch.rand(8, 3, 4, 4), size=16, mode="bilinear")
    model, mse = train_dncnn(images, steps=30, batch_size=4, progress=False)
    assert math.isfinite(mse)
    model.save(tmp_path / "d.safetensors", {"steps": 30})
    again = DnCNN(weights=tmp_path / "d.safetensors")
    with torch.no_grad():
        torch.testing.assert_close(again(images), model(images))
    with pytest.raises(SuaError, match="train-dncnn"):
        DnCNN(weights=tmp_path / "missing.safetensors")


def test_jitter_is_seeded_and_in_range():
    x = torch.rand(4, 3, 32, 32)
    a = photo_jitter(x, torch.Generator().manual_seed(1))
    b = photo_jitter(x, torch.Generator().manual_seed(1))
    assert torch.equal(a, b) and a.shape == x.shape and 0 <= a.min() and a.max() <= 1
    assert not torch.equal(a, x)


def test_light_jitter_lights_one_side_and_tints_it_seeded_and_in_range():
    """A grey image under a light from the right comes out brighter on the right than on the left; the same seed
    gives the same light, and values stay images."""
    x = torch.full((64, 3, 16, 16), 0.5)
    a = light_jitter(x, torch.Generator().manual_seed(3))
    assert torch.equal(a, light_jitter(x, torch.Generator().manual_seed(3))) and a.shape == x.shape
    assert 0 <= a.min() and a.max() <= 1 and not torch.equal(a, x)
    sides = (a[..., -4:].mean((1, 2, 3)) - a[..., :4].mean((1, 2, 3))).abs()  # left against right, per image
    assert float(sides.max()) > 0.05  # some images are lit from a side
    assert float((a[:, 0] - a[:, 2]).abs().max()) > 0.005  # and some tinted warmer or cooler


def test_noise_roundtrip_and_apply(tmp_path):
    delta = (torch.rand(3, 16, 16) * 2 - 1) * (8 / 255)
    path = save_noise(Noise(delta, 8 / 255, {"model": "m", "attacker_ids": [1, 2]}), tmp_path / "n.safetensors")
    noise = load_noise(path, resolution=16)
    assert torch.equal(noise.delta, delta) and math.isclose(noise.eps, 8 / 255) and noise.meta["attacker_ids"] == [1, 2]
    x = torch.rand(1, 3, 32, 32)
    y = noise.apply(x)
    assert y.shape == x.shape and (y - x).abs().max() <= 8 / 255 + 1e-6


@pytest.mark.parametrize(
    "tensors,meta,match",
    [
        ({"delta": torch.zeros(3, 8, 8)}, {}, "eps"),
        ({"delta": torch.zeros(3, 8, 9)}, {"eps": "0.1"}, "shape"),
        ({"delta": torch.zeros(8, 8)}, {"eps": "0.1"}, "shape"),
        ({"delta": torch.full((3, 8, 8), float("nan"))}, {"eps": "0.1"}, "NaN"),
        ({"delta": torch.full((3, 8, 8), 0.5)}, {"eps": "0.1"}, "exceeds"),
        ({"delta": torch.zeros(3, 8, 8, dtype=torch.int32)}, {"eps": "0.1"}, "float"),
        ({"other": torch.zeros(3, 8, 8)}, {"eps": "0.1"}, "delta"),
        ({"delta": torch.zeros(3, 8, 8)}, {"eps": "2"}, "eps"),
    ],
)
def test_bad_noise_files_are_refused_clearly(tmp_path, tensors, meta, match):
    path = tmp_path / "bad.safetensors"
    save_file(tensors, path, metadata=meta)
    with pytest.raises(SuaError, match=match):
        load_noise(path)


def test_non_safetensors_and_wrong_resolution(tmp_path):
    path = tmp_path / "n.safetensors"
    path.write_bytes(b"\x80\x04pickle, not safetensors")
    with pytest.raises(SuaError, match="safetensors"):
        load_noise(path)
    save_noise(Noise(torch.zeros(3, 8, 8), 0.1), path)
    with pytest.raises(SuaError, match="px"):
        load_noise(path, resolution=16)
    with pytest.raises(SuaError, match="no noise file"):
        load_noise(tmp_path / "missing.safetensors")


def test_momentum_steps_by_the_sign_of_the_decaying_sum_of_normalised_gradients(micro_adapter):
    cfg = AttackConfig(optimizer="momentum", momentum=1.0, alpha=0.1, alpha_schedule="constant")
    attack = ATTACKS.get("sua")(micro_adapter, cfg)
    delta = torch.zeros(2)
    attack.update(delta, torch.tensor([4.0, 4.0]), 0)  # normalised to [1, 1]: a plain sign step
    assert torch.allclose(delta, torch.tensor([-0.1, -0.1]))
    attack.update(delta, torch.tensor([-1.0, -3.0]), 1)  # normalised [-0.5, -1.5]; the sum [0.5, -0.5]
    assert torch.allclose(delta, torch.tensor([-0.2, 0.0]))  # where plain PGD would step both up
    with pytest.raises(SuaError, match="optimizer"):
        ATTACKS.get("sua")(micro_adapter, AttackConfig(optimizer="sgd"))


def _three_steps(micro_adapter, micro_bench, attack: str, **settings) -> torch.Tensor:
    """The delta of a 3-step run of `attack` on the micro bench's forget photos, from a random start."""
    bench, _ = micro_bench
    examples = image_examples(bench, bench.forget_ids, "train", ("gen",))
    cfg = AttackConfig(steps=3, batch_size=4, precision="fp32", random_start=True, **settings)
    return ATTACKS.get(attack)(micro_adapter, cfg).run(ImageBank(bench, micro_adapter), examples, progress=False).delta


def test_the_coarse_delta_stays_constant_over_its_blocks(micro_adapter, micro_bench):
    delta = _three_steps(micro_adapter, micro_bench, "sua_lowfreq", eot=False, block=8)
    blocks = delta.unfold(1, 8, 8).unfold(2, 8, 8)  # (3, 8, 8, 8, 8): channel, block row, block column, pixels
    assert delta.abs().max() > 0 and torch.equal(blocks, blocks[..., :1, :1].expand_as(blocks))
    with pytest.raises(SuaError, match="block"):
        ATTACKS.get("sua_lowfreq")(micro_adapter, AttackConfig(block=5))


def test_the_frame_delta_is_zero_inside_and_moves_on_the_border(micro_adapter, micro_bench):
    delta = _three_steps(micro_adapter, micro_bench, "sua_frame", eot=True, frame=4)
    size = micro_adapter.image_size
    assert torch.equal(delta[:, 4 : size - 4, 4 : size - 4], torch.zeros(3, size - 8, size - 8))
    border = delta.clone()
    border[:, 4 : size - 4, 4 : size - 4] = 1
    assert (border != 0).all() and delta.abs().max() <= AttackConfig().eps + 1e-7  # the frame is live, within budget
    with pytest.raises(SuaError, match="frame"):
        ATTACKS.get("sua_frame")(micro_adapter, AttackConfig(frame=size // 2))


@pytest.mark.parametrize("optimizer", ["pgd", "momentum", "adam"])
def test_sua_lowers_the_loss_within_budget_and_resumes(micro_adapter, micro_bench, tmp_path, optimizer):
    bench, _ = micro_bench
    bank = ImageBank(bench, micro_adapter)
    examples = image_examples(bench, bench.forget_ids, "train", ("gen",))
    cfg = AttackConfig(
        steps=6,
        batch_size=8,
        eot=False,
        optimizer=optimizer,
        alpha=4 / 255,
        adam_lr=0.02,
        checkpoint_every=3,
        stealth_weight=1.0,
        beta=0.5,
    )
    x = bank.get(examples)
    q, a = [e.item.question for e in examples], [e.item.answer for e in examples]
    with torch.no_grad():
        before = micro_adapter.answer_nll(x, q, a).mean()
    losses = []
    ckpt = tmp_path / "delta.safetensors"
    noise = ATTACKS.get("sua")(micro_adapter, cfg).run(
        bank, examples, checkpoint=ckpt, callback=lambda s, st: losses.append(st), progress=False
    )
    assert noise.delta.abs().max() <= cfg.eps + 1e-6 and noise.delta.abs().max() > 0
    assert {"nll", "nll_denoised", "cos_denoised"} <= set(losses[-1])
    with torch.no_grad():
        after = micro_adapter.answer_nll(noise.apply(x), q, a).mean()
    assert after < before
    assert load_noise(ckpt).meta["step"] == 6

    def resume(config, **kw):
        steps = []
        out = ATTACKS.get(kw.pop("attack", "sua"))(micro_adapter, config).run(
            bank, examples, checkpoint=ckpt, callback=lambda s, st: steps.append(s), progress=False, **kw
        )
        return out, steps

    # Resuming a finished run does no further steps and returns the same delta, its file and record untouched
    # (the fit's own time and loss); a longer run takes the rest.
    saved = ckpt.read_bytes()
    again, steps = resume(cfg)
    assert steps == [] and torch.equal(again.delta, noise.delta) and ckpt.read_bytes() == saved
    assert again.meta["seconds"] == load_noise(ckpt).meta["seconds"] and "nll" in again.meta
    _, steps = resume(replace(cfg, steps=7))
    assert steps == [7] and load_noise(ckpt).meta["step"] == 7
    # Another run's delta is refused: other settings, other people, another attack, or fewer steps than it holds.
    with pytest.raises(SuaError, match=r"stealth_weight=1.0 \(now 2.0\)"):
        resume(replace(cfg, stealth_weight=2.0, steps=7))
    with pytest.raises(SuaError, match=r"attacker_ids=None \(now \[1, 2\]\)"):
        resume(replace(cfg, steps=7), meta={"attacker_ids": [1, 2]})
    with pytest.raises(SuaError, match="attack='SUA' \\(now 'SUAPlain'\\)"):
        resume(replace(cfg, steps=7, stealth_weight=0.0, beta=0.0), attack="sua_plain")
    with pytest.raises(SuaError, match="already holds 7 steps"):
        resume(replace(cfg, steps=5))


def test_a_fit_written_in_another_checkout_resumes_here_and_no_other_models_does(micro_adapter, micro_bench, tmp_path):
    """Records name a model inside the checkout by its checkout-relative path; a fit recorded with another clone's
    absolute path to the same model (a study's committed restarts) is the same run, another model's is not."""
    from sua_demo.attacks.base import _check_resumable
    from sua_demo.core.config import CHECKPOINTS

    bench, _ = micro_bench
    bank, was = ImageBank(bench, micro_adapter), micro_adapter.source
    micro_adapter.source = str(CHECKPOINTS / "faithful" / "idk")  # as a study names it: absolute, in this checkout
    try:
        examples = image_examples(bench, bench.forget_ids, "train", ("gen",))
        fit = ATTACKS.get("sua")(micro_adapter, AttackConfig(steps=1, batch_size=4, eot=False))
        fit.run(bank, examples, checkpoint=tmp_path / "delta.safetensors", progress=False)
    finally:
        micro_adapter.source = was
    assert load_noise(tmp_path / "delta.safetensors").meta["model"] == "checkpoints/faithful/idk"
    run = {"model": "checkpoints/faithful/idk_robust", "attack": "SUA", "config": {"steps": 12, "eps": 16 / 255}}
    saved = {**as_saved(run), "model": "/work/clone/checkpoints/faithful/idk_robust", "step": 5}
    _check_resumable(saved, run, "delta.safetensors")
    for other in ("/work/clone/checkpoints/faithful/idk", "/work/clone/checkpoints/first/idk_robust"):
        with pytest.raises(SuaError, match="model="):
            _check_resumable({**saved, "model": other}, run, "delta.safetensors")


def test_stealth_term_has_a_gradient(micro_adapter, micro_bench):
    """The alignment term must move delta (the public code computes it under no_grad, where it cannot)."""
    bench, _ = micro_bench
    bank = ImageBank(bench, micro_adapter)
    examples = image_examples(bench, bench.forget_ids, "train", ("gen",))[:4]
    x = bank.get(examples)
    delta = (torch.rand(3, x.shape[-1], x.shape[-1]) * 0.1).requires_grad_(True)
    attack = ATTACKS.get("sua")(micro_adapter, AttackConfig(stealth_weight=1.0))
    plain = ATTACKS.get("sua_plain")(micro_adapter, AttackConfig(stealth_weight=1.0))
    g_full = torch.autograd.grad(attack.objective(x, delta, examples, None, bank)[0], delta)[0]
    g_plain = torch.autograd.grad(plain.objective(x, delta, examples, None, bank)[0], delta)[0]
    assert not torch.allclose(g_full, g_plain)


def test_random_noise_and_per_image_pgd(micro_adapter, micro_bench):
    bench, _ = micro_bench
    bank = ImageBank(bench, micro_adapter)
    # Mixed tasks over several people: per-image PGD batches by task, and must hand rows back in input order.
    examples = image_examples(bench, bench.forget_ids, "train", ("gen", "mc", "cloze"))[::3]
    assert len({e.item.task for e in examples}) == 3 and len({(e.person_id, e.photo) for e in examples}) > 1
    noise = ATTACKS.get("random")(micro_adapter, AttackConfig(eps=4 / 255)).run(bank, examples)
    assert noise.delta.abs().max() <= 4 / 255 and noise.delta.std() > 0
    cfg = AttackConfig(steps=3, alpha=2 / 255, eps=4 / 255)
    adv = per_image_pgd(micro_adapter, bank, examples, cfg, progress=False)
    assert adv.shape == bank.get(examples).shape
    assert (adv - bank.get(examples)).abs().max() <= 4 / 255 + 1e-6


def test_ddpm_purifier_code_path_runs():
    """A few training steps of the diffusers UNet, then purification with a straight-through gradient."""
    from sua_demo.denoisers.ddpm import DDPMPurifier, train_ddpm

    images = torch.rand(4, 3, 16, 16)
    unet, loss = train_ddpm(images, steps=2, batch_size=2, progress=False)
    assert math.isfinite(loss)
    purifier = DDPMPurifier(unet=unet, t_star=30, reverse_steps=3)
    x = images[:2].clone().requires_grad_(True)
    y = purifier(x)
    assert y.shape == x.shape and 0 <= y.min() and y.max() <= 1 and not torch.allclose(y, x)
    y.sum().backward()
    assert torch.equal(x.grad, torch.ones_like(x))
    with pytest.raises(SuaError, match="DDPM weights"):
        build_denoiser("ddpm", weights="/nonexistent")


def test_attack_after_evaluation_in_the_same_process(micro_bench, micro_model_cfg):
    """Evaluation runs under inference_mode; nothing it caches may break a later attack's backward pass."""
    from sua_demo.eval.evaluate import answer
    from sua_demo.training.finetune import build_tiny

    bench, _ = micro_bench
    adapter = build_tiny(bench, micro_model_cfg)  # fresh: nothing cached yet
    bank = ImageBank(bench, adapter)
    examples = image_examples(bench, bench.forget_ids, "train", ("gen",))[:2]
    answer(adapter, bank, examples)
    adv = per_image_pgd(adapter, bank, examples, AttackConfig(steps=1), progress=False)
    assert adv.shape == bank.get(examples).shape


def test_gaussian_blur_equals_reflect_padded_convolution():
    """The matmul blur is the separable depthwise convolution it replaced, to float rounding."""
    import torch.nn.functional as F

    r = torch.arange(5, dtype=torch.float32) - 2
    k = torch.exp(-(r**2) / 2)
    k = (k / k.sum()).view(1, 1, 1, -1).expand(3, 1, 1, -1)
    for shape in [(2, 3, 64, 64), (1, 3, 17, 40)]:
        x = torch.rand(shape)
        ref = F.conv2d(F.pad(x, (2, 2, 0, 0), mode="reflect"), k, groups=3)
        ref = F.conv2d(F.pad(ref, (0, 0, 2, 2), mode="reflect"), k.transpose(2, 3), groups=3).clamp(0, 1)
        torch.testing.assert_close(build_denoiser("gaussian")(x), ref, atol=1e-6, rtol=0)


def test_attack_mode_is_equivalent_and_undone(micro_adapter, micro_bench):
    """Patch convolutions as matmuls give the same output; eager attention, threads and patches are undone."""

    model = micro_adapter.model
    conv = next(m for m in model.modules() if isinstance(m, torch.nn.Conv2d))
    x = torch.rand(2, 3, 64, 64)
    with torch.no_grad():
        before = conv(x)
    attn, threads = model.config._attn_implementation, torch.get_num_threads()
    with attack_mode(micro_adapter, torch.device("cpu"), torch.bfloat16, threads=1):
        assert "forward" in vars(conv) and torch.get_num_threads() == 1
        assert model.config._attn_implementation == ("eager" if attn == "sdpa" else attn)
        with torch.no_grad():
            torch.testing.assert_close(conv(x), before, atol=1e-5, rtol=1e-5)
    assert "forward" not in vars(conv) and torch.get_num_threads() == threads
    assert model.config._attn_implementation == attn


@pytest.mark.slow
def test_the_unread_vision_layer_is_skipped_with_the_same_features_and_gradient():
    """The faithful tower's projector reads layer 3 of 4 (vision_feature_layer -2): in attack mode layer 4 passes
    its input through, the image features and their input gradient stay the same, and it runs again on exit."""
    from sua_demo.core.config import shipped_world
    from sua_demo.models import load_adapter

    adapter = load_adapter(shipped_world("faithful").models / "general")
    layers = list(adapter.model.model.vision_tower.encoder.layers)
    assert adapter.unread_vision_layers() == layers[3:]
    x = torch.rand(2, 3, adapter.image_size, adapter.image_size, generator=torch.Generator().manual_seed(0))

    def features_and_grad() -> tuple[torch.Tensor, torch.Tensor]:
        v = x.clone().requires_grad_(True)
        feats = adapter.image_features(adapter.pixel_values(v))
        return feats.detach(), torch.autograd.grad(feats.square().sum(), v)[0]

    before, grad = features_and_grad()
    calls: list[int] = []
    hook = layers[3].register_forward_hook(lambda m, i, o: calls.append(int(torch.equal(i[0], o))))
    try:
        with attack_mode(adapter, torch.device("cpu"), None, threads=1):
            inside, grad_inside = features_and_grad()
        adapter.image_features(adapter.pixel_values(x))
    finally:
        hook.remove()
    assert calls == [1, 0]  # passed through in attack mode, computed after it
    torch.testing.assert_close(inside, before, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(grad_inside, grad, atol=1e-4 * float(grad.abs().max()), rtol=1e-3)  # matmul patches
    first = shipped_world("first").models / "vanilla"  # reads its last layer: nothing to skip
    assert load_adapter(first).unread_vision_layers() == []


def sua_step_inputs(micro_adapter, micro_bench):
    """A SUA attack and the (x, delta, examples, bank) of one step on 8 forget photos, delta small and random."""
    bench, _ = micro_bench
    bank = ImageBank(bench, micro_adapter)
    examples = image_examples(bench, bench.forget_ids, "train", ("gen",))[:8]
    x = bank.get(examples)
    delta = (torch.rand(3, x.shape[-1], x.shape[-1], generator=torch.Generator().manual_seed(0)) - 0.5) * 0.1
    delta.requires_grad_(True)
    return ATTACKS.get("sua")(micro_adapter, AttackConfig(beta=0.5)), x, delta, examples, bank


def test_eager_attention_in_fp32_gives_the_plain_step_and_only_for_short_sequences(micro_adapter, micro_bench):
    """The fp32 step with eager attention (chosen on CPU for short sequences) has the same loss and gradient as
    with the fused kernel; a tower of many image tokens keeps the fused kernel."""
    from sua_demo.attacks.speed import EAGER_MAX_IMAGE_TOKENS, eager_attention_pays

    adapter, model, cpu = micro_adapter, micro_adapter.model, torch.device("cpu")
    attn = adapter.attention
    adapter.set_attention("sdpa")
    try:
        assert adapter.vision_tokens() <= EAGER_MAX_IMAGE_TOKENS
        assert eager_attention_pays(adapter, cpu, None) and eager_attention_pays(adapter, cpu, torch.bfloat16)
        assert not eager_attention_pays(adapter, torch.device("meta"), None)
        attack, x, delta, examples, bank = sua_step_inputs(micro_adapter, micro_bench)

        def step() -> tuple[torch.Tensor, float]:
            loss, _ = attack.objective(x, delta, examples, None, bank)
            return torch.autograd.grad(loss, delta)[0], float(loss.detach())

        fused, loss_fused = step()
        with attack_mode(adapter, cpu, None, threads=1):
            assert model.config._attn_implementation == "eager"
            eager, loss_eager = step()
        assert model.config._attn_implementation == "sdpa"
        torch.testing.assert_close(eager, fused, atol=1e-5, rtol=1e-4)
        assert abs(float(loss_eager) - float(loss_fused)) < 1e-5
        vision = model.config.vision_config
        old = vision.image_size
        vision.image_size = vision.patch_size * 24  # 577 tokens, as LLaVA-1.5's tower makes
        try:
            assert not eager_attention_pays(adapter, cpu, None) and eager_attention_pays(adapter, cpu, torch.bfloat16)
        finally:
            vision.image_size = old
    finally:
        adapter.set_attention(attn)


def test_bf16_autocast_step_follows_the_fp32_gradient(micro_adapter, micro_bench):
    """bf16 autocast changes rounding, not the direction: the sign steps mostly agree with fp32's."""
    attack, x, delta, examples, bank = sua_step_inputs(micro_adapter, micro_bench)
    g32, _ = attack._grad((x, delta, examples, None, bank), None)
    g16, _ = attack._grad((x, delta, examples, None, bank), torch.bfloat16)
    assert (g32.sign() == g16.sign()).float().mean() > 0.8
    assert torch.nn.functional.cosine_similarity(g32.flatten(), g16.flatten(), dim=0) > 0.9


def test_a_failing_compile_falls_back_to_eager(micro_adapter, micro_bench, monkeypatch, caplog):
    from sua_demo.attacks import speed

    def broken(towers):
        towers = towers[:1]  # the language model

        def fail(*args, **kwargs):
            raise RuntimeError("no C++ compiler")

        for t in towers:
            t._compiled_call_impl = fail
        return towers

    monkeypatch.setattr(speed, "compile_towers", broken)
    bench, _ = micro_bench
    examples = image_examples(bench, bench.forget_ids, "train", ("gen",))[:4]
    cfg = AttackConfig(steps=2, batch_size=4, compile=True)
    noise = ATTACKS.get("sua")(micro_adapter, cfg).run(ImageBank(bench, micro_adapter), examples, progress=False)
    assert noise.delta.abs().max() > 0 and "torch.compile failed" in caplog.text
    assert micro_adapter.model.model.language_model._compiled_call_impl is None


def test_length_buckets_give_the_single_pass_nll(micro_adapter, micro_bench):
    from sua_demo.attacks.sua import bucketed_loss

    bench, _ = micro_bench
    bank = ImageBank(bench, micro_adapter)
    examples = image_examples(bench, bench.ids("all"), "train", ("gen", "mc", "cloze"))[:40]
    q, a = [e.item.question for e in examples], [e.item.answer for e in examples]
    with torch.no_grad():
        feats = micro_adapter.image_features(micro_adapter.pixel_values(bank.get(examples)))
        single = nll_from_features(micro_adapter, feats, q, a)
        torch.testing.assert_close(bucketed_loss(micro_adapter, feats, q, a), single, atol=1e-5, rtol=1e-5)


def test_margin_loss_saturates_once_the_target_leads():
    """The margin answer term pushes a token until it leads every other by `margin`, then lets it be."""
    from sua_demo.attacks.sua import token_margin

    logits = torch.tensor([[5.0, 1.0, 0.0], [1.0, 1.5, 0.0], [0.0, 0.0, 3.0]], requires_grad=True)
    targets = torch.tensor([0, 0, 1])
    loss = token_margin(2.0)(logits, targets)
    torch.testing.assert_close(loss, torch.tensor([0.0, 2.5, 5.0]))  # leads by 4; trails by .5; trails by 3
    loss.sum().backward()
    assert logits.grad[0].abs().sum() == 0 and logits.grad[1, 0] < 0 and logits.grad[2, 2] > 0


def test_the_l2_attack_keeps_its_ball_and_declares_its_linf(micro_adapter, micro_bench):
    bench, _ = micro_bench
    bank = ImageBank(bench, micro_adapter)
    examples = image_examples(bench, bench.forget_ids, "train", ("gen",))
    cfg = AttackConfig(eps=4 / 255, alpha=2 / 255, steps=3, batch_size=4, random_start=True, precision="fp32")
    attack = ATTACKS.get("sua_l2")(micro_adapter, cfg)
    noise = attack.run(bank, examples, progress=False)
    radius = cfg.eps * noise.delta.numel() ** 0.5
    assert float(noise.delta.norm()) <= radius * (1 + 1e-5) and noise.meta["norm"] == "l2"
    assert noise.eps == pytest.approx(float(noise.delta.abs().max()))
    x = bank.get(examples[:2])
    adv = attack.perturb_each(x, examples[:2], bank, steps=2)  # one delta per image, each in its own ball
    assert ((adv - x).flatten(1).norm(dim=1) <= radius * (1 + 1e-5)).all()


def test_the_best_delta_is_kept_beside_the_last(micro_adapter, micro_bench):
    bench, _ = micro_bench
    examples = image_examples(bench, bench.forget_ids, "train", ("gen",))
    attack = ATTACKS.get("sua")(micro_adapter, AttackConfig(steps=6, batch_size=4, alpha=4 / 255, precision="fp32"))
    last = attack.run(ImageBank(bench, micro_adapter), examples, progress=False)
    best = attack.best
    assert best is not None and 1 <= best.meta["step"] <= 6 and best.meta["kept"] == "best"
    assert best.delta.abs().max() <= last.eps + 1e-6 and last.meta["step"] == 6


def test_answer_only_mlp_leaves_other_threads_alone(micro_adapter, micro_bench):
    """The pruned last MLP is switched on per thread: the app's answers, computed in another thread while an
    attack step runs, must see the whole model."""
    import threading

    from sua_demo.models import answer_only

    bench, _ = micro_bench
    x = ImageBank(bench, micro_adapter).get(image_examples(bench, bench.ids("all"), "train", ("gen",))[:2])
    batch = micro_adapter.encode_batch(True, ["Where was this person born?"] * 2, ["Glenmere"] * 2)
    assert answer_only.install(micro_adapter.model)
    with torch.no_grad():
        full = micro_adapter.logits(batch, x)
        keep = torch.zeros_like(batch["input_ids"], dtype=torch.bool)
        keep[:, -2:] = True
        seen = {}
        with answer_only.only_at(keep):
            pruned = micro_adapter.logits(batch, x)
            worker = threading.Thread(target=lambda: seen.update(logits=micro_adapter.logits(batch, x)))
            worker.start()
            worker.join()
    torch.testing.assert_close(seen["logits"], full)
    torch.testing.assert_close(pruned[:, -2:], full[:, -2:], atol=1e-5, rtol=1e-5)
    assert not torch.allclose(pruned[:, :-2], full[:, :-2], atol=1e-3)  # elsewhere the last MLP did not run


def nll_from_features(adapter, features, questions, answers):
    """(N,) answer NLL from precomputed image features, the way the attack's losses read answer_token_logits."""
    import torch.nn.functional as F

    from sua_demo.models.base import per_row_mean

    logits, targets, rows = adapter.answer_token_logits(features, questions, answers)
    return per_row_mean(F.cross_entropy(logits.float(), targets, reduction="none"), rows, len(questions))


@pytest.mark.parametrize("optimizer", ["momentum", "adam"])
def test_the_l2_attack_refuses_an_optimiser_it_would_ignore(micro_adapter, optimizer):
    """Its step is the normalised gradient: a sign-step optimiser asked for must not be silently dropped."""
    from sua_demo.attacks import ATTACKS, AttackConfig
    from sua_demo.core.errors import BadValueError

    with pytest.raises(BadValueError, match="normalised gradient"):
        ATTACKS.get("sua_l2")(micro_adapter, AttackConfig(optimizer=optimizer))
