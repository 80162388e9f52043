"""Plain asking: the clean photo, the question without a photo (the name in it), and other words."""

from __future__ import annotations

from dataclasses import replace

from sua_demo.audit.base import AUDITS, AuditContext, AuditMethod
from sua_demo.dataset.profiles import PARAPHRASES
from sua_demo.eval.evaluate import answer
from sua_demo.models.examples import Example, text_examples


@AUDITS.register("clean")
class Clean(AuditMethod):
    """The baseline every other method is read against: the held-out photo, the bench's own question."""

    def answers(self, ctx: AuditContext, role: str) -> tuple[list[Example], list[str]]:
        adapter, bank = ctx.models[role]
        examples = ctx.asked()
        return examples, answer(adapter, bank, examples)


@AUDITS.register("text_only")
class TextOnly(AuditMethod):
    """No photo: the name is in the question. Unlearning trained on photos may leave the name-keyed path."""

    def answers(self, ctx: AuditContext, role: str) -> tuple[list[Example], list[str]]:
        adapter, bank = ctx.models[role]
        ids = ctx.forget_people() + (ctx.bench.retain_ids[: ctx.retain_people] if ctx.people is None else [])
        examples = text_examples(ctx.bench, ids)
        return examples, answer(adapter, bank, examples)


@AUDITS.register("rephrased")
class Rephrased(AuditMethod):
    """The same facts asked in other words (bench/profiles.py PARAPHRASES), on the held-out photos."""

    def answers(self, ctx: AuditContext, role: str) -> tuple[list[Example], list[str]]:
        adapter, bank = ctx.models[role]
        examples = [
            Example(replace(e.item, question=q), e.photo) for e in ctx.asked() for q in PARAPHRASES[e.item.fact]
        ]
        return examples, answer(adapter, bank, examples)
