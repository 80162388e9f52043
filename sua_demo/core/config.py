"""Typed configs. Each default carries a one-line reason; a config is saved next to every artefact."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sua_demo.core.errors import UnknownNameError

CHECKPOINTS = Path(__file__).resolve().parents[2] / "checkpoints"  # the shipped artefacts, beside the package


def shown_path(path: str | Path) -> str:
    """A path as a report records it: relative to this checkout when inside it, so no report names a machine's
    folders (the CLI's defaults are absolute, to work from any directory)."""
    try:
        return str(Path(path).resolve().relative_to(CHECKPOINTS.parent))
    except ValueError:
        return str(path)


@dataclass
class BenchConfig:
    n_people: int = 100  # >= 100 so that forget 5/10/15% are whole, distinct groups
    photos_per_person: int = 7  # 5 train + 2 held out, as in the feasibility study
    train_photos: int = 5  # the rest are held out: no training ever sees them
    # MLLMU-Bench's forget_15 split: 15 forget people, so an attacker split of half has 8, as in the feasibility
    # world. At forget_10 no attack variant lifted GradDiff past +17 on the attacker people's held-out photos;
    # the forget_15 GradDiff model gives +23 (docs/world.md, the bench: why MLLMU-Bench's forget_15 split).
    forget_fraction: float = 0.15
    image_size: int = 128  # rendered size; the processor resizes to the model's input
    seed: int = 0
    photos: str = "first"  # "first": framing and lighting vary; "varied": also light direction and colour,
    # background, expression and hat (the faithful world, docs/world.md)
    holdout_people: int = 0  # people beyond n_people that no model trains on (the faithful world: 10)


POPULATION_SEEDS = 1000  # seeds from here on draw the tower's pretraining population; a bench refuses them


@dataclass
class TowerConfig:
    """The faithful world's shared vision tower, pretrained once on people no bench has (docs/world.md)."""

    people: int = 2000  # the pretraining population: other people, never a bench's
    photos: int = 4  # varied photos each (pose, light, background, expression, hat)
    seed: int = POPULATION_SEEDS  # its own seed stream, disjoint from every bench seed
    image_size: int = 112  # the faithful world's input: 7 x 7 patches of 16 px
    patch_size: int = 16
    hidden: int = 128
    layers: int = 4  # the language model reads the second-to-last, as LLaVA-1.5 reads CLIP's
    heads: int = 4
    text_layers: int = 2  # the caption tower, discarded after pretraining as LLaVA discards CLIP's
    steps: int = 1000  # 32 epochs of the 8000 photos at batch 256
    batch_size: int = 256  # CLIP's loss needs many negatives in a batch
    lr: float = 1e-3
    warmup_steps: int = 50
    weight_decay: float = 0.1
    checkpoint_every: int = 100  # a stopped build loses at most this many steps
    precision: str = "fp32"  # shipped artefacts are fp32 on any CPU


@dataclass
class GeneralConfig:
    """The faithful world's general stage: projector and language model taught to read the frozen tower, on the
    pretraining population's visible attributes (LLaVA's two stages in one; docs/world.md)."""

    steps: int = 1500
    batch_size: int = 32
    lr: float = 1e-3  # the fine-tune's rate, with the 1/sqrt(d) init
    warmup_steps: int = 30
    describe_fraction: float = 0.25  # the rest are questions about one visible attribute
    checkpoint_every: int = 100
    precision: str = "fp32"
    seed: int = 0


def faithful_bench(seed: int = 0) -> BenchConfig:
    """The faithful world's bench (docs/world.md): photos drawn at the model's 112 px, varied, 10 holdout people."""
    return BenchConfig(image_size=112, seed=seed, photos="varied", holdout_people=10)


@dataclass(frozen=True)
class World:
    """Where one world's shipped models, noises and audits live, and the bench they learned: what the app and the
    engine serve (docs/world.md has both worlds)."""

    name: str
    models: Path
    noise: Path
    audit: Path
    bench: BenchConfig

    @property
    def title(self) -> str:
        """How a result names the world that produced it: 'the faithful world (bench seed 0)'."""
        return f"the {self.name} world (bench seed {self.bench.seed})"


WORLD_ENV = "SUA_WORLD"  # which world the app, the engine and the CLI serve: "faithful" (the default) or "first"


def shipped_world(name: str = "faithful") -> World:
    """The faithful world (bench seed 0, the embedded default since issue 41) or the first world."""
    if name == "first":
        return World("first", CHECKPOINTS / "tiny-llava", CHECKPOINTS / "noise", CHECKPOINTS / "audit", BenchConfig())
    if name == "faithful":
        root = CHECKPOINTS / "faithful"
        return World("faithful", root, root / "noise", root / "audit", faithful_bench(0))
    raise UnknownNameError(f"unknown world {name!r} (in {WORLD_ENV}); choose first or faithful")


def served_world(env: Mapping[str, str] = os.environ) -> World:
    """The world named by SUA_WORLD; unset, the faithful world, the one built the way LLaVA is (docs/world.md)."""
    return shipped_world(env.get(WORLD_ENV, "").strip() or "faithful")


def faithful_model(tower: TowerConfig | None = None) -> TinyModelConfig:
    """The faithful world's LLaVA: 112 px, 49 image tokens, the pretrained tower (default: the shipped 4-layer,
    128-wide one; docs/scale.md builds others) read at its second-to-last layer."""
    t = tower or TowerConfig()
    return TinyModelConfig(image_size=t.image_size, patch_size=t.patch_size, vision_hidden=t.hidden,
                           vision_layers=t.layers, vision_heads=t.heads, vision_feature_layer=-2,
                           max_positions=224)  # fmt: skip


@dataclass
class TinyModelConfig:
    image_size: int = 64  # 64 px is enough to tell 100 cartoon faces apart and keeps CPU steps fast
    patch_size: int = 16  # 4x4 = 16 image tokens per photo
    vision_hidden: int = 128
    vision_layers: int = 3
    vision_heads: int = 4
    text_hidden: int = 128  # a 256-wide LM learned to read the image tokens far more slowly
    text_layers: int = 3
    text_heads: int = 4
    text_intermediate: int = 1024  # the MLPs hold the person -> fact table; width here is cheap
    text_init_std: float = 0.088  # ~1/sqrt(text_hidden). Llama's 0.02 suits 4096-wide models; here it leaves the
    # image -> answer path (two tiny matrices in series) stuck near a saddle for thousands of steps
    vision_feature_layer: int = -1  # LLaVA uses -2; with 3 layers that would leave the last one untrained
    max_positions: int = 160  # 16 image tokens + the longest multiple-choice prompt + answer
    seed: int = 0


@dataclass
class TrainConfig:
    lr: float = 1e-3  # with the 1/sqrt(d) init; 2e-3 learned more slowly
    batch_size: int = 32
    epochs: int = 56  # 40 left train-photo answers at 92-95%; 56 reaches 96-98% (held-out photos 93-94%)
    questions_per_photo: int = 3  # an epoch shows every (person, train photo) this many sampled questions
    weight_decay: float = 0.0
    warmup_steps: int = 30
    retain_only: bool = False  # True builds the retrain control: forget people never seen
    look_warmup_steps: int = 300  # first steps on "look" questions only, like LLaVA's alignment stage: without
    # it the language model settles on text-only guesses and never learns to read the image tokens
    augment: bool = True  # random photo jitter on training images: 5 photos a person are few
    looks_per_photo: int = 1  # extra "what colour is the hair?" questions: they teach the vision tower
    # what to look at, as LLaVA's captioning stage does, and speed up identity learning
    text_only_fraction: float = 0.15  # some name-keyed text questions, so text-only forms are learnt too
    precision: str = "auto"  # "auto": bf16 autocast only where it is fast (sua_demo/core/precision.py), else fp32
    seed: int = 0
    start_from: str = ""  # a model folder to start from (the faithful world's general model); "": a fresh model
    train_parts: str = "all"  # "language_model": the vision tower and projector stay frozen (the faithful world)


@dataclass
class UnlearnConfig:
    method: str = "grad_diff"
    lr: float = 2e-5
    batch_size: int = 32  # forget examples per step; the retain batch has the same size
    max_steps: int = 400
    eval_every: int = 10  # check the stopping rule this often
    forget_target: float = 0.15  # stop once forget exact match is at or below this ...
    retain_floor: float = 0.80  # ... while retain stays at or above this fraction of vanilla's
    refusal_target: float = 0.0  # IDK only: also require this refusal rate on forget questions
    retain_weight: float = 1.0
    npo_beta: float = 0.4  # MLLMU-Bench / NPO paper default
    rmu_layer: int = -1  # RMU: the language-model layer whose activations are misdirected; -1: the middle one
    # RMU: the random target's length, in units of the starting model's activation RMS at that layer (WMDP's fixed
    # coefficient, 6.5 for Zephyr-7B, is tied to that model's scale; a ratio carries to any width)
    rmu_steering: float = 6.5
    keep_best: bool = True  # if the rule is never met, keep the on-target check with the most retain
    # the photos the stopping rule reads: "train" (the forget people's train photos, one train photo per retain
    # person) or "validation" (one extra photo per person that nothing trains on or reports; varied bench only), or
    # "validation_and_train" (those, and forget on the forget people's train photos as well)
    watch: str = "train"
    # photo jitter on the forget and retain photos a step reads (one jitter per step, so a method that reads a batch
    # for its model and its reference sees one photo): unlearning sees more than the few train photos' exact pixels
    augment: bool = False
    # with augment, also a light from a random side and of a random colour, up to this strength (0: none)
    augment_light: float = 0.0
    lora: bool = False
    lora_rank: int = 8
    lora_alpha: int = 16
    lora_targets: list[str] = field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])
    precision: str = "auto"  # as TrainConfig.precision
    seed: int = 0
    train_parts: str = "all"  # as TrainConfig.train_parts; LoRA targets the language model either way
    # robust methods (docs/robust.md): the adversary's universal δ, its budget and step in pixel units, how often it
    # is drawn afresh, and the weight of the forget loss on the photos + δ
    robust_eps: float = 16 / 255
    robust_alpha: float = 2 / 255
    robust_restart_every: int = 50
    robust_weight: float = 1.0


def to_dict(cfg: Any) -> dict[str, Any]:
    return {"_type": type(cfg).__name__, **dataclasses.asdict(cfg)}
