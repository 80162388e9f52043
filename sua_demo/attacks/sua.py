"""SUA: one universal, stealthy perturbation delta (L-inf, ||delta|| <= eps) that makes an unlearned MLLM
answer forget-set questions again (the Stealthy Unlearning Attack).

Loss = NLL(answer | x + delta) + beta * NLL(answer | D(x + delta))
       + lambda * (1 - cos(E(x + delta), E(D(x + delta))))   [+ retain KL]
E is the pooled projector embedding, D a denoiser. x + delta and D(x + delta) go through the vision
tower in ONE batched pass, and the embedding term reuses that pass; gradients flow through every
term (the public reference computes its alignment term under no_grad, where it has no effect).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from sua_demo.attacks.base import ATTACKS, UniversalAttack
from sua_demo.data import Example, ImageBank
from sua_demo.models.base import VisionLanguageAdapter


def _qa(chunk: list[Example]) -> tuple[list[str], list[str]]:
    return [e.item.question for e in chunk], [e.item.answer for e in chunk]


def bucketed_nll(
    adapter: VisionLanguageAdapter, feats: torch.Tensor, questions: list[str], answers: list[str]
) -> torch.Tensor:
    """(N,) answer NLL with rows sorted by length into up to 3 language-model passes of >= 16 rows.

    One pass pads every row to the longest (multiple-choice prompts are half again as long as the
    others): a quarter of its tokens were padding. Buckets made the tiny model's step 20% faster at 144
    rows and 10% at 32; more or smaller buckets make the matrix products too small to run at full speed.
    """
    buckets = min(3, max(1, len(questions) // 16))
    lengths = [
        len(adapter.prompt_ids(q, True)) + len(adapter.answer_ids(a)) for q, a in zip(questions, answers, strict=True)
    ]
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    cuts = [len(order) * b // buckets for b in range(buckets + 1)]
    parts = [order[lo:hi] for lo, hi in zip(cuts, cuts[1:], strict=False) if hi > lo]
    nll = torch.cat(
        [adapter.nll_from_features(feats[p], [questions[i] for i in p], [answers[i] for i in p]) for p in parts]
    )
    inverse = torch.empty(len(order), dtype=torch.long)
    inverse[torch.tensor(order)] = torch.arange(len(order))  # the parts are consecutive slices of `order`
    return nll[inverse.to(nll.device)]


@ATTACKS.register("sua")
class SUA(UniversalAttack):
    def objective(
        self, x: torch.Tensor, delta: torch.Tensor, chunk: list[Example], retain: list[Example] | None, bank: ImageBank
    ) -> tuple[torch.Tensor, dict[str, float]]:
        cfg, adapter = self.cfg, self.adapter
        adv = (x + delta).clamp(0, 1)
        n = len(chunk)
        questions, answers = _qa(chunk)
        stealth = cfg.stealth_weight > 0 or cfg.beta > 0
        with torch.autocast(adv.device.type, enabled=False):  # the purifier at full precision, as deployed
            views = torch.cat([adv, self.denoiser(adv)]) if stealth else adv
        feats = adapter.image_features(adapter.pixel_values(views))  # one vision pass for every view
        lm_rows = 2 * n if cfg.beta > 0 else n
        nll = bucketed_nll(adapter, feats[:lm_rows], (questions * 2)[:lm_rows], (answers * 2)[:lm_rows])
        loss = nll[:n].mean()
        stats = {"nll": float(nll[:n].mean().detach())}
        if cfg.beta > 0:
            loss = loss + cfg.beta * nll[n:].mean()
            stats["nll_denoised"] = float(nll[n:].mean().detach())
        if stealth:
            pooled = feats.mean(1)
            cos = F.cosine_similarity(pooled[:n].float(), pooled[n:].float(), dim=-1)
            stats["cos_denoised"] = float(cos.mean().detach())
            if cfg.stealth_weight > 0:
                loss = loss + cfg.stealth_weight * (1 - cos).mean()
        if retain and cfg.retain_kl_weight > 0:
            kl = self.retain_kl(delta, retain, bank)
            loss = loss + cfg.retain_kl_weight * kl
            stats["retain_kl"] = float(kl.detach())
        return loss, stats

    def retain_kl(self, delta: torch.Tensor, retain: list[Example], bank: ImageBank) -> torch.Tensor:
        """KL(p(. | x) || p(. | x + delta)) on retain answer tokens: delta should leave retain people alone."""
        adapter = self.adapter
        x = bank.get(retain)
        if x is None:
            return delta.sum() * 0
        x = x.to(delta.device)
        batch = adapter.encode_batch(True, *_qa(retain))
        mask = (batch["labels"][:, 1:] != -100).unsqueeze(-1)
        with torch.no_grad():
            clean = F.log_softmax(adapter.logits(batch, x)[:, :-1].float(), -1)
        noisy = F.log_softmax(adapter.logits(batch, (x + delta).clamp(0, 1))[:, :-1].float(), -1)
        return (clean.exp() * (clean - noisy) * mask).sum() / mask.sum().clamp(min=1)


@ATTACKS.register("sua_plain")
class SUAPlain(SUA):
    """SUA without the stealth term: the ablation that shows what the term buys."""

    def __init__(self, adapter, cfg):  # type: ignore[no-untyped-def]
        from dataclasses import replace

        super().__init__(adapter, replace(cfg, stealth_weight=0.0, beta=0.0))
