"""Soft-prompt attack (arXiv 2502.15836): n learned embedding vectors put before the question, optimised on the
attacker's people like delta (their train photos, true answers) and tested on people they never saw. An attack
in embedding space is stronger than any photo noise, and can teach what the model never knew; the same soft
prompt optimised against the retrain control measures that."""

from __future__ import annotations

from typing import Any

import torch

from sua_demo.audit.base import AUDITS, AuditContext, AuditMethod
from sua_demo.core.errors import SuaError
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, batches, image_examples

STEPS, LR, BATCH = 150, 0.05, 32


def _marked(adapter: VisionLanguageAdapter, question: str, n: int) -> str:
    """The question with n placeholder tokens before it, whose embeddings the soft prompt replaces."""
    if adapter.tokenizer.unk_token is None:
        raise SuaError("the soft-prompt probe needs a tokenizer with an unknown-word token as its placeholder")
    return " ".join([adapter.tokenizer.unk_token] * n + [question])


def train_soft_prompt(
    adapter: VisionLanguageAdapter, bank: Any, examples: list[Example], n: int, seed: int, steps: int = STEPS
) -> torch.Tensor:
    emb = adapter.model.get_input_embeddings().weight
    gen = torch.Generator().manual_seed(seed)
    soft = (
        (torch.randn(n, emb.shape[1], generator=gen) * emb.detach().float().std()).to(emb.device).requires_grad_(True)
    )
    opt = torch.optim.Adam([soft], lr=LR)
    adapter.model.eval().requires_grad_(False)
    for _ in range(steps):
        chunk = [examples[int(i)] for i in torch.randperm(len(examples), generator=gen)[:BATCH]]
        questions = [_marked(adapter, e.item.question, n) for e in chunk]
        logp, mask = adapter.answer_logprobs(bank.get(chunk), questions, [e.item.answer for e in chunk], soft)
        loss = -logp.sum() / mask.sum()  # per answer token over the batch, not per answer
        opt.zero_grad()
        loss.backward()
        opt.step()
    return soft.detach()


def soft_answers(adapter: VisionLanguageAdapter, bank: Any, examples: list[Example], soft: torch.Tensor) -> list[str]:
    """Greedy answers with the soft prompt in its placeholders."""
    out: list[str] = []
    for chunk in batches(examples, 64):
        questions = [_marked(adapter, e.item.question, len(soft)) for e in chunk]
        out += adapter.generate(bank.get(chunk), questions, soft=soft)
    return out


class SoftPrompt(AuditMethod):
    uses_split = True
    n: int  # soft-prompt vectors, set by each registered name (soft_prompt1, soft_prompt5)

    def work(self, quick: bool) -> int:
        return 2 * self.steps(quick)  # input-only steps: forward and one backward pass (AuditMethod.work)

    @staticmethod
    def steps(quick: bool) -> int:
        return STEPS // 3 if quick else STEPS

    def answers(self, ctx: AuditContext, role: str) -> tuple[list[Example], list[str]]:
        adapter, bank = ctx.models[role]
        fit = image_examples(ctx.bench, ctx.split.attacker_ids, "train")
        steps = self.steps(ctx.quick)
        soft = train_soft_prompt(adapter, bank, fit, self.n, ctx.split.seed, steps)  # against this very model
        examples = ctx.asked()
        return examples, soft_answers(adapter, bank, examples, soft)


AUDITS.register("soft_prompt1", n=1)(SoftPrompt)
AUDITS.register("soft_prompt5", n=5)(SoftPrompt)
