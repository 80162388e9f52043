"""RMU (Li et al. 2024, WMDP): misdirect the language model's activations on forget questions towards one fixed
random direction at a middle layer, scaled far beyond their usual size, while a retain term keeps retain
activations where the starting model had them. It never reads the answers' probabilities, which is why it is the
peers' strong baseline against attacks that push those probabilities back."""

from __future__ import annotations

import torch

from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, ImageBank, questions_answers
from sua_demo.unlearning.base import METHODS, UnlearningMethod
from sua_demo.unlearning.recipe import lora_recipe, ships


def layer_activations(
    adapter: VisionLanguageAdapter, bank: ImageBank, chunk: list[Example], layer: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(N, T, D) output of one language-model layer over question and answer, and the (N, T) mask of real tokens."""
    images = bank.get(chunk)
    batch = adapter.encode_batch(images is not None, *questions_answers(chunk))
    block = adapter.decoder_layers()[layer]
    seen: list[torch.Tensor] = []
    handle = block.register_forward_hook(lambda _m, _i, out: seen.append(out[0] if isinstance(out, tuple) else out))
    try:
        adapter.logits(batch, images)
    finally:
        handle.remove()
    return seen[0].float(), batch["attention_mask"].bool()


@METHODS.register("rmu")
class RMU(UnlearningMethod):
    needs_reference = True  # the retain term's activations, and the scale of the random target

    def _layer(self, adapter: VisionLanguageAdapter) -> int:
        n = len(adapter.decoder_layers())
        return n // 2 if self.cfg.rmu_layer < 0 else self.cfg.rmu_layer

    def _target(self, bank: ImageBank, forget: list[Example], layer: int) -> torch.Tensor:
        """c·u: a unit vector drawn once from the run's seed, times rmu_steering × the reference's activation RMS."""
        if not hasattr(self, "_c_u"):
            assert self.reference is not None
            with torch.no_grad():
                h, mask = layer_activations(self.reference, bank, forget, layer)
            rms = h[mask].square().mean().sqrt()
            gen = torch.Generator().manual_seed(self.cfg.seed)
            u = torch.rand(h.shape[-1], generator=gen).to(rms.device)  # drawn on the CPU: the same u anywhere
            self._c_u = self.cfg.rmu_steering * rms * u / u.norm() * h.shape[-1] ** 0.5
        return self._c_u

    def compute_loss(
        self, adapter: VisionLanguageAdapter, bank: ImageBank, forget: list[Example], retain: list[Example]
    ) -> torch.Tensor:
        assert self.reference is not None
        layer = self._layer(adapter)
        target = self._target(bank, forget, layer)
        h, mask = layer_activations(adapter, bank, forget, layer)
        forget_loss = (h[mask] - target.to(h.device)).square().mean()
        h_r, mask_r = layer_activations(adapter, bank, retain, layer)
        with torch.no_grad():
            ref_r, _ = layer_activations(self.reference, bank, retain, layer)
        retain_loss = (h_r[mask_r] - ref_r[mask_r]).square().mean()
        return forget_loss + self.cfg.retain_weight * retain_loss


# The report card's modern methods, LoRA like the peers' runs, under the shared stopping rule with GradDiff's
# targets. RMU's retain weight 10: its forget term starts near (6.5^2 + 1) x the activation RMS squared while the
# retain term starts at 0 (chosen before any run).
ships(lora_recipe("rmu", lr=1e-3, max_steps=200, retain_weight=10.0))
