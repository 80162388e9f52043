"""Gradient ascent (GA): push the answer likelihood of forget questions down, nothing else."""

from __future__ import annotations

import torch

from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, ImageBank
from sua_demo.unlearning.base import METHODS, UnlearningMethod
from sua_demo.unlearning.losses import nll
from sua_demo.unlearning.recipe import lora_recipe, ships


@METHODS.register("ga")
class GradientAscent(UnlearningMethod):
    def compute_loss(
        self, adapter: VisionLanguageAdapter, bank: ImageBank, forget: list[Example], retain: list[Example]
    ) -> torch.Tensor:
        return -nll(adapter, bank, forget)


# GA, KL and NPO run their full step budget at a high lr on purpose: they show the over-unlearned regime
# (nothing hidden is left), as LoRA adapters on the language model, which keeps checkpoints/ small.
ships(lora_recipe("ga", lr=1e-3, max_steps=200, keep_best=False))
