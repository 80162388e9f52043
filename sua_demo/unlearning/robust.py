"""Robust unlearning (docs/robust.md): a method's own loss on the clean batch, plus its forget loss on the same batch
with the adversary's universal δ, moved one step a batch against the weights as they unlearn."""

from __future__ import annotations

from dataclasses import replace

import torch

from sua_demo.core.config import UnlearnConfig
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, ImageBank
from sua_demo.unlearning.adversary import UniversalAdversary
from sua_demo.unlearning.base import METHODS
from sua_demo.unlearning.grad_diff import GradDiff
from sua_demo.unlearning.idk import IdkNLL
from sua_demo.unlearning.recipe import recipe, ships


class AgainstUniversalNoise:
    """Mixed in before a method with `forget_loss`: the adversary steps on the forget batch, then the method's loss
    on the clean batch and its forget loss on the batch + δ are summed."""

    cfg: UnlearnConfig

    def compute_loss(
        self, adapter: VisionLanguageAdapter, bank: ImageBank, forget: list[Example], retain: list[Example]
    ) -> torch.Tensor:
        adversary = self.adversary()
        perturbed = adversary.step(adapter, bank, forget)  # a text-only batch: the plain loss alone
        loss = super().compute_loss(adapter, bank, forget, retain)  # type: ignore[misc]
        noisy = adversary.reads(bank)
        if perturbed and noisy is not None:
            loss = loss + self.cfg.robust_weight * self.forget_loss(adapter, noisy, forget)  # type: ignore[attr-defined]
        return loss

    def adversary(self) -> UniversalAdversary:
        if getattr(self, "_adversary", None) is None:
            c = self.cfg
            self._adversary = UniversalAdversary(c.robust_eps, c.robust_alpha, c.robust_restart_every, c.seed)
        return self._adversary


@METHODS.register("idk_robust")
class IdkRobust(AgainstUniversalNoise, IdkNLL):
    """IDK, trained against a universal δ: refuse on the photos with δ too."""


@METHODS.register("grad_diff_robust")
class GradDiffRobust(AgainstUniversalNoise, GradDiff):
    """GradDiff, trained against a universal δ: ascend on the photos with δ too."""


# Each plain demo recipe and its faithful rule exactly, with a universal δ trained against it, and the plain method's
# gates read the same way in a table of their own (docs/robust.md, fixed before any robust model was built); built
# and attacked only when named (`sua build-faithful --only idk_robust grad_diff_robust`).
for _plain in ("idk", "grad_diff"):
    _base = recipe(_plain)
    ships(
        replace(
            _base,
            name=f"{_plain}_robust",
            unlearn=replace(_base.unlearn, method=f"{_plain}_robust"),
            gates=tuple(replace(g, model=f"{_plain}_robust") for g in _base.gates),
            table="robust",
            noise_splits=(0, 1, 2),
        )
    )
