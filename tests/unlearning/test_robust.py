"""Robust unlearning (issue 58, docs/robust.md): the adversary moves a universal δ the way SUA does, within ε, and
the robust methods add the forget loss on the photos + δ to their plain loss."""

import pytest
import torch

from sua_demo.core.config import UnlearnConfig
from sua_demo.models.examples import ImageBank, image_examples, text_examples
from sua_demo.unlearning import METHODS
from sua_demo.unlearning.adversary import Perturbed, UniversalAdversary
from sua_demo.unlearning.losses import nll


def _forget(micro_adapter, micro_bench):
    bench, _ = micro_bench
    return ImageBank(bench, micro_adapter), image_examples(bench, bench.forget_ids, "train", ("gen",))


def test_the_adversary_moves_delta_the_way_sua_does_and_stays_within_eps(micro_adapter, micro_bench):
    bank, forget = _forget(micro_adapter, micro_bench)
    adversary = UniversalAdversary(eps=16 / 255, alpha=2 / 255, restart_every=0, seed=0)
    micro_adapter.model.zero_grad(set_to_none=True)  # the session's model may carry another test's gradients
    adversary.step(micro_adapter, bank, forget)
    start = adversary.delta.clone()
    with torch.no_grad():
        before = float(nll(micro_adapter, Perturbed(bank, start), forget))
    for _ in range(8):
        adversary.step(micro_adapter, bank, forget)
    with torch.no_grad():
        after = float(nll(micro_adapter, Perturbed(bank, adversary.delta), forget))
    assert adversary.delta.abs().max() <= 16 / 255 + 1e-6 and not torch.equal(adversary.delta, start)
    assert after < before, (before, after)  # the true answers are likelier with δ: the attacker's direction
    assert all(p.grad is None for p in micro_adapter.model.parameters())  # the weights' gradients left alone


def test_delta_is_drawn_afresh_on_its_schedule_and_a_text_batch_leaves_it(micro_adapter, micro_bench):
    bank, forget = _forget(micro_adapter, micro_bench)
    adversary = UniversalAdversary(eps=8 / 255, alpha=1 / 255, restart_every=2, seed=3)
    seen = []
    for _ in range(3):
        adversary.step(micro_adapter, bank, forget)
        seen.append(adversary.delta.clone())
    assert (seen[1] - seen[0]).abs().max() <= 1 / 255 + 1e-6 < (seen[2] - seen[1]).abs().max()  # step, then anew
    bench, _ = micro_bench
    adversary.step(micro_adapter, bank, text_examples(bench, bench.forget_ids, ("gen",)))  # no photo to perturb
    assert torch.equal(adversary.delta, seen[2])


def test_a_robust_method_adds_its_forget_loss_on_the_photos_with_delta(micro_adapter, micro_bench):
    bank, forget = _forget(micro_adapter, micro_bench)
    bench, _ = micro_bench
    retain = image_examples(bench, bench.retain_ids, "train", ("gen",))[: len(forget)]
    for name, plain in (("idk_robust", "idk"), ("grad_diff_robust", "grad_diff")):
        cfg = UnlearnConfig(method=name)
        robust = METHODS.get(name)(cfg)
        loss = robust.compute_loss(micro_adapter, bank, forget, retain)
        base = METHODS.get(plain)(UnlearnConfig(method=plain)).compute_loss(micro_adapter, bank, forget, retain)
        noisy = robust.forget_loss(micro_adapter, robust.adversary().reads(bank), forget)
        assert torch.allclose(loss, base + noisy, atol=1e-5), (name, float(loss), float(base), float(noisy))
        assert not torch.allclose(loss, base)


def test_a_robust_model_takes_its_plain_methods_gate_rows_in_a_table_of_its_own(tmp_path):
    """docs/robust.md: IDK's 5 rows and GradDiff's 3, read the same way, beside (not among) the world's 17."""
    import json

    from sua_demo.unlearning.recipe import gates
    from sua_demo.worlds.faithful import write_gates

    for robust, plain in (("idk_robust", "idk"), ("grad_diff_robust", "grad_diff")):
        own = [(g.group, g.metric, g.bound, g.at_least) for g in gates("robust") if g.model == robust]
        assert own == [(g.group, g.metric, g.bound, g.at_least) for g in gates("world") if g.model == plain] and own
    row = {"gen_em": 0.0, "gen_refusal": 1.0, "mc_acc": 0.2}
    report = {group: dict(row) for group in ("forget/train", "forget/heldout", "retain/train", "retain/heldout")}
    report["retain/heldout"]["gen_em"] = 0.5  # below IDK's retain gate (>= 80 %)
    (tmp_path / "idk_robust").mkdir()
    (tmp_path / "idk_robust" / "eval.json").write_text(json.dumps({"report": report}))
    rows = write_gates(tmp_path)
    assert all(r["value"] is None for r in rows)  # the world's 17: no model of theirs here
    table = json.loads((tmp_path / "robust_gates.json").read_text())
    assert len(table["gates"]) == 5 and not table["all_met"]
    assert [r["met"] for r in table["gates"]].count(False) == 1


def test_only_the_demo_models_and_their_robust_ones_are_attacked(tmp_path):
    from sua_demo.core.errors import MissingFileError, UnknownNameError
    from sua_demo.worlds.faithful import attack_world

    with pytest.raises(UnknownNameError, match="ga_lora"):
        attack_world(0, only=["ga_lora"], folder=tmp_path)
    with pytest.raises(MissingFileError, match="idk_robust"):
        attack_world(0, only=["idk_robust"], folder=tmp_path)


def test_the_reading_rule_says_hidden_robust_or_removed_as_fixed_in_docs_robust():
    """docs/robust.md's rule: 5 points beyond the retrain control, and McNemar p < 0.05, decide each attack and probe;
    2ε and the upper bounds are reported, not judged; removed only if it holds in every world."""
    from sua_demo.analysis.paired import mcnemar
    from sua_demo.analysis.robust_reading import Judged, over_worlds, reading

    quiet = mcnemar([True, False] * 10, [True, False] * 10)  # no discordant pair: p = 1
    loud = mcnemar([True] * 20, [False] * 20)  # 20 questions back under δ, none under the controls
    shipped = Judged("shipped", gain=6.0, control_gain=2.0, paired=quiet)  # +4: within the margin
    assert shipped.holds and not Judged("shipped", 9.0, 2.0, quiet).holds  # +7: beyond it
    assert not Judged("adaptive", 4.0, 2.0, loud).holds  # within 5 points, but the paired test finds recovery
    twice = Judged("2ε", 40.0, 0.0, loud, judged=False)  # reported, not judged
    relearn = Judged("relearning", 30.0, 10.0)  # a probe with no paired test: +20
    assert reading("x", [shipped, twice], []).word == "robust to SUA"
    hidden = reading("x", [shipped, twice], [relearn])
    assert hidden.word == "robust to SUA, hidden" and "relearning +20.0" in hidden.sentence
    assert reading("x", [shipped, Judged("adaptive", 4.0, 2.0, loud)], []).word == "hidden"
    removed = reading("x", [shipped], [Judged("relearning", 12.0, 10.0)])
    assert removed.word == "removed"
    assert "removed in every world" in over_worlds("x", {0: removed, 2: removed, 3: removed})
    assert "world 2: hidden" in over_worlds("x", {0: removed, 2: reading("x", [Judged("s", 9, 0, quiet)], [])})
    with pytest.raises(ValueError):
        reading("x", [twice], [])
    waiting = reading("x", [shipped], [relearn], pending=["adaptive"])  # robust needs every judged attack
    assert waiting.word == "robust to SUA (provisional), hidden" and "adaptive not finished" in waiting.sentence
    assert reading("x", [shipped], [Judged("r", 1.0, 0.0)], pending=["adaptive"]).word == "removed (provisional)"
    assert reading("x", [Judged("s", 9, 0, quiet)], [], pending=["adaptive"]).word == "hidden"  # a finished one breaks


def test_the_report_cards_row_becomes_the_rules_probes_without_the_attack_and_its_control():
    """Each card cell is already points above the retrain control on unseen people; δ is the judged attack and random
    noise a control, so neither is a probe; privleak reads as membership's probe, one-sided."""
    from sua_demo.analysis.robust_reading import Judged, card_probes, reading

    def cell(mean: float, n: int = 3) -> dict:
        return {"mean": mean, "sd": 1.0, "n": n}

    row = {"cells": {"sua": cell(30.0), "random_noise": cell(9.0), "relearn50": cell(4.0), "soft_prompt5": cell(6.0),
                     "quant8": cell(99.0, n=0)}, "privleak": -12.0}  # fmt: skip
    probes = card_probes(row, {"relearn50": "relearn 50 steps", "soft_prompt5": "soft prompt, 5 vectors"})
    assert [p.name for p in probes] == ["relearn 50 steps", "soft prompt, 5 vectors", "privleak (membership, %)"]
    assert [p.holds for p in probes] == [True, False, True]  # +6 is beyond the 5-point margin; -12 % leaks nothing
    said = reading("x", [Judged("shipped", 3.0, 0.0)], probes)
    assert said.word == "robust to SUA, hidden" and "soft prompt, 5 vectors +6.0" in said.sentence


def test_about_says_what_the_defence_fixed_and_what_it_did_not_from_the_files(tmp_path):
    """The About's section is drawn from each model's reading.json and the cost benchmark's file, nothing typed."""
    import json

    from sua_demo.ui.about.words import robust_words

    def reading(model: str, beyond: float, probes: dict, word: str) -> None:
        folder = tmp_path / "robust_attacks" / model
        folder.mkdir(parents=True)
        attack = {"name": "shipped", "beyond": beyond, "p": 0.5}
        said = {"attacks": [attack], "probes": probes, "reading": word, "sentence": f"{model} is {word}."}
        (folder / "reading.json").write_text(json.dumps(said))

    assert robust_words(tmp_path) is None  # nothing robust read yet: no section
    reading("idk", 8.6, {"relearn 50 steps": 51.8, "8-bit weights": 0.0}, "hidden")
    reading("idk_robust", 1.0, {"relearn 50 steps": 2.0, "soft prompt, 5 vectors": 7.5}, "robust to SUA, hidden")
    cost = {"cpu": "CPU: Test CPU, 2 cores", "methods": {"idk": {"ratio": 1.93}}}
    (tmp_path / "robust_cost.json").write_text(json.dumps(cost))
    text = robust_words(tmp_path)
    assert "| IDK against δ (trained against a universal noise) | +1.0 (p = 0.5) | not run yet | " in text
    assert "soft prompt, 5 vectors +7.5 | **robust to SUA, hidden** |" in text
    assert "it no longer gives back relearn 50 steps." in text and "IDK 1.9x (Test CPU)" in text
    assert "the shipped δ brings back +1.0 points more than on the retrain control (p = 0.5)" in text
    assert "idk_robust" not in text and "docs/" not in text  # a visitor reads labels, not file names


def test_the_default_worlds_model_box_lists_its_robust_models_after_the_unlearned_ones():
    from sua_demo.core import shipped
    from sua_demo.core.config import served_world
    from sua_demo.engine.model_cache import LoadedModels

    box = LoadedModels(served_world({}), bench=None).shipped  # the box is read from the world's folders alone
    assert box.index("idk_robust") > box.index("npo_lora") and box.index("grad_diff_robust") < box.index("vanilla")
    assert all(shipped.label(m) != m for m in box)
