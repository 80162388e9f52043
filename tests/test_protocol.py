"""The recovery protocol end to end on micro models (random weights are enough to exercise every path)."""

import json

import pytest

from sua_demo.attacks import AttackConfig, load_noise
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


def test_pixel_metrics_and_auroc():
    import torch

    x = torch.rand(3, 3, 16, 16)
    m = pixel_metrics(x, (x + 4 / 255).clamp(0, 1))
    assert m["linf"] <= 4 / 255 + 1e-6 and m["psnr"] > 30 and 0.5 < m["ssim"] <= 1
    assert detector_auroc(torch.tensor([0.1, 0.2]), torch.tensor([0.3, 0.4])) == 1.0
    assert detector_auroc(torch.tensor([0.1, 0.3]), torch.tensor([0.1, 0.3])) == 0.5


@pytest.fixture(scope="module")
def saved_micro(micro_adapter, tmp_path_factory):
    out = tmp_path_factory.mktemp("micro") / "m"
    micro_adapter.model.save_pretrained(out)
    micro_adapter.processor.save_pretrained(out)
    return out


def test_protocol_writes_a_complete_report(saved_micro, micro_bench, tmp_path):
    bench, _ = micro_bench
    cfg = ProtocolConfig(attack=AttackConfig(steps=2, batch_size=4, checkpoint_every=1), splits=[0, 1], retain_people=1)
    report = run_protocol(saved_micro, saved_micro, bench, cfg, tmp_path, vanilla=saved_micro, progress=False)
    assert len(report["splits"]) == 2
    s = report["summary"]
    assert s["unlearned/c_unseen_heldout/gain_sua"]["n"] == 2
    assert "retrain/b_attacker_heldout/gain_same_delta" in s and "unlearned_plain/a_attacker_images/gain_sua" in s
    stealth = report["splits"][0]["stealth"]
    assert {"sua", "random", "sua_plain"} <= set(stealth) and 0 <= stealth["sua"]["detector_auroc"] <= 1
    assert "gen_em" in report["splits"][0]["per_image_pgd"]["a_attacker_images"]
    assert json.loads((tmp_path / "report.json").read_text())["summary"] == s
    md = (tmp_path / "report.md").read_text()
    assert "c_unseen_heldout" in md and "detector AUROC" in md and "## The stealth term (2 split(s))" in md
    assert s["unlearned_plain/c_unseen_heldout/gain_sua"]["n"] == 2 and s["stealth/sua_plain/detector_auroc"]["n"] == 2
    assert "per_image_pgd" not in report["splits"][1]
    noise = load_noise(tmp_path / "delta_split0.safetensors")
    assert noise.meta["attacker_ids"] == report["splits"][0]["split"]["attacker_ids"]
