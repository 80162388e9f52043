"""Greedy answers without `generate` where one forward pass already knows them.

If, with a candidate answer teacher-forced, every candidate token (its end-of-sequence included) is the
arg-max of the logits before it, greedy decoding emits exactly that candidate and stops: the text is
known without decoding step by step. Evaluation knows two likely candidates per question (the true
answer and the refusal), so one batched forward settles most rows and `generate` runs only for the rest.

Exactness: the implication holds for the same logits; a teacher-forced batch (right-padded, one pass)
and `generate` (left-padded, KV cache) differ by float rounding, so a row counts only when every
arg-max wins by `margin` logits, far above that rounding. Anything else goes to `generate`.
"""

from __future__ import annotations

import torch

from sua_demo.models.base import IGNORE, VisionLanguageAdapter


@torch.inference_mode()
def forced_greedy(
    adapter: VisionLanguageAdapter,
    images: torch.Tensor | None,
    questions: list[str],
    candidates: list[list[str]],
    max_new_tokens: int = 8,
    margin: float = 1e-2,
) -> list[str | None]:
    """Per question, the candidate that greedy decoding would produce verbatim, else None (undecided).

    `candidates[k][i]` is the k-th candidate for question i; all candidates share one vision pass.
    """
    n, k = len(questions), len(candidates)
    feats = None
    if images is not None:
        feats = adapter.image_features(adapter.pixel_values(images.to(adapter.device))).repeat(k, 1, 1)
    texts = [c for cands in candidates for c in cands]
    batch = adapter.encode_batch(images is not None, questions * k, texts)
    logits = adapter.lm_logits(batch, feats)[:, :-1].float()
    targets = batch["labels"][:, 1:]
    # Greedy decoding stops after max_new_tokens: only that many candidate tokens have to be produced.
    mask = (targets != IGNORE) & ((targets != IGNORE).cumsum(1) <= max_new_tokens)
    target_logit = logits.gather(-1, targets.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    rival = logits.scatter(-1, targets.clamp(min=0).unsqueeze(-1), float("-inf")).amax(-1)
    wins = ((target_logit - rival > margin) | ~mask).all(1).view(k, n)
    out: list[str | None] = [None] * n
    for j in range(k):
        for i in range(n):
            if out[i] is None and wins[j, i]:
                ids = list(adapter.answer_ids(candidates[j][i]))[:max_new_tokens]
                out[i] = adapter.tokenizer.decode(ids, skip_special_tokens=True).strip()
    return out
