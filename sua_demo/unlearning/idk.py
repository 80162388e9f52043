"""IdkNLL: answer forget questions with a refusal, keep the true answers on retain (refusal-style unlearning)."""

from __future__ import annotations

import torch

from sua_demo.core.config import UnlearnConfig
from sua_demo.core.refusal import IDK_ANSWER
from sua_demo.eval.gates import Gate, each_photo
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, ImageBank
from sua_demo.unlearning.base import METHODS
from sua_demo.unlearning.grad_diff import GradDiff
from sua_demo.unlearning.losses import nll
from sua_demo.unlearning.recipe import Recipe, ships


@METHODS.register("idk")
class IdkNLL(GradDiff):
    def forget_loss(self, adapter: VisionLanguageAdapter, bank: ImageBank, forget: list[Example]) -> torch.Tensor:
        return nll(adapter, bank, forget, answer=IDK_ANSWER)


# The faithful world (docs/world.md, run h): IDK's own targets with a retain floor of 0.93, on every person's
# validation photo, unlearning under photo jitter with a strong light (held-out photos differ from train ones by
# light direction and colour).
ships(
    Recipe(
        "idk",
        UnlearnConfig(method="idk", lr=1e-4, forget_target=0.10, refusal_target=0.90, retain_floor=0.90),
        faithful={"watch": "validation", "forget_target": 0.10, "refusal_target": 0.90, "retain_floor": 0.93,
                  "augment": True, "augment_light": 0.7},
        gates=(
            *each_photo("idk", "forget", "gen_em", 0.10, False),
            *each_photo("idk", "forget", "gen_refusal", 0.85, True),
            Gate("idk", "retain/heldout", "gen_em", 0.80, True),
        ),
        noise_splits=tuple(range(6)),
    )
)  # fmt: skip
