"""SUA: the split's universal delta on the held-out photos, and random noise of the same eps (its own control
beside the retrain model's)."""

from __future__ import annotations

from sua_demo.attacks import ATTACKS, AttackConfig, Noise
from sua_demo.audit.base import AUDITS, AuditContext, AuditMethod
from sua_demo.core.errors import SuaError
from sua_demo.eval.recovery import answers_with
from sua_demo.models.examples import Example


def _noise(ctx: AuditContext) -> Noise:
    if ctx.noise is None:
        raise SuaError("this audit has no SUA noise: build the shipped noises (make noises) or pass one")
    return ctx.noise


@AUDITS.register("sua")
class SuaNoise(AuditMethod):
    uses_split = True  # delta was optimised on this split's attacker people

    def answers(self, ctx: AuditContext, role: str) -> tuple[list[Example], list[str]]:
        adapter, bank = ctx.models[role]
        examples = ctx.asked()
        return examples, answers_with(adapter, bank, examples, _noise(ctx))


@AUDITS.register("random_noise")
class RandomNoiseProbe(AuditMethod):
    def answers(self, ctx: AuditContext, role: str) -> tuple[list[Example], list[str]]:
        adapter, bank = ctx.models[role]
        noise = ATTACKS.get("random")(adapter, AttackConfig(eps=_noise(ctx).eps)).run(bank, [], progress=False)
        examples = ctx.asked()
        return examples, answers_with(adapter, bank, examples, noise)
