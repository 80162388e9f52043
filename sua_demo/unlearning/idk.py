"""IdkNLL: answer forget questions with a refusal, keep the true answers on retain (refusal-style unlearning)."""

from __future__ import annotations

import torch

from sua_demo.core.refusal import IDK_ANSWER
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, ImageBank
from sua_demo.unlearning.base import METHODS
from sua_demo.unlearning.grad_diff import GradDiff
from sua_demo.unlearning.losses import nll


@METHODS.register("idk")
class IdkNLL(GradDiff):
    def forget_loss(self, adapter: VisionLanguageAdapter, bank: ImageBank, forget: list[Example]) -> torch.Tensor:
        return nll(adapter, bank, forget, answer=IDK_ANSWER)
