"""The faithful world's construction (docs/world.md): its bench, its pretraining population kept apart from every
bench, the shared vocabulary, resumable builds, and a vision side nothing but pretraining ever changes."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest
import torch

from sua_demo.core.config import (
    POPULATION_SEEDS,
    BenchConfig,
    GeneralConfig,
    TowerConfig,
    TrainConfig,
    UnlearnConfig,
    faithful_bench,
)
from sua_demo.core.errors import BadValueError
from sua_demo.dataset import build_bench
from sua_demo.dataset.faces import IDENTITY_ATTRIBUTES, PHOTO_ATTRIBUTES

TINY_TOWER = dataclasses.replace(TowerConfig(), people=12, photos=2, steps=4, batch_size=8, checkpoint_every=2)


def _hashes(photos) -> set[str]:
    return {hashlib.sha256(p.tobytes()).hexdigest() for p in photos}


def test_the_faithful_bench_draws_at_the_models_size_with_varied_photos_and_holdout_people():
    bench = build_bench(faithful_bench(0))
    assert len(bench.people) == 100 and len(bench.forget_ids) == 15 and len(bench.holdout) == 10
    assert {p.photos[0].size for p in bench.people + bench.holdout} == {(112, 112)}
    assert not set(bench.holdout_ids) & set(bench.ids("all")) and bench.split_of(bench.holdout_ids[0]) == "holdout"
    person = bench.people[0]
    looks = person.photo_attributes
    assert len(looks) == len(person.photos) and looks[0] == person.attributes
    assert all(all(a[k] == person.attributes[k] for k in IDENTITY_ATTRIBUTES) for a in looks)
    varied = {k for a in looks for k in PHOTO_ATTRIBUTES if a[k] != person.attributes[k]}
    assert varied, "a person's photos should differ in background, expression or hat"
    for a, b in [(p, q) for p in bench.people[:30] for q in bench.people[:30] if p.id < q.id]:
        assert sum(a.attributes[k] != b.attributes[k] for k in IDENTITY_ATTRIBUTES) >= 4  # told apart by identity


def test_a_bench_refuses_the_populations_seeds():
    assert TowerConfig().seed >= POPULATION_SEEDS
    with pytest.raises(BadValueError, match="pretraining population"):
        build_bench(BenchConfig(seed=POPULATION_SEEDS))


@pytest.mark.slow
def test_the_pretraining_population_shares_no_photo_with_any_bench_world():
    """By pixel hash, against the faithful worlds' benches (holdout people included) and the first world's."""
    from sua_demo.training.pretrain.population import build_population

    population = _hashes(build_population(TowerConfig()).photos)
    assert len(population) == TowerConfig().people * TowerConfig().photos  # every photo its own
    benches = [faithful_bench(s) for s in (0, 1, 2)] + [BenchConfig(seed=s) for s in (0, 1, 2, 3)]
    for cfg in benches:
        bench = build_bench(cfg)
        photos = [im for p in bench.people + bench.holdout for im in p.photos]
        assert not population & _hashes(photos), cfg


def test_one_vocabulary_covers_every_faithful_world():
    from sua_demo.models.tiny_llava import bench_corpus, build_tokenizer
    from sua_demo.training.pretrain.general import vocabulary_corpus

    tokenizer = build_tokenizer(vocabulary_corpus(), punctuation_runs=True)
    for seed in (0, 1, 2, 3):
        bench = build_bench(faithful_bench(seed))
        holdout = dataclasses.replace(bench, people=bench.holdout, forget_ids=[], holdout=[])
        for text in bench_corpus(bench) + bench_corpus(holdout):
            assert tokenizer.unk_token_id not in tokenizer(text, add_special_tokens=False)["input_ids"], text


class Stop(Exception):
    """A session stopped mid-build."""


def test_the_tower_pretraining_resumes_to_the_same_weights(tmp_path, monkeypatch):
    from sua_demo.core.resume import Checkpointed, read_state
    from sua_demo.training.pretrain import tower

    whole, summary = tower.pretrain_tower(TINY_TOWER, tmp_path / "whole.safetensors", progress=False)
    save = Checkpointed.save

    def save_then_stop(self, **state):
        save(self, **state)
        raise Stop  # the session ends right after the checkpoint at step 2

    with monkeypatch.context() as m:
        m.setattr(Checkpointed, "save", save_then_stop)
        with pytest.raises(Stop):
            tower.pretrain_tower(TINY_TOWER, tmp_path / "stopped.safetensors", progress=False)
    assert read_state(tmp_path / "stopped.safetensors")["step"] == 2
    # the same command again:
    resumed, again = tower.pretrain_tower(TINY_TOWER, tmp_path / "stopped.safetensors", progress=False)
    assert again["steps"] == summary["steps"] == 4
    for (name, a), b in zip(whole.state_dict().items(), resumed.state_dict().values(), strict=True):
        assert torch.equal(a, b), name


def test_a_finetune_stopped_mid_epoch_resumes_to_the_same_model(micro_bench, micro_model_cfg, tmp_path, monkeypatch):
    from sua_demo.training import finetune as training

    bench, bench_cfg = micro_bench
    cfg = TrainConfig(epochs=2, look_warmup_steps=4, batch_size=4, precision="fp32")
    whole = training.finetune(bench, bench_cfg, cfg, micro_model_cfg, tmp_path / "whole", progress=False)
    stop_at = cfg.look_warmup_steps + training._schedule(bench, bench.ids("all"), cfg)[1] // 2 + 1  # mid epoch 2
    step, taken = training.train_step, []

    def step_then_stop(*args, **kwargs):
        taken.append(1)
        if len(taken) == stop_at:
            raise Stop
        return step(*args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(training, "train_step", step_then_stop)
        with pytest.raises(Stop):
            training.finetune(bench, bench_cfg, cfg, micro_model_cfg, tmp_path / "stopped", progress=False)
    assert training._state_path(tmp_path / "stopped").is_file() and not (tmp_path / "stopped").exists()
    resumed = training.finetune(bench, bench_cfg, cfg, micro_model_cfg, tmp_path / "stopped", progress=False)
    assert not training._state_path(tmp_path / "stopped").exists()  # the finished folder replaces the state
    for (name, a), b in zip(whole.model.state_dict().items(), resumed.model.state_dict().values(), strict=True):
        assert torch.equal(a, b), name


def test_learning_and_unlearning_the_language_model_leave_the_vision_side_as_it_was(
    micro_bench, micro_model_cfg, tmp_path
):
    from sua_demo.training.finetune import finetune
    from sua_demo.unlearning.runner import unlearn

    bench, bench_cfg = micro_bench
    quick = TrainConfig(epochs=1, look_warmup_steps=2, batch_size=4, precision="fp32")
    start = finetune(bench, bench_cfg, quick, micro_model_cfg, tmp_path / "start", progress=False)
    vision = {k: v.clone() for k, v in start.model.state_dict().items() if "vision_tower" in k or "projector" in k}
    cfg = dataclasses.replace(quick, start_from=str(tmp_path / "start"), train_parts="language_model")
    learned = finetune(bench, bench_cfg, cfg, micro_model_cfg, tmp_path / "vanilla", progress=False)
    ucfg = UnlearnConfig(
        method="grad_diff", lr=1e-3, max_steps=3, eval_every=3, batch_size=4, train_parts="language_model"
    )
    unlearned = unlearn(tmp_path / "vanilla", bench, bench_cfg, ucfg, progress=False).adapter
    for model in (learned.model, unlearned.model):
        state = model.state_dict()
        for name, before in vision.items():
            assert torch.equal(state[name], before), name
        lm = [k for k in state if "language_model" in k and k.endswith("mlp.down_proj.weight")]
        assert lm and not torch.equal(state[lm[0]], start.model.state_dict()[lm[0]])  # the language model did learn


def test_the_gates_read_each_models_eval_and_say_which_hold():
    from sua_demo.eval.gates import all_met, gate_rows
    from sua_demo.unlearning.recipe import gates

    GATES = gates("world")

    groups = ("forget/train", "forget/heldout", "retain/train", "retain/heldout")
    good = {"gen_em": 0.95, "gen_refusal": 0.0, "mc_acc": 0.95}
    reports = {"vanilla": {g: good for g in groups}}
    rows = gate_rows(reports, GATES)
    assert all(r["met"] for r in rows if r["model"] == "vanilla") and not all_met(rows)  # the others not built
    assert {r["model"] for r in rows if r["value"] is None} == {"retrain", "idk", "grad_diff"}
    leaky = {g: dict(good) for g in groups}  # a retrain control that knows the forget people
    rows = gate_rows({"retrain": leaky}, GATES)
    assert [r["met"] for r in rows if r["model"] == "retrain"] == [False] * 4
    assert len(GATES) == 17


def test_the_general_model_carries_the_pretrained_tower_and_loads_like_any_model(tmp_path):
    """The whole shared build on a tiny population: the saved model's tower is the pretrained one, in fp16."""
    from sua_demo.models.loading import load_adapter
    from sua_demo.training.pretrain import tower as tower_module
    from sua_demo.worlds.faithful import build_general

    general_cfg = dataclasses.replace(GeneralConfig(), steps=3, batch_size=4, checkpoint_every=2)
    micro = BenchConfig(n_people=6, photos_per_person=3, train_photos=2, forget_fraction=0.34, seed=1)
    micro = dataclasses.replace(micro, image_size=112, photos="varied")
    out = build_general(tmp_path / "general", tmp_path / "runs", False, TINY_TOWER, general_cfg, micro)
    record = json.loads((out / "sua_config.json").read_text())
    assert (
        record["tower"]["steps"] == 4
        and record["general"]["steps"] == 3
        and 0 <= record["general"]["look_accuracy"] <= 1
    )
    adapter = load_adapter(out)
    state = tmp_path / "runs" / "tower.state.safetensors"
    tower, _ = tower_module.pretrain_tower(TINY_TOWER, state, progress=False)  # resumes
    for name, value in tower.state_dict().items():
        assert torch.equal(adapter.vision_tower.state_dict()[name], value.half().float()), name
    assert adapter.image_size == 112 and adapter.model.config.vision_feature_layer == -2


def test_the_validation_rules_are_recipes_and_need_their_worlds_vanilla(tmp_path, monkeypatch):
    """`sua build-faithful --validation` builds VALIDATION_RULES' models from a world's own vanilla, and says so in
    one line when that world has none yet."""
    from sua_demo.core.config import UnlearnConfig
    from sua_demo.core.errors import MissingFileError
    from sua_demo.worlds import faithful
    from sua_demo.worlds.build import RECIPES

    names = {r.name for r in RECIPES if r.unlearn is not None}
    assert set(faithful.VALIDATION_RULES) <= names
    for rule in faithful.VALIDATION_RULES.values():
        assert rule["watch"].startswith("validation") and set(rule) <= set(UnlearnConfig.__dataclass_fields__)
    monkeypatch.setattr(faithful, "world_dir", lambda seed: tmp_path / f"world{seed}")
    with pytest.raises(MissingFileError, match="no vanilla model in .*build the world first"):
        faithful.build_world(7, validation=True)


def test_a_world_is_built_by_the_shipped_rules_and_the_scale_study_keeps_the_train_photo_rule(tmp_path, monkeypatch):
    """Issue 41: every faithful world's IDK and GradDiff stop on validation photos (SHIPPED_RULES, docs/world.md;
    GradDiff on its train photos too);
    the other models keep their recipes, and the scale study's sizes keep the rule its first size was built with."""
    from sua_demo.worlds import faithful, scale

    built = {}
    monkeypatch.setattr(faithful, "world_dir", lambda seed: tmp_path / f"world{seed}")
    monkeypatch.setattr(faithful, "build_general", lambda progress=True: tmp_path / "general")
    monkeypatch.setattr(faithful, "write_gates", lambda out: [])
    monkeypatch.setattr(faithful, "build_model", lambda recipe, *a: built.setdefault(recipe.name, a[4]))
    faithful.build_world(3, ["vanilla", "idk", "grad_diff", "npo_lora"])
    rules = faithful.SHIPPED_RULES
    assert built == {"vanilla": {}, "idk": rules["idk"], "grad_diff": rules["grad_diff"], "npo_lora": {}}
    assert rules["idk"]["watch"] == "validation" and rules["grad_diff"]["watch"] == "validation_and_train"
    assert scale.STUDY.unlearn == {}  # the study's recipes as build.RECIPES has them: the train-photo rule


def test_a_world_rebuilt_in_part_does_not_replace_its_shipped_reports(tmp_path, monkeypatch):
    """Rebuilding only world 1's vanilla (to build more models on it) copied its partial gates over the shipped
    ones and then failed on the missing models' empty gate values; now it ships nothing until the world is whole,
    and the table over worlds reads an unmeasured gate as '–'."""
    from sua_demo.worlds import faithful

    monkeypatch.setattr(faithful, "RUNS", tmp_path / "runs")
    monkeypatch.setattr(faithful, "RULE_REPORTS", tmp_path / "reports")
    part = tmp_path / "runs" / "world1" / "vanilla"
    part.mkdir(parents=True)
    (part / "eval.json").write_text("{}")
    assert faithful.ship_reports(1) is None and not (tmp_path / "reports").exists()
    gates = [{"model": "idk", "group": "forget", "metric": "em", "gate": "<= 10 %", "value": None, "met": False}]
    (tmp_path / "reports" / "world1").mkdir(parents=True)
    (tmp_path / "reports" / "world1" / "gates.json").write_text(json.dumps({"gates": gates}))
    text = faithful.gates_over_worlds(tmp_path)
    assert "world 1: 0 of 0" in text and "| – |" in text  # nothing of world 1 measured yet
    found = {0: faithful.FAITHFUL / "validation" / "world0" / "gates.json"}
    text = faithful.gates_over_worlds(tmp_path / "validation", found, "The rule's gates")
    assert text.startswith("# The rule's gates") and "| vanilla |" not in text and "| grad_diff |" in text


def test_the_scale_study_builds_towers_of_its_stated_sizes_into_faithful_models(tmp_path):
    """docs/scale.md's sizes (width x depth, 32-wide heads) are the ones `sua build-scale` pretrains, and a general
    model over a tower of another size carries that tower: its LLaVA reads a 64-wide, 2-layer CLIP at -2."""
    from sua_demo.models.loading import load_adapter
    from sua_demo.worlds.faithful import FAITHFUL, build_general
    from sua_demo.worlds.scale import SCALE_RUNS, SIZES, general_of, world_of

    assert {k: (t.hidden, t.layers, t.heads) for k, t in SIZES.items()} == {
        "S": (64, 2, 2),
        "M": (128, 4, 4),
        "L": (256, 8, 8),
        "XL": (512, 12, 16),
        "XXL": (1024, 12, 32),
    }
    assert SIZES["M"] == TowerConfig() and world_of("S", 1).name == "world1"
    assert general_of("M") == FAITHFUL / "general" and world_of("M", 0) == SCALE_RUNS / "M" / "world0"
    for tower in SIZES.values():  # nothing else of the pretraining moves with the size
        assert dataclasses.replace(tower, hidden=0, layers=0, heads=0) == dataclasses.replace(
            TowerConfig(), hidden=0, layers=0, heads=0
        )
    small = dataclasses.replace(TINY_TOWER, hidden=64, layers=2, heads=2)
    general_cfg = dataclasses.replace(GeneralConfig(), steps=2, batch_size=4, checkpoint_every=2)
    micro = BenchConfig(n_people=6, photos_per_person=3, train_photos=2, forget_fraction=0.34, seed=1)
    micro = dataclasses.replace(micro, image_size=112, photos="varied")
    adapter = load_adapter(build_general(tmp_path / "general", tmp_path / "runs", False, small, general_cfg, micro))
    vision = adapter.model.config.vision_config
    assert (vision.hidden_size, vision.num_hidden_layers, vision.num_attention_heads) == (64, 2, 2)
    assert adapter.model.config.vision_feature_layer == -2
    with pytest.raises(Exception, match="unknown tower size"):
        world_of("XXXL", 0)


def test_size_m_world_0_shares_the_shipped_vanilla_only_while_it_is_the_records(tmp_path, monkeypatch):
    """docs/scale.md's second axis rebuilds size M's world 0 under the study's rule: its vanilla and retrain control
    are the shipped ones (issue 41 changed only IDK and GradDiff), copied, and refused once not the record's."""
    from sua_demo.core.errors import BadValueError
    from sua_demo.worlds import scale

    shipped, record = tmp_path / "shipped", tmp_path / "record"
    for name in ("vanilla", "retrain"):
        for root in (shipped, record / "world0"):
            (root / name).mkdir(parents=True)
            (root / name / "eval.json").write_text(json.dumps({"model": name, "report": {"em": 1.0}}))
        (shipped / name / "model.safetensors").write_bytes(b"weights")
    monkeypatch.setattr(scale, "FAITHFUL", shipped)
    monkeypatch.setattr(scale, "REPORTS", record)
    scale._share_shipped_people(tmp_path / "world0")
    assert (tmp_path / "world0" / "retrain" / "model.safetensors").read_bytes() == b"weights"
    (record / "world0" / "vanilla" / "eval.json").write_text(json.dumps({"model": "vanilla", "report": {"em": 0.9}}))
    with pytest.raises(BadValueError, match="the shipped vanilla is not the one"):
        scale._share_shipped_people(tmp_path / "other")


def test_the_audit_of_a_world_names_what_it_lacks_before_it_loads_anything(tmp_path, monkeypatch):
    """`sua build-faithful --audit --only M` audits any model of a world (the LoRA ones have no δ: their SUA columns
    stay empty); a model or control that is not built is named, not met as a traceback halfway through."""
    from sua_demo.core.errors import MissingFileError
    from sua_demo.worlds import faithful

    monkeypatch.setattr(faithful, "world_dir", lambda seed: tmp_path / f"world{seed}")
    (tmp_path / "world4" / "retrain").mkdir(parents=True)
    with pytest.raises(MissingFileError, match=r"faithful world 4 lacks \['ga_lora'\]"):
        faithful.audit_world(4, ("ga_lora",))
