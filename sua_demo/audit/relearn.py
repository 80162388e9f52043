"""Relearning (arXiv 2406.13356): a few fine-tuning steps on a small, disjoint part of the forget facts (one fact
per forget person, on train photos), then the *other* facts are asked. A model that only hid the facts gets
them back from a nudge; the retrain control, relearning the same data for as many steps, measures how much
those steps teach by themselves."""

from __future__ import annotations

import torch

from sua_demo.audit.base import AUDITS, AuditContext, AuditMethod
from sua_demo.eval.evaluate import answer
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, ImageBank, image_examples

LR = 1e-4  # the IDK recipe's unlearning rate: small steps, as an attacker with little data would take
BATCH = 32


def relearn_fact(ctx: AuditContext, pid: int) -> str:
    """The one fact person `pid` is relearned on (the others are asked), rotating with the split."""
    facts = sorted({q.fact for q in ctx.bench.items([pid], tasks=("gen",), modalities=("image",))})
    return facts[(pid + ctx.split.seed) % len(facts)]


def relearned(ctx: AuditContext, role: str, steps: int) -> VisionLanguageAdapter:
    adapter, bank = ctx.models[role]
    data = [
        e
        for e in image_examples(ctx.bench, ctx.split.attacker_ids + ctx.split.unseen_ids, "train")
        if e.item.fact == relearn_fact(ctx, e.person_id)
    ]
    clone = adapter.clone()
    clone.model.train().requires_grad_(True)
    opt = torch.optim.AdamW(clone.model.parameters(), lr=LR, weight_decay=0.0)
    gen = torch.Generator().manual_seed(ctx.split.seed)
    for _ in range(steps):
        chunk = [data[int(i)] for i in torch.randperm(len(data), generator=gen)[:BATCH]]
        loss = clone.answer_nll(bank.get(chunk), [e.item.question for e in chunk], [e.item.answer for e in chunk])
        opt.zero_grad(set_to_none=True)
        loss.mean().backward()
        opt.step()
    clone.model.eval().requires_grad_(False)
    return clone


class Relearn(AuditMethod):
    steps: int  # set by each registered name (relearn5, relearn20, relearn50)

    def work(self, quick: bool) -> int:
        return 3 * self.steps  # fine-tuning steps: forward and two backward passes (AuditMethod.work)

    def answers(self, ctx: AuditContext, role: str) -> tuple[list[Example], list[str]]:
        bank: ImageBank = ctx.models[role][1]
        model = relearned(ctx, role, self.steps)
        forget = set(ctx.split.attacker_ids + ctx.split.unseen_ids)
        examples = [
            e for e in ctx.asked() if e.person_id not in forget or e.item.fact != relearn_fact(ctx, e.person_id)
        ]
        return examples, answer(model, bank, examples)


AUDITS.register("relearn5", steps=5)(Relearn)
AUDITS.register("relearn20", steps=20)(Relearn)
AUDITS.register("relearn50", steps=50)(Relearn)
