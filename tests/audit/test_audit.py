"""The residual-knowledge audit on micro models: every registered method runs on both models, its control
beside it, and the report holds the table and the per-fact states."""

import json

import pytest
import torch

from sua_demo.attacks import AttackConfig
from sua_demo.audit import AUDITS
from sua_demo.audit.quantize import quantize_rtn
from sua_demo.audit.run import METHODS, audit_figure


@pytest.fixture(scope="module")
def noise_dir(micro_adapter, micro_bench, tmp_path_factory):
    from sua_demo.attacks import ATTACKS, save_noise
    from sua_demo.eval.recovery import attack_split, attacker_examples
    from sua_demo.models.examples import ImageBank

    bench, _ = micro_bench
    folder = tmp_path_factory.mktemp("noise")
    examples = attacker_examples(bench, attack_split(bench, 0.5, 0))
    noise = ATTACKS.get("sua")(micro_adapter, AttackConfig(steps=2, batch_size=4)).run(
        ImageBank(bench, micro_adapter), examples, progress=False
    )
    save_noise(noise, folder / "delta_split0.safetensors")
    return folder


def test_every_registered_method_is_in_the_audit():
    assert set(METHODS) == set(AUDITS.names())


@pytest.mark.parametrize("model", ["idk", "grad_diff", "npo_lora"])
def test_the_methods_keep_the_order_of_the_shipped_audits(model):
    from sua_demo.core.config import CHECKPOINTS

    report = json.loads((CHECKPOINTS / "audit" / model / "audit.json").read_text())
    # audits shipped before a probe was added lack it; what they hold keeps the report's order
    assert list(report["summary"]) == list(report["states"]) == [m for m in METHODS if m in report["summary"]]


def test_a_registered_setting_is_a_class_attribute_of_the_entry():
    """quant8 and quant4 are one class with bits set; the setting reads the same before and after building."""
    from sua_demo.audit.quantize import Quantized

    quant8, quant4 = AUDITS.get("quant8"), AUDITS.get("quant4")
    assert issubclass(quant8, Quantized) and (quant8.bits, quant4().bits) == (8, 4)
    assert [AUDITS.get(f"relearn{n}")().work(False) for n in (5, 20, 50)] == [15, 60, 150]
    assert (AUDITS.get("soft_prompt1").n, AUDITS.get("soft_prompt5").n) == (1, 5)


def test_the_audit_runs_every_method_with_its_control(
    saved_micro, micro_bench, noise_dir, tmp_path, monkeypatch, capsys
):
    """Through `sua audit`, as a user runs it (the micro bench in place of the default one)."""
    from sua_demo import cli
    from sua_demo.audit import soft_prompt

    monkeypatch.setattr(soft_prompt, "STEPS", 3)
    monkeypatch.setattr(cli.common, "bench_of", lambda args: micro_bench)
    argv = ["audit", str(saved_micro), "--retrain", str(saved_micro), "--noise-dir", str(noise_dir), "--splits", "1"]
    assert cli.main([*argv, "--out", str(tmp_path)]) == 0
    assert "| SUA δ |" in capsys.readouterr().out
    report = json.loads((tmp_path / "audit.json").read_text())
    s = report["summary"]
    assert set(s) == set(METHODS)
    for name, row in s.items():
        assert {"gain", "control_gain", "above_control"} <= set(row) and "unseen_people" in row["above_control"], name
    # the same model on both sides: every method's gain equals its control's (nothing hidden, nothing extra)
    assert all(abs(row["above_control"]["unseen_people"]["mean"]) < 1e-6 for row in s.values())
    assert set(report["states"]["quant4"].values()) <= {"recovered", "not", "refused"}
    assert report["splits"] == [0] and "| SUA δ |" in (tmp_path / "audit.md").read_text()
    assert len(audit_figure(report).data) == len(METHODS) - 1  # one heatmap per method but the clean baseline


def test_quantization_rounds_the_language_model_and_leaves_the_vision_tower(micro_adapter):
    q = quantize_rtn(micro_adapter, 4)
    lm = next(m for m in q.towers()[0].modules() if isinstance(m, torch.nn.Linear))
    assert len(torch.unique(lm.weight[0])) <= 15  # at most 2 * 7 + 1 levels per output channel
    vision_before = next(m for m in micro_adapter.towers()[1].modules() if isinstance(m, torch.nn.Linear)).weight
    vision_after = next(m for m in q.towers()[1].modules() if isinstance(m, torch.nn.Linear)).weight
    assert torch.equal(vision_before, vision_after) and q.model is not micro_adapter.model


def test_reports_name_folders_inside_the_checkout_relatively(tmp_path):
    """The CLI's default models are absolute paths; a shipped audit must not carry this machine's folders."""
    from sua_demo.core.config import CHECKPOINTS, shown_path

    assert shown_path(CHECKPOINTS / "tiny-llava" / "retrain") == "checkpoints/tiny-llava/retrain"
    assert shown_path(tmp_path / "m") == str(tmp_path / "m")  # elsewhere: as given


def test_a_method_is_read_against_plain_asking_not_against_itself(micro_adapter, micro_bench, monkeypatch):
    """Text-only and rephrased questions are other questions: their gain counts from the bench's own question
    on the clean held-out photo of the same (person, fact), not from their own answers (which made it 0)."""
    from sua_demo.audit.asking import TextOnly
    from sua_demo.audit.base import AuditContext, baseline, clean_scores, run_method
    from sua_demo.eval.recovery import attack_split
    from sua_demo.models.examples import ImageBank

    bench, _ = micro_bench
    bank = ImageBank(bench, micro_adapter)
    ctx = AuditContext(bench, {"unlearned": (micro_adapter, bank), "retrain": (micro_adapter, bank)},
                       attack_split(bench, 0.5, 0), retain_people=2)  # fmt: skip
    asked, _ = TextOnly().answers(ctx, "unlearned")
    base = baseline(ctx, asked)
    assert base and all(e.photo is not None for e in base)  # the photo question, not the text one
    assert {(e.person_id, e.item.fact) for e in base} == {(e.person_id, e.item.fact) for e in asked}
    # The clean model "knows" every answer on a photo and none without one, so the two readings differ: against
    # the photo question the text-only gain is -100; against its own (text) questions it would be 0.
    from sua_demo.eval import evaluate

    monkeypatch.setattr(
        evaluate, "answer", lambda a, b, ex: [e.item.answer if e.photo is not None else "?" for e in ex]
    )
    monkeypatch.setattr(TextOnly, "answers", lambda self, ctx, role: (asked, ["?"] * len(asked)))
    out = run_method("text_only", ctx)["unlearned"]
    assert out["clean"] == clean_scores(ctx, "unlearned", base) and set(out["clean"].values()) == {100.0}
    assert out["gain"] == {g: -100.0 for g in out["em"]}
