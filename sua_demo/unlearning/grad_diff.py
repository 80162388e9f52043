"""Gradient difference: GA on forget plus ordinary NLL on retain, so the rest of the model holds."""

from __future__ import annotations

import torch

from sua_demo.core.config import UnlearnConfig
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, ImageBank
from sua_demo.unlearning.base import METHODS, UnlearningMethod
from sua_demo.unlearning.losses import nll
from sua_demo.unlearning.recipe import Recipe, ascent_gates, ships


@METHODS.register("grad_diff")
class GradDiff(UnlearningMethod):
    def forget_loss(self, adapter: VisionLanguageAdapter, bank: ImageBank, forget: list[Example]) -> torch.Tensor:
        return -nll(adapter, bank, forget)

    def compute_loss(
        self, adapter: VisionLanguageAdapter, bank: ImageBank, forget: list[Example], retain: list[Example]
    ) -> torch.Tensor:
        return self.forget_loss(adapter, bank, forget) + self.cfg.retain_weight * nll(adapter, bank, retain)


# GradDiff: lr 2e-5 with retain weight 1 lost retain faster than forget (forget 18% at retain 75%, forget_10);
# weight 3 at lr 5e-5 keeps retain at 87% down to forget 37%, and stops at forget 14%, retain 80% (forget_15).
# The faithful world (docs/world.md, Changes, 2026-12-05; run d, chosen on world 0's gates alone): forget <= 20 % on
# every person's validation photo with retain >= 0.87 x its start, retain weight 5, up to 800 steps, and (since the
# seventh session, its train-photo gate missed in worlds 1 and 2) forget <= 20 % on the train photos it unlearns on.
ships(
    Recipe(
        "grad_diff",
        UnlearnConfig(method="grad_diff", lr=5e-5, retain_weight=3.0, forget_target=0.15, retain_floor=0.80),
        faithful={"watch": "validation_and_train", "forget_target": 0.20, "retain_floor": 0.87, "retain_weight": 5.0,
                  "max_steps": 800},
        gates=ascent_gates("grad_diff"),
        noise_splits=tuple(range(6)),  # a split moves a gain by 4 to 6 points: 3 could not tell a target apart
    )
)  # fmt: skip
