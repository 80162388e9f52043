"""Gradient ascent (GA): push the answer likelihood of forget questions down, nothing else."""

from __future__ import annotations

import torch

from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, ImageBank
from sua_demo.unlearning.base import METHODS, UnlearningMethod
from sua_demo.unlearning.losses import nll


@METHODS.register("ga")
class GradientAscent(UnlearningMethod):
    def compute_loss(
        self, adapter: VisionLanguageAdapter, bank: ImageBank, forget: list[Example], retain: list[Example]
    ) -> torch.Tensor:
        return -nll(adapter, bank, forget)
