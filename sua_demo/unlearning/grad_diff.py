"""Gradient difference: GA on forget plus ordinary NLL on retain, so the rest of the model holds."""

from __future__ import annotations

import torch

from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, ImageBank
from sua_demo.unlearning.base import METHODS, UnlearningMethod
from sua_demo.unlearning.losses import nll


@METHODS.register("grad_diff")
class GradDiff(UnlearningMethod):
    def forget_loss(self, adapter: VisionLanguageAdapter, bank: ImageBank, forget: list[Example]) -> torch.Tensor:
        return -nll(adapter, bank, forget)

    def compute_loss(
        self, adapter: VisionLanguageAdapter, bank: ImageBank, forget: list[Example], retain: list[Example]
    ) -> torch.Tensor:
        return self.forget_loss(adapter, bank, forget) + self.cfg.retain_weight * nll(adapter, bank, retain)
