"""NPO (Zhang et al., 2024): a bounded, reference-relative forget loss; GradDiff's retain NLL stays."""

from __future__ import annotations

import torch

from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, ImageBank
from sua_demo.unlearning.base import METHODS
from sua_demo.unlearning.grad_diff import GradDiff
from sua_demo.unlearning.losses import npo, sequence_logprob
from sua_demo.unlearning.recipe import lora_recipe, ships


@METHODS.register("npo")
class NPO(GradDiff):
    needs_reference = True

    def forget_loss(self, adapter: VisionLanguageAdapter, bank: ImageBank, forget: list[Example]) -> torch.Tensor:
        assert self.reference is not None
        with torch.no_grad():
            ref = sequence_logprob(self.reference, bank, forget)
        return npo(sequence_logprob(adapter, bank, forget), ref, self.cfg.npo_beta)


# As GA: the over-unlearned regime, on purpose.
ships(lora_recipe("npo", lr=1e-3, max_steps=200, keep_best=False))
