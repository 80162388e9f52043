"""The recovery protocol end to end on micro models (random weights are enough to exercise every path)."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from sua_demo.attacks import AttackConfig, load_noise
from sua_demo.core.errors import SuaError
from sua_demo.eval.protocol import ProtocolConfig, run_protocol
from sua_demo.eval.recovery import GROUPS, attack_split, protocol_groups
from sua_demo.eval.stealth import detector_auroc, pixel_metrics


def test_attack_split_is_disjoint_and_seeded(micro_bench):
    bench, _ = micro_bench
    s = attack_split(bench, 0.5, seed=3)
    assert set(s.attacker_ids).isdisjoint(s.unseen_ids)
    assert sorted(s.attacker_ids + s.unseen_ids) == sorted(bench.forget_ids)
    assert attack_split(bench, 0.5, seed=3) == s
    groups = protocol_groups(bench, s, retain_people=2)
    assert set(groups) == set(GROUPS)
    assert {e.person_id for e in groups["c_unseen_heldout"]} == set(s.unseen_ids)
    assert all(e.photo in bench.person(e.person_id).photo_indices("heldout") for e in groups["b_attacker_heldout"])


def test_restarts_of_one_split_start_apart_and_seed_0_keeps_the_splits_draws():
    """Five restarts of each of six splits: thirty different seeds (the split's seed once replaced the attack's, and
    the restarts were one run); the shipped recipe's seed 0 leaves the split's seed as it was."""
    from dataclasses import replace

    from sua_demo.attacks import AttackConfig
    from sua_demo.eval.protocol import split_attack

    restart = replace(AttackConfig(), random_start=True)
    runs = [split_attack(replace(restart, seed=k), s) for k in range(5) for s in range(6)]
    assert len({r.seed for r in runs}) == 30
    assert split_attack(AttackConfig(), 4).seed == 4


def test_pixel_metrics_and_auroc():
    import torch

    x = torch.rand(3, 3, 16, 16)
    m = pixel_metrics(x, (x + 4 / 255).clamp(0, 1))
    assert m["linf"] <= 4 / 255 + 1e-6 and m["psnr"] > 30 and 0.5 < m["ssim"] <= 1
    assert detector_auroc(torch.tensor([0.1, 0.2]), torch.tensor([0.3, 0.4])) == 1.0
    assert detector_auroc(torch.tensor([0.1, 0.3]), torch.tensor([0.1, 0.3])) == 0.5


def test_protocol_writes_a_complete_report(saved_micro, micro_bench, tmp_path):
    bench, _ = micro_bench
    attack = AttackConfig(steps=2, batch_size=4, checkpoint_every=1)
    cfg = ProtocolConfig(attack=attack, splits=[0, 1], retain_people=1, per_image_steps=5)
    report = run_protocol(saved_micro, saved_micro, bench, cfg, tmp_path, vanilla=saved_micro, progress=False)
    assert len(report["splits"]) == 2
    s = report["summary"]
    assert s["unlearned/c_unseen_heldout/gain_sua"]["n"] == 2
    assert "retrain/b_attacker_heldout/gain_same_delta" in s and "unlearned_plain/a_attacker_images/gain_sua" in s
    stealth = report["splits"][0]["stealth"]
    assert {"sua", "random", "sua_plain"} <= set(stealth) and 0 <= stealth["sua"]["detector_auroc"] <= 1
    per_image = report["splits"][0]["per_image_pgd"]
    assert set(per_image) == {"unlearned", "retrain"} and "cloze_em" in per_image["retrain"]["pgd"]
    assert json.loads((tmp_path / "report.json").read_text())["summary"] == s
    md = (tmp_path / "report.md").read_text()
    assert (
        "c: unseen people, held-out photos" in md
        and "detector AUROC" in md
        and "## The stealth term (2 split(s))" in md
    )
    assert "write-in ceiling" in md
    assert s["unlearned_plain/c_unseen_heldout/gain_sua"]["n"] == 2 and s["stealth/sua_plain/detector_auroc"]["n"] == 2
    assert "per_image_pgd" not in report["splits"][1]
    noise = load_noise(tmp_path / "delta_split0.safetensors")
    assert noise.meta["attacker_ids"] == report["splits"][0]["split"]["attacker_ids"]


def test_a_stopped_protocol_resumes_from_its_finished_splits(saved_micro, micro_bench, tmp_path, monkeypatch):
    """A build stopped after split 0 reads it back and runs only split 1; other settings run every split again."""
    from sua_demo.eval import protocol

    bench, _ = micro_bench
    cfg = ProtocolConfig(attack=AttackConfig(steps=2, batch_size=4), splits=[0], retain_people=1, extras=False)
    first = run_protocol(saved_micro, saved_micro, bench, cfg, tmp_path, progress=False)
    ran = []
    real = protocol.run_split
    monkeypatch.setattr(protocol, "run_split", lambda seed, *a: ran.append(seed) or real(seed, *a))
    again = run_protocol(saved_micro, saved_micro, bench, replace(cfg, splits=[0, 1]), tmp_path, progress=False)
    assert ran == [1] and again["splits"][0] == json.loads(json.dumps(first["splits"][0]))
    other = replace(cfg, attack=AttackConfig(eps=8 / 255, steps=2, batch_size=4))
    with pytest.raises(SuaError, match="comes from another run"):  # the old split's noise is refused by name
        run_protocol(saved_micro, saved_micro, bench, other, tmp_path, progress=False)
    assert ran == [1, 0]


def test_protocol_studies_budget_purification_and_the_reference_preset(saved_micro, micro_bench, tmp_path, monkeypatch):
    from dataclasses import replace

    from sua_demo.attacks import presets

    bench, _ = micro_bench
    tiny_reference = replace(presets.PRESETS["reference"], steps=2, batch_size=2, denoiser="gaussian")
    monkeypatch.setitem(presets.PRESETS, "reference", tiny_reference)
    cfg = ProtocolConfig(
        attack=AttackConfig(steps=2, batch_size=4, checkpoint_every=1, precision="fp32"),
        splits=[0, 1],
        retain_people=1,
        extras=False,
        budgets=(4.0, 16.0),
        purifiers=("gaussian", "median"),
        reference=True,
        study_splits=1,
    )
    report = run_protocol(saved_micro, saved_micro, bench, cfg, tmp_path, progress=False)
    curves = report["budget"]
    assert curves["eps_255"] == [4.0, 16.0] and curves["splits"] == 1
    assert set(curves["recovery"]) == {"a_attacker_images", "b_attacker_heldout", "c_unseen_heldout", "retain_heldout"}
    assert len(curves["auroc"]["mean"]) == 2 and (tmp_path / "delta_eps4_split0.safetensors").exists()
    assert "budget" not in report["splits"][1] and "reference" not in report["splits"][1]
    for name in ("delta_reference_split0", "delta_eps4_split0", "delta_split0"):  # the protocol's precision, all
        assert load_noise(tmp_path / f"{name}.safetensors").meta["precision"] == "fp32"
    s = report["summary"]
    assert (
        s["purified/median/c_unseen_heldout/gain_sua"]["n"] == 1 and s["reference/a_attacker_images/gain_sua"]["n"] == 1
    )
    md = (tmp_path / "report.md").read_text()
    assert "## Budget curves" in md and "median(x + δ)" in md and "## The public code's settings" in md
    from sua_demo.ui.shared.plots import budget_figure

    assert len(budget_figure(curves).data) == 5  # four groups and the AUROC


def test_recipe_validation_reads_only_the_attackers_train_photos(monkeypatch):
    """Recipes are chosen on the attacker's side: fitting and scoring never touch a held-out photo or an unseen
    person; a retain term reads the retain examples it is given and nothing else."""
    from pathlib import Path

    from sua_demo.core.config import BenchConfig
    from sua_demo.dataset import build_bench
    from sua_demo.eval.validation import VAL_GROUPS, validate, validation_split
    from sua_demo.models import load_adapter
    from sua_demo.models.examples import ImageBank, image_examples

    bench = build_bench(BenchConfig())
    adapter = load_adapter(Path(__file__).resolve().parents[2] / "checkpoints" / "tiny-llava" / "idk")
    bank = ImageBank(bench, adapter)
    seen: set[tuple[int, int]] = set()
    real_get = bank.get

    def spy(examples):
        seen.update((e.person_id, e.photo) for e in examples)
        return real_get(examples)

    monkeypatch.setattr(bank, "get", spy)
    split = attack_split(bench, 0.5, seed=1)
    retain = image_examples(bench, bench.retain_ids[:2], "train", ("gen",))
    cfg = AttackConfig(steps=2, batch_size=8, precision="fp32", retain_kl_weight=1.0)
    rec = validate(adapter, bank, bench, split, cfg, fit_tasks=("gen",), retain=retain)
    vs = validation_split(bench, split)
    assert sorted(vs.fit_ids + vs.val_ids) == split.attacker_ids and not set(vs.fit_ids) & set(vs.val_ids)
    forget = {(p, ph) for p, ph in seen if p in bench.forget_ids}
    assert {p for p, _ in forget} == set(split.attacker_ids)
    assert all(ph in bench.person(p).photo_indices("train") for p, ph in forget)
    others = {(p, ph) for p, ph in seen if p not in bench.forget_ids}
    assert others and others <= {(e.person_id, e.photo) for e in retain}  # the retain term drew from its own
    assert set(rec["delta"]) == set(VAL_GROUPS) and rec["delta"]["fit"]["gen_n"] > 0


def test_write_in_study_counts_whose_answer_a_wrong_one_is(micro_bench):
    """The write-in study's counting (sua_demo/analysis/write_in.py): a refusal, a right answer, another person's
    answer and a made-up one, each counted where it belongs; the person asked about is left out of every pool; no
    wrong answers give no rate."""
    from sua_demo.analysis.write_in import answers_by_fact, count, rates
    from sua_demo.core.refusal import DEFAULT
    from sua_demo.models.examples import image_examples

    bench, _ = micro_bench
    a, b = bench.retain_ids[:2]
    ex = [e for e in image_examples(bench, [a], "train", ("gen",)) if e.item.fact == "name"][:1] * 4
    answers = [DEFAULT.phrases[0], bench.person(a).facts["name"], bench.person(b).facts["name"], "Nobody Atall"]
    pools = {"attacker": [a, bench.forget_ids[0]], "unseen": [a], "retain": list(bench.retain_ids)}
    said = answers_by_fact(bench)
    got = rates(count(ex, answers, DEFAULT, pools, said))
    assert [got[k] for k in ("refused", "right", "wrong")] == [25.0, 25.0, 50.0]
    assert got["real_value"] == 50.0 and got["hit_attacker"] == 0.0
    assert got["hit_retain"] == pytest.approx(50 / (len(bench.retain_ids) - 1))  # a left out: one hit in 1 of 2
    assert rates(count(ex[:1], answers[:1], DEFAULT, pools, said))["hit_retain"] is None


def test_the_shipped_splits_are_filed_under_the_settings_a_run_keys_on_today():
    """A setting added to ProtocolConfig must not make every shipped split run again (ADDED_SETTINGS)."""
    from sua_demo.eval.protocol import split_key

    shipped = sorted((Path(__file__).parents[2] / "checkpoints").glob("**/noise/*/split*.json"))
    assert shipped
    for path in shipped:
        saved = json.loads(path.read_text())["key"]
        cfg = ProtocolConfig(**{k: v for k, v in saved["config"].items() if k in ("extras", "reference")})
        assert set(split_key(cfg, saved["models"])["config"]) == set(saved["config"]), path
    moved = split_key(replace(ProtocolConfig(), per_image_steps=5), {})["config"]
    assert moved["per_image_steps"] == 5  # a changed value is keyed, so it runs again
