"""SUA, the Stealthy Unlearning Attack (Zhang et al., EMNLP 2025, arXiv 2506.17265): one universal L-inf
perturbation that makes an unlearned MLLM answer forget-set questions again, while a denoiser-based detector
sees nothing odd.

Loss = A(answer | x + delta) + beta * A(answer | D(x + delta))
       + lambda * (1 - cos(E(x + delta), E(D(x + delta))))   [+ retain KL]
A is the answer term: the mean token NLL, or a per-token logit margin that stops pushing a token once it
leads by `margin` (so tokens already won leave the gradient to the others). E is the pooled projector
embedding, D a denoiser. x + delta and D(x + delta) go through the vision tower in ONE batched pass, and
the embedding term reuses that pass. Gradients flow through every term; the public reference computes its
alignment term under no_grad (`stealth_grad=False` reproduces that), where it has no effect on delta.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import torch
import torch.nn.functional as F

from sua_demo.attacks import parallel
from sua_demo.attacks.base import ATTACKS, AttackConfig, UniversalAttack
from sua_demo.core.errors import BadValueError
from sua_demo.core.refusal import DEFAULT as DEFAULT_REFUSALS
from sua_demo.models.base import VisionLanguageAdapter, answer_token_kl_sum, per_row_mean
from sua_demo.models.examples import Example, ImageBank, questions_answers

TokenLoss = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (K, V) logits, (K,) targets -> (K,) losses


def token_nll(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.float(), targets, reduction="none")


def token_margin(margin: float) -> TokenLoss:
    """relu(margin - (z_target - max other z)): zero once the target leads every other token by `margin`."""

    def loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        z = logits.float()
        target = z.gather(1, targets[:, None])[:, 0]
        other = z.scatter(1, targets[:, None], float("-inf")).amax(1)
        return F.relu(margin - (target - other))

    return loss


def gate_loss(logits: torch.Tensor, gate_ids: torch.Tensor) -> torch.Tensor:
    """-log(1 - p(any refusal's first token)): opens a refusal gate without naming the answer."""
    logp = F.log_softmax(logits.float(), -1)
    refuse = logp[:, gate_ids].logsumexp(-1)
    return -torch.log1p(-refuse.exp().clamp(max=1 - 1e-6))


def first_positions(rows: torch.Tensor) -> torch.Tensor:
    """(K,) True where a token is the first answer token of its row (rows come sorted, as from nonzero())."""
    first = torch.ones_like(rows, dtype=torch.bool)
    first[1:] = rows[1:] != rows[:-1]
    return first


def bucketed_loss(
    adapter: VisionLanguageAdapter,
    feats: torch.Tensor,
    questions: list[str],
    answers: list[str],
    token_loss: TokenLoss = token_nll,
    gate: tuple[float, torch.Tensor] | None = None,
) -> torch.Tensor:
    """(N,) per-answer mean of `token_loss`, rows sorted by length into up to 3 language-model passes of >= 16.

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
    losses = []
    for p in parts:
        logits, targets, rows = adapter.answer_token_logits(
            feats[p], [questions[i] for i in p], [answers[i] for i in p]
        )
        tokens = token_loss(logits, targets)
        if gate is not None:
            weight, ids = gate
            first = first_positions(rows)
            tokens = tokens + weight * first * gate_loss(logits, ids.to(logits.device))
        losses.append(per_row_mean(tokens, rows, len(p)))
    inverse = torch.empty(len(order), dtype=torch.long)
    inverse[torch.tensor(order)] = torch.arange(len(order))  # the parts are consecutive slices of `order`
    return torch.cat(losses)[inverse.to(feats.device)]


@ATTACKS.register("sua")
class SUA(UniversalAttack):
    """The universal, stealthy attack. x: (N, 3, S, S) in [0, 1]; delta: (3, S, S) with |delta| <= eps."""

    def __init__(self, adapter: VisionLanguageAdapter, cfg: AttackConfig) -> None:
        super().__init__(adapter, cfg)
        if cfg.loss not in ("nll", "margin"):
            raise BadValueError(f"loss must be 'nll' or 'margin', got {cfg.loss!r}")
        self.token_loss = token_nll if cfg.loss == "nll" else token_margin(cfg.margin)
        self.gate: tuple[float, torch.Tensor] | None = None
        if cfg.gate_weight > 0:
            ids = sorted(
                {adapter.answer_ids(p)[0] for p in DEFAULT_REFUSALS.phrases} - {adapter.tokenizer.unk_token_id}
            )
            self.gate = (cfg.gate_weight, torch.tensor(ids))

    def objective(
        self, x: torch.Tensor, delta: torch.Tensor, chunk: list[Example], retain: list[Example] | None, bank: ImageBank
    ) -> tuple[torch.Tensor, dict[str, float]]:
        cfg, adapter = self.cfg, self.adapter
        adv = (x + delta).clamp(0, 1)
        n = len(chunk)
        questions, answers = questions_answers(chunk)
        stealth = cfg.stealth_weight > 0 or cfg.beta > 0
        with torch.autocast(adv.device.type, enabled=False):  # the purifier at full precision, as deployed
            views = torch.cat([adv, self.denoiser(adv)]) if stealth else adv
        feats = adapter.image_features(adapter.pixel_values(views))  # one vision pass for every view
        rows = 2 * n if cfg.beta > 0 else n
        answer_loss = bucketed_loss(
            adapter, feats[:rows], (questions * 2)[:rows], (answers * 2)[:rows], self.token_loss, self.gate
        )
        loss = answer_loss[:n].mean()
        stats = {cfg.loss: float(answer_loss[:n].mean().detach())}
        if cfg.beta > 0:
            loss = loss + cfg.beta * answer_loss[n:].mean()
            stats[f"{cfg.loss}_denoised"] = float(answer_loss[n:].mean().detach())
        if stealth:
            pooled = feats.mean(1)
            cos = F.cosine_similarity(pooled[:n].float(), pooled[n:].float(), dim=-1)
            stats["cos_denoised"] = float(cos.mean().detach())
            if cfg.stealth_weight > 0:
                term = (1 - cos).mean()
                loss = loss + cfg.stealth_weight * (term if cfg.stealth_grad else term.detach())
        if retain and cfg.retain_kl_weight > 0:
            total, count = self.retain_kl(delta, retain, bank)
            # The mean over every rank's answer tokens, scaled so that parallel.average (which weighs each rank
            # by its share of the forget rows) returns exactly its gradient; alone, this is total / count.
            global_count = max(parallel.global_sum(count), 1.0)
            kl = total / global_count * (parallel.global_sum(n) / n)
            loss = loss + cfg.retain_kl_weight * kl
            stats["retain_kl"] = float(parallel.global_sum(float(total.detach())) / global_count)
        return loss, stats

    def retain_kl(self, delta: torch.Tensor, retain: list[Example], bank: ImageBank) -> tuple[torch.Tensor, int]:
        """Summed KL(p(. | x) || p(. | x + delta)) over retain answer tokens and their count: delta should leave
        retain people alone."""
        adapter = self.adapter
        x = bank.get(retain)
        if x is None:
            return delta.sum() * 0, 0
        x = x.to(delta.device)
        batch = adapter.encode_batch(True, *questions_answers(retain))
        with torch.no_grad():
            clean = adapter.logits(batch, x)
        return answer_token_kl_sum(clean, adapter.logits(batch, (x + delta).clamp(0, 1)), batch["labels"])


@ATTACKS.register("sua_plain")
class SUAPlain(SUA):
    """SUA without the stealth term: the ablation that shows what the term buys."""

    def __init__(self, adapter: VisionLanguageAdapter, cfg: AttackConfig) -> None:
        super().__init__(adapter, replace(cfg, stealth_weight=0.0, beta=0.0))
