"""KL minimisation: GA on forget plus KL to the starting model on retain (MLLMU-Bench's KL baseline)."""

from __future__ import annotations

import torch

from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, ImageBank
from sua_demo.unlearning.base import METHODS, UnlearningMethod
from sua_demo.unlearning.losses import kl_to_reference, nll
from sua_demo.unlearning.recipe import lora_recipe, ships


@METHODS.register("kl")
class KLMin(UnlearningMethod):
    needs_reference = True

    def compute_loss(
        self, adapter: VisionLanguageAdapter, bank: ImageBank, forget: list[Example], retain: list[Example]
    ) -> torch.Tensor:
        assert self.reference is not None
        kl = kl_to_reference(adapter, self.reference, bank, retain)
        return -nll(adapter, bank, forget) + self.cfg.retain_weight * kl


# As GA: the over-unlearned regime, on purpose.
ships(lora_recipe("kl", lr=1e-3, max_steps=200, keep_best=False))
