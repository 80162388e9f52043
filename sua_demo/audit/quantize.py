"""Weight quantization: unlearned LLMs keep ~21 % of forgotten knowledge at full precision and ~83 % after 4-bit
quantization (arXiv 2410.16454): unlearning's small weight changes can vanish in the rounding. Round-to-nearest,
per output channel, of every linear layer of the language model and the projector, in torch (CPU or GPU)."""

from __future__ import annotations

import torch

from sua_demo.audit.base import AUDITS, AuditContext, AuditMethod
from sua_demo.eval.evaluate import answer
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, ImageBank


@torch.no_grad()
def quantize_rtn(adapter: VisionLanguageAdapter, bits: int) -> VisionLanguageAdapter:
    """A copy of the adapter whose language model and projector weights are rounded to `bits` (symmetric,
    one scale per output channel); the vision tower stays as it is."""
    clone = adapter.clone()
    vision = {id(m) for m in clone.vision_tower.modules()} if clone.vision_tower is not None else set()
    levels = 2 ** (bits - 1) - 1
    for module in clone.model.modules():
        if isinstance(module, torch.nn.Linear) and id(module) not in vision:
            w = module.weight
            scale = w.abs().amax(dim=1, keepdim=True).clamp(min=1e-12) / levels
            w.copy_((w / scale).round().clamp(-levels, levels) * scale)
    return clone


class Quantized(AuditMethod):
    bits: int  # set by each registered name (quant8, quant4)

    def answers(self, ctx: AuditContext, role: str) -> tuple[list[Example], list[str]]:
        adapter, _ = ctx.models[role]
        quantized = quantize_rtn(adapter, self.bits)
        examples = ctx.asked()
        bank: ImageBank = ctx.models[role][1]  # the same photos: quantization leaves the image processing alone
        return examples, answer(quantized, bank, examples)


AUDITS.register("quant8", bits=8)(Quantized)
AUDITS.register("quant4", bits=4)(Quantized)
