"""The shipped checkpoints load offline and reproduce their recorded figures (on a subset, for speed)."""

import json
import re
from pathlib import Path

import pytest

from sua_demo.core import shipped
from sua_demo.core.config import BenchConfig, served_world
from sua_demo.dataset import build_bench
from sua_demo.eval.evaluate import answer, score
from sua_demo.models import load_adapter
from sua_demo.models.examples import ImageBank, image_examples
from sua_demo.worlds.build import NOISE_MODELS, RECIPES

pytestmark = pytest.mark.slow  # every shipped checkpoint: `make test-fast` leaves it out

ROOT = Path(__file__).resolve().parents[2] / "checkpoints" / "tiny-llava"
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


NOISE_ROOT = ROOT.parent / "noise"


@pytest.mark.parametrize("name", NOISE_MODELS)  # every model with a noise recipe ships its noise and report
def test_shipped_noise_is_valid_and_reported(name):
    from sua_demo.attacks import load_noise

    folder = NOISE_ROOT / name
    noise = load_noise(folder / "delta_split0.safetensors", resolution=64)
    assert noise.eps == pytest.approx(16 / 255) and noise.meta["attacker_ids"] and noise.meta["unseen_ids"]
    assert set(noise.meta["attacker_ids"]).isdisjoint(noise.meta["unseen_ids"])
    report = json.loads((folder / "report.json").read_text())
    assert report["splits"][0]["split"]["attacker_ids"] == noise.meta["attacker_ids"]
    assert len(report["splits"]) >= 3, "the audit and the report card average over 3 splits"
    assert all((folder / f"delta_split{s['split']['seed']}.safetensors").is_file() for s in report["splits"])
    assert (folder / "report.md").exists()


def test_shipped_noise_reproduces_its_recorded_gain():
    """Apply the shipped IDK noise to the unseen people's held-out photos: the answers must match the report."""
    from sua_demo.attacks import load_noise
    from sua_demo.eval.recovery import answers_with, attack_split, protocol_groups

    folder = NOISE_ROOT / "idk"
    if not folder.is_dir():
        pytest.skip("no shipped IDK noise")
    bench = build_bench(BenchConfig())
    adapter = load_adapter(ROOT / "idk")
    report = json.loads((folder / "report.json").read_text())
    split = attack_split(bench, report["config"]["attacker_fraction"], report["splits"][0]["split"]["seed"])
    examples = protocol_groups(bench, split, report["config"]["retain_people"])["c_unseen_heldout"]
    examples = [e for e in examples if e.item.task == "gen"]
    got = score(
        examples,
        answers_with(adapter, ImageBank(bench, adapter), examples, load_noise(folder / "delta_split0.safetensors")),
    )
    recorded = report["splits"][0]["unlearned"]["sua"]["c_unseen_heldout"]["gen_em"]
    assert got["gen_em"] == pytest.approx(recorded, abs=1 / len(examples) + 1e-9)


def test_shipped_dncnn_removes_gaussian_noise():
    import torch

    from sua_demo.denoisers import build_denoiser

    bench = build_bench(BenchConfig())
    adapter = load_adapter(ROOT / "vanilla")
    clean = adapter.prepare_images([p.photos[5] for p in bench.people[:8]])  # held-out photos: never trained on
    torch.manual_seed(0)
    noisy = (clean + torch.randn_like(clean) * 15 / 255).clamp(0, 1)
    with torch.no_grad():
        denoised = build_denoiser("dncnn")(noisy)
    assert (denoised - clean).pow(2).mean() < 0.7 * (noisy - clean).pow(2).mean()


def test_per_image_pgd_bounds_the_universal_noise_on_its_own_images():
    """The upper bound bounds: one delta per image reaches at least what the shipped universal delta reaches on
    the attacker's own images (mixed tasks, as the protocol runs it), and far above clean."""
    from dataclasses import replace

    from sua_demo.attacks import AttackConfig, load_noise
    from sua_demo.attacks.per_image import per_image_pgd
    from sua_demo.eval.recovery import answers_with, attack_split, protocol_groups

    folder = NOISE_ROOT / "idk"
    if not folder.is_dir():
        pytest.skip("no shipped IDK noise")
    bench = build_bench(BenchConfig())
    adapter = load_adapter(ROOT / "idk")
    bank = ImageBank(bench, adapter)
    noise = load_noise(folder / "delta_split0.safetensors")
    split = attack_split(bench, 0.5, int(noise.meta["split_seed"]))
    own = protocol_groups(bench, split)["a_attacker_images"]
    own = [e for e in own if e.photo == 0]  # one photo of each attacker person, every task
    cfg = replace(AttackConfig(), eot=False, steps=20, alpha=4 / 255)
    pgd = score(own, answer(adapter, bank, own, images=per_image_pgd(adapter, bank, own, cfg, progress=False)))
    universal = score(own, answers_with(adapter, bank, own, noise))
    clean = score(own, answer(adapter, bank, own))
    assert pgd["gen_em"] >= max(universal["gen_em"], clean["gen_em"] + 0.5), (pgd, universal, clean)
    assert pgd["cloze_em"] >= universal["cloze_em"] and pgd["mc_acc"] >= universal["mc_acc"]


DEMO = shipped.DEMO


@pytest.mark.parametrize("name", DEMO)
def test_the_demo_reports_hold_every_study(name):
    """Budget curves, purification, the reference preset, per-image PGD on both models, the stealth ablation."""
    report = json.loads((NOISE_ROOT / name / "report.json").read_text())
    s = report["summary"]
    assert len(report["splits"]) >= 6 and s["stealth/sua_plain/detector_auroc"]["n"] >= 6
    curves = report["budget"]
    assert curves["eps_255"] == [2.0, 4.0, 8.0, 12.0, 16.0, 24.0, 32.0] and curves["splits"] >= 3
    assert {k.split("/")[1] for k in s if k.startswith("purified/")} == {"gaussian", "median", "jpeg", "dncnn", "ddpm"}
    assert s["reference/c_unseen_heldout/gain_sua"]["n"] >= 3
    assert set(report["splits"][0]["per_image_pgd"]) == {"unlearned", "retrain"}
    md = (NOISE_ROOT / name / "report.md").read_text()
    for heading in ("## Budget curves", "## Does δ survive purification?", "## The public code's settings"):
        assert heading in md


def test_the_guided_examples_reproduce_from_the_models():
    """examples.json is measured: recompute the first example's verdict from the shipped files."""
    from sua_demo.engine import Engine

    shipped = json.loads((NOISE_ROOT / "idk" / "examples.json").read_text())["examples"]
    assert shipped and shipped[0]["p"] < 0.05
    eng = Engine(world=served_world({"SUA_WORLD": "first"}))  # this file checks the first world's files
    sess = eng.session("idk")
    vanilla, retrain = eng.controls(sess)
    v = eng.person_verdict(sess, shipped[0]["person"], sess.shipped_noise, None, retrain)
    assert (
        v.count == shipped[0]["beyond_controls"]
        and v.beyond.p == shipped[0]["p"]
        and v.correct["retrain_delta"] == shipped[0]["correct"]["retrain_delta"]
    )


def test_the_ddpm_purifier_ships_small_and_denoises():
    import torch

    from sua_demo.denoisers import build_denoiser
    from sua_demo.denoisers.ddpm import DEFAULT_WEIGHTS

    files = list(DEFAULT_WEIGHTS.glob("*"))
    assert any(f.suffix == ".safetensors" for f in files) and not any(f.suffix in (".bin", ".pt") for f in files)
    assert sum(f.stat().st_size for f in files) <= 5 * 2**20
    bench = build_bench(BenchConfig())
    adapter = load_adapter(ROOT / "vanilla")
    clean = adapter.prepare_images([p.photos[5] for p in bench.people[:8]])  # held-out photos
    torch.manual_seed(0)
    noisy = (clean + torch.randn_like(clean) * 15 / 255).clamp(0, 1)
    with torch.no_grad():
        purified = build_denoiser("ddpm")(noisy)
    assert (purified - clean).pow(2).mean() < (noisy - clean).pow(2).mean()


def test_worlds_summary_names_every_world():
    """worlds.json holds the shipped world and every seed `make worlds` builds, each over >= 3 splits."""
    summary = json.loads((NOISE_ROOT / "worlds.json").read_text())
    make = (ROOT.parent.parent / "Makefile").read_text()
    seeds = re.search(r"build-worlds --seeds ([\d ]+) ", make).group(1).split()
    assert len(summary["worlds"]) >= 3 and any("shipped" in w for w in summary["worlds"])
    assert {f"seed{s}" for s in seeds} <= set(summary["worlds"])
    row = summary["models"]["idk"]["c_unseen_heldout/gain_sua"]
    assert set(row["per_world"]) == set(summary["worlds"]) and all(n >= 3 for n in row["splits"].values())


def test_no_shipped_report_names_this_machines_folders():
    """Reports travel with the repository: folders inside the checkout are recorded relatively."""
    root = str(ROOT.parent.parent)  # the checkout
    texts = [p for p in ROOT.parent.rglob("*") if p.suffix in (".json", ".md")]
    assert texts and not [p for p in texts if root in p.read_text()]


def test_the_recipe_table_is_what_its_shipped_run_files_give():
    """`make recipes-table` is the only writer of recipes.md: the table and its ranking follow the run files."""
    from sua_demo.analysis.recipes import recipe_table

    make = (ROOT.parent.parent / "Makefile").read_text()
    files = re.findall(r"\$\(R\)/(\w+\.json)", make.split("recipes-table:")[1].split("\n\n")[0])
    assert files and all((NOISE_ROOT / "recipes" / f).is_file() for f in files)
    expected = recipe_table([str(NOISE_ROOT / "recipes" / f) for f in files])
    assert (NOISE_ROOT / "recipes.md").read_text() == expected


def test_build_noises_runs_on_any_list_of_splits(tmp_path, monkeypatch):
    """Issue 41: the guided examples are measured on the first split built, so splits without 0 build too."""
    import shutil

    from sua_demo.worlds import build

    ran: list[list[int]] = []

    def protocol(model, retrain, bench, cfg, folder, vanilla=None):  # the recovery protocol, already run
        ran.append(list(cfg.splits))
        folder.mkdir(parents=True, exist_ok=True)
        for s in cfg.splits:
            shutil.copy(NOISE_ROOT / "idk" / f"delta_split{s}.safetensors", folder)

    monkeypatch.setattr(build, "run_protocol", protocol)
    build.build_noises(ROOT, tmp_path, only=["idk"], bench_cfg=BenchConfig(),
                       splits=[2, 1], studies=False)  # fmt: skip
    written = json.loads((tmp_path / "idk" / "examples.json").read_text())
    assert ran == [[2, 1]] and written["noise"] == "delta_split1.safetensors"
    assert all(e["p"] < 0.05 for e in written["examples"])
