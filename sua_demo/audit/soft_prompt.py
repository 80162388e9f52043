"""Soft-prompt attack (arXiv 2502.15836): n learned embedding vectors put before the question, optimised on the
attacker's people like delta (their train photos, true answers) and tested on people they never saw. An attack
in embedding space is stronger than any photo noise, and can teach what the model never knew; the same soft
prompt optimised against the retrain control measures that."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from sua_demo.audit.base import AUDITS, AuditContext, AuditMethod
from sua_demo.data import Example, batches, image_examples
from sua_demo.errors import SuaError
from sua_demo.models.base import IGNORE, VisionLanguageAdapter

STEPS, LR, BATCH = 150, 0.05, 32


def _marked(adapter: VisionLanguageAdapter, question: str, n: int) -> str:
    """The question with n placeholder tokens before it, whose embeddings the soft prompt replaces."""
    if adapter.tokenizer.unk_token is None:
        raise SuaError("the soft-prompt probe needs a tokenizer with an unknown-word token as its placeholder")
    return " ".join([adapter.tokenizer.unk_token] * n + [question])


def _embeds(
    adapter: VisionLanguageAdapter, ids: torch.Tensor, images: torch.Tensor, soft: torch.Tensor
) -> torch.Tensor:
    embeds = adapter.model.get_input_embeddings()(ids)
    feats = adapter.image_features(adapter.pixel_values(images))
    embeds = embeds.masked_scatter((ids == adapter.image_token_id).unsqueeze(-1), feats.to(embeds.dtype))
    slots = (ids == adapter.tokenizer.unk_token_id).unsqueeze(-1)
    return embeds.masked_scatter(slots, soft.repeat(ids.shape[0], 1).to(embeds.dtype))


def train_soft_prompt(
    adapter: VisionLanguageAdapter, bank: Any, examples: list[Example], n: int, seed: int, steps: int = STEPS
) -> torch.Tensor:
    if type(adapter).lm_forward is not VisionLanguageAdapter.lm_forward:
        raise SuaError(
            f"the soft-prompt probe needs a family whose forward takes embeddings alone, not {type(adapter).__name__}"
        )
    emb = adapter.model.get_input_embeddings().weight
    gen = torch.Generator().manual_seed(seed)
    soft = (
        (torch.randn(n, emb.shape[1], generator=gen) * emb.detach().float().std()).to(emb.device).requires_grad_(True)
    )
    opt = torch.optim.Adam([soft], lr=LR)
    adapter.model.eval().requires_grad_(False)
    for _ in range(steps):
        chunk = [examples[int(i)] for i in torch.randperm(len(examples), generator=gen)[:BATCH]]
        batch = adapter.encode_batch(
            True, [_marked(adapter, e.item.question, n) for e in chunk], [e.item.answer for e in chunk]
        )
        logits = adapter.model(inputs_embeds=_embeds(adapter, batch["input_ids"], bank.get(chunk), soft),
                               attention_mask=batch["attention_mask"]).logits  # fmt: skip
        targets = batch["labels"][:, 1:]
        loss = F.cross_entropy(logits[:, :-1].float().transpose(1, 2), targets.clamp(min=0), reduction="none")
        loss = (loss * (targets != IGNORE)).sum() / (targets != IGNORE).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return soft.detach()


@torch.inference_mode()
def soft_answers(adapter: VisionLanguageAdapter, bank: Any, examples: list[Example], soft: torch.Tensor) -> list[str]:
    """Greedy answers with the soft prompt in place, through the model's own generate (left-padded embeddings)."""
    out: dict[int, str] = {}
    order = {id(e): i for i, e in enumerate(examples)}
    pad = adapter.tokenizer.pad_token_id
    for chunk in batches(examples, 64):
        prompts = [adapter.prompt_ids(_marked(adapter, e.item.question, len(soft)), True) for e in chunk]
        width = max(len(p) for p in prompts)
        ids = torch.full((len(chunk), width), pad, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, p in enumerate(prompts):
            ids[i, width - len(p) :], mask[i, width - len(p) :] = torch.tensor(p), 1
        ids, mask = ids.to(adapter.device), mask.to(adapter.device)
        new = adapter.model.generate(inputs_embeds=_embeds(adapter, ids, bank.get(chunk), soft), attention_mask=mask,
                                     max_new_tokens=8, do_sample=False, pad_token_id=pad,
                                     eos_token_id=adapter.tokenizer.eos_token_id)  # fmt: skip
        for e, text in zip(chunk, adapter.tokenizer.batch_decode(new, skip_special_tokens=True), strict=True):
            out[order[id(e)]] = text.strip()
    return [out[i] for i in range(len(examples))]


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
