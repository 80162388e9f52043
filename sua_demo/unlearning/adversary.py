"""The adversary inside robust unlearning (docs/robust.md): one universal δ, moved one signed-gradient step a batch
in the direction SUA moves its own (lower NLL of the true answers on forget photos + δ), kept within ε, and drawn
afresh every `restart_every` steps. The weights then unlearn on the clean photos and on the photos + δ, so a
noise like SUA's meets a model trained against it (universal adversarial training, one extra gradient a step)."""

from __future__ import annotations

import torch

from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, ImageBank, questions_answers


class Perturbed:
    """A bank's photos (or a step's jittered reads of them) with δ added, clamped to [0, 1]."""

    def __init__(self, bank: ImageBank, delta: torch.Tensor) -> None:
        self.bank, self.delta = bank, delta

    def get(self, examples: list[Example]) -> torch.Tensor | None:
        x = self.bank.get(examples)
        return None if x is None else (x + self.delta.to(x.dtype)).clamp(0.0, 1.0)


class UniversalAdversary:
    """δ's state across the unlearning steps: `step` moves it on one forget batch, `reads` adds it to a bank."""

    def __init__(self, eps: float, alpha: float, restart_every: int, seed: int) -> None:
        self.eps, self.alpha, self.restart_every = eps, alpha, restart_every
        self.generator = torch.Generator().manual_seed(seed)
        self.delta: torch.Tensor | None = None
        self.steps = 0

    def _fresh(self, like: torch.Tensor) -> torch.Tensor:
        noise = torch.rand(like.shape[-3:], generator=self.generator, dtype=torch.float32)
        return (2 * noise - 1) * self.eps

    def step(self, adapter: VisionLanguageAdapter, bank: ImageBank, forget: list[Example]) -> bool:
        """One signed step of δ that makes the true answers likelier on this forget batch (the attacker's move);
        the weights' gradients are left untouched. The batch is read (and jittered) once, and δ moves on that read.
        False for a batch with no photo (the sampler's batches are of one kind: text only has nothing to perturb)."""
        x = bank.get(forget)
        if x is None:
            return False
        if self.delta is None or (self.restart_every and self.steps % self.restart_every == 0):
            self.delta = self._fresh(x)
        self.steps += 1
        delta = self.delta.clone().requires_grad_(True)
        loss = adapter.answer_nll((x + delta.to(x.dtype)).clamp(0.0, 1.0), *questions_answers(forget)).mean()
        (grad,) = torch.autograd.grad(loss, delta)
        with torch.no_grad():
            self.delta = (delta - self.alpha * grad.sign()).clamp(-self.eps, self.eps).detach()
        return True

    def reads(self, bank: ImageBank) -> Perturbed | None:
        """The bank with the current δ added (None before its first step)."""
        return None if self.delta is None else Perturbed(bank, self.delta)
