"""The adapter interface: everything the rest of SUA Lab needs from a multimodal LLM.

Images enter as float tensors in [0, 1], shape (N, 3, H, W), at the model's input resolution.
`pixel_values` turns them into the model's input *differentiably*, so attacks optimise in pixel
space for any model family. Text is tokenised once per distinct prompt and cached.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from contextlib import nullcontext
from functools import cached_property, lru_cache
from typing import Any

import torch
import torch.nn.functional as F
from PIL import Image

from sua_demo.models import answer_only
from sua_demo.refusal import DEFAULT as DEFAULT_REFUSALS
from sua_demo.refusal import Refusals
from sua_demo.registry import Registry

IGNORE = -100


class VisionLanguageAdapter(ABC):
    """Wraps a transformers model + processor behind one small, typed, batched API."""

    def __init__(self, model: Any, processor: Any, source: str = "") -> None:
        self.model = model
        self.processor = processor
        self.tokenizer = processor.tokenizer
        self.source = source
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.prompt_ids = lru_cache(maxsize=65536)(self._prompt_ids)  # per instance, not shared via the class
        self.answer_ids = lru_cache(maxsize=65536)(self._answer_ids)

    # -- family-specific hooks -------------------------------------------------------------
    @property
    @abstractmethod
    def image_size(self) -> int:
        """Side of the square image the attack works at."""

    @abstractmethod
    def prepare_images(self, images: list[Image.Image]) -> torch.Tensor:
        """PIL images -> (N, 3, S, S) in [0, 1], resized and cropped exactly as the processor does."""

    @abstractmethod
    def pixel_values(self, x: torch.Tensor) -> torch.Tensor:
        """Differentiable [0, 1] pixels -> the model's `pixel_values` (normalisation in torch)."""

    @abstractmethod
    def image_token_block(self) -> str:
        """The text that stands for one image inside the prompt, after the processor's expansion."""

    @cached_property
    def _mean_std(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The processor's normalisation as (1, 3, 1, 1) tensors, for `pixel_values` in torch.

        Made as ordinary tensors even when first asked for under inference_mode (evaluation), or a later
        attack that differentiates through them would fail."""
        ip = self.processor.image_processor
        with torch.inference_mode(False):
            mean = torch.tensor(ip.image_mean, dtype=torch.float32).view(1, 3, 1, 1)
            std = torch.tensor(ip.image_std, dtype=torch.float32).view(1, 3, 1, 1)
        return mean, std

    @property
    def image_token_id(self) -> int:
        return int(self.tokenizer.convert_tokens_to_ids(self.processor.image_token))

    @abstractmethod
    def image_features(self, pixel_values: torch.Tensor) -> torch.Tensor:
        """(N, tokens, D) projected image tokens, as the language model receives them."""

    vision_attr = "vision_tower"  # where the family keeps its vision encoder inside `model.model`
    refusals: Refusals = DEFAULT_REFUSALS  # how this model declines; set your own for a model that refuses otherwise

    # -- what the rest of SUA Lab needs to know by name ----------------------------------------
    def towers(self) -> list[torch.nn.Module]:
        """The language model and the vision encoder: what `--compile` compiles."""
        inner = getattr(self.model, "model", self.model)
        vision = getattr(inner, self.vision_attr, None)
        return [m for m in (self.model.get_decoder(), vision) if isinstance(m, torch.nn.Module)]

    def language_prefix(self) -> str:
        """The qualified name of the language model's decoder inside the model (e.g. 'model.language_model')."""
        decoder = self.model.get_decoder()
        return next(name for name, m in self.model.named_modules() if m is decoder)

    def lora_pattern(self, targets: list[str]) -> str:
        """peft's target_modules regex: `targets` inside the language model only (as MLLMU-Bench does), plus the
        output head when asked for (IDK must emit words its head was never pushed towards)."""
        inner = "|".join(t for t in targets if t != "lm_head")
        lm = rf"{re.escape(self.language_prefix())}\..*\.({inner})"
        return rf"({lm}|lm_head)$" if "lm_head" in targets else rf"{lm}$"

    # -- shared machinery ------------------------------------------------------------------
    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        """The weights' dtype (the first floating parameter's)."""
        return next(p.dtype for p in self.model.parameters() if p.is_floating_point())

    def prompt_text(self, question: str, with_image: bool) -> str:
        content: list[dict[str, str]] = [{"type": "image"}] if with_image else []
        content.append({"type": "text", "text": question})
        messages = [{"role": "user", "content": content}]
        return self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)

    def _prompt_ids(self, question: str, with_image: bool) -> tuple[int, ...]:
        text = self.prompt_text(question, with_image)
        if with_image:
            text = text.replace(self.processor.image_token, self.image_token_block(), 1)
        return tuple(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _answer_ids(self, answer: str) -> tuple[int, ...]:
        return (*self.tokenizer(" " + answer, add_special_tokens=False)["input_ids"], self.tokenizer.eos_token_id)

    def encode_batch(self, with_image: bool, questions: list[str], answers: list[str]) -> dict[str, torch.Tensor]:
        """Right-padded prompt+answer ids with labels only on the answer tokens."""
        rows = [(self.prompt_ids(q, with_image), self.answer_ids(a)) for q, a in zip(questions, answers, strict=True)]
        width = max(len(p) + len(a) for p, a in rows)
        pad = self.tokenizer.pad_token_id
        ids = torch.full((len(rows), width), pad, dtype=torch.long)
        labels = torch.full((len(rows), width), IGNORE, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, (p, a) in enumerate(rows):
            n = len(p) + len(a)
            ids[i, :n] = torch.tensor(p + a)
            labels[i, len(p) : n] = torch.tensor(a)
            mask[i, :n] = 1
        return {
            "input_ids": ids.to(self.device),
            "attention_mask": mask.to(self.device),
            "labels": labels.to(self.device),
        }

    def lm_logits(
        self, batch: dict[str, torch.Tensor], features: torch.Tensor | None, keep: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Run the language model with image features already computed (scattered into the image slots).

        `keep`, a (N, T) boolean mask, projects only those positions onto the vocabulary: (n_kept, V); the
        last block's MLP then runs only there too (models/answer_only.py), as nothing else is read.
        """
        pruned = keep is not None and answer_only.install(self.model)
        with answer_only.only_at(keep) if pruned else nullcontext():
            return self.lm_forward(batch, features, 0 if keep is None else keep)

    def lm_forward(
        self, batch: dict[str, torch.Tensor], features: torch.Tensor | None, logits_to_keep: int | torch.Tensor
    ) -> torch.Tensor:
        """The model's forward with `features` in the image slots; families whose forward needs more than
        `inputs_embeds` to place an image (Qwen2-VL's M-RoPE positions) override this."""
        embeds = self.model.get_input_embeddings()(batch["input_ids"])
        if features is not None:
            slots = (batch["input_ids"] == self.image_token_id).unsqueeze(-1)
            embeds = embeds.masked_scatter(slots, features.to(embeds.dtype))
        return self.model(
            inputs_embeds=embeds, attention_mask=batch["attention_mask"], logits_to_keep=logits_to_keep
        ).logits

    def logits_and_embeddings(
        self, batch: dict[str, torch.Tensor], images: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Logits, and the pooled image embedding taken from the same vision pass (no second forward)."""
        if images is None:
            return self.lm_logits(batch, None), None
        feats = self.image_features(self.pixel_values(images.to(self.device)))
        return self.lm_logits(batch, feats), feats.mean(1)

    def answer_token_logits(
        self, features: torch.Tensor, questions: list[str], answers: list[str]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Logits at the answer-predicting positions only, given precomputed image features: (K, V) logits,
        (K,) target tokens and (K,) row indices, K the answer tokens of the whole batch."""
        batch = self.encode_batch(True, questions, answers)
        targets = batch["labels"][:, 1:]
        keep = targets != IGNORE  # the positions that predict an answer token
        # The last column is only ever a label, so the model reads one position fewer. Of the rest, only the
        # answer-predicting positions (a few in forty) go through the vocabulary projection (most of the
        # memory on a 32k-vocabulary model) and through the last block's MLP (a third of the tiny model's work).
        inputs = {k: batch[k][:, :-1] for k in ("input_ids", "attention_mask")}
        return self.lm_logits(inputs, features, keep), targets[keep], keep.nonzero()[:, 0]

    def logits(self, batch: dict[str, torch.Tensor], images: torch.Tensor | None) -> torch.Tensor:
        return self.logits_and_embeddings(batch, images)[0]

    def forward_answers(
        self, images: torch.Tensor | None, questions: list[str], answers: list[str]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """Per-token log p(answer | image, question) and answer-token mask, both (N, T), plus pooled embeddings."""
        batch = self.encode_batch(images is not None, questions, answers)
        logits, pooled = self.logits_and_embeddings(batch, images)
        logp, mask = _answer_logprobs(logits, batch["labels"])
        return logp, mask, pooled

    def token_logprobs(
        self, images: torch.Tensor | None, questions: list[str], answers: list[str]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return self.forward_answers(images, questions, answers)[:2]

    def answer_nll(self, images: torch.Tensor | None, questions: list[str], answers: list[str]) -> torch.Tensor:
        """(N,) mean NLL per answer token: the training and attack loss."""
        logp, mask = self.token_logprobs(images, questions, answers)
        return -logp.sum(1) / mask.sum(1).clamp(min=1)

    def answer_logprob(self, images: torch.Tensor | None, questions: list[str], answers: list[str]) -> torch.Tensor:
        """(N,) summed log-probability of each answer: what NPO compares against the reference."""
        return self.token_logprobs(images, questions, answers)[0].sum(1)

    @torch.inference_mode()
    def generate(self, images: torch.Tensor | None, questions: list[str], max_new_tokens: int = 8) -> list[str]:
        """Greedy answers, left-padded batch through the model's own `generate`."""
        with_image = images is not None
        prompts = [self.prompt_ids(q, with_image) for q in questions]
        width = max(len(p) for p in prompts)
        pad = self.tokenizer.pad_token_id
        ids = torch.full((len(prompts), width), pad, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, p in enumerate(prompts):
            ids[i, width - len(p) :] = torch.tensor(p)
            mask[i, width - len(p) :] = 1
        kwargs: dict[str, Any] = {"input_ids": ids.to(self.device), "attention_mask": mask.to(self.device)}
        if with_image:
            kwargs.update(self.image_inputs(kwargs["input_ids"], images.to(self.device)))
        out = self.model.generate(
            **kwargs,
            max_new_tokens=max_new_tokens,
            do_sample=False,
            pad_token_id=pad,
            eos_token_id=self.tokenizer.eos_token_id,
        )
        return [s.strip() for s in self.tokenizer.batch_decode(out[:, width:], skip_special_tokens=True)]

    def image_inputs(self, input_ids: torch.Tensor, images: torch.Tensor) -> dict[str, torch.Tensor]:
        """What carries the images into the model's own forward and `generate`; families that need more
        than `pixel_values` (Qwen2-VL's grid and token types) override this."""
        return {"pixel_values": self.pixel_values(images)}

    def image_embeddings(self, images: torch.Tensor) -> torch.Tensor:
        """(N, D) pooled embedding: vision tower -> projector -> mean over image tokens."""
        return self.image_features(self.pixel_values(images.to(self.device))).mean(1)


def per_row_mean(values: torch.Tensor, rows: torch.Tensor, n: int) -> torch.Tensor:
    """(K,) per-token values with their (K,) row indices -> (n,) mean per row."""
    total = torch.zeros(n, device=values.device, dtype=values.dtype).index_add(0, rows, values)
    count = torch.zeros(n, device=values.device, dtype=values.dtype).index_add(0, rows, torch.ones_like(values))
    return total / count.clamp(min=1)


def answer_token_kl_sum(
    reference_logits: torch.Tensor, logits: torch.Tensor, labels: torch.Tensor
) -> tuple[torch.Tensor, int]:
    """Summed KL(p_ref || p) over answer-predicting positions and their count; both (N, T, V) logits over the
    same right-padded batch, `labels` (N, T) with IGNORE off the answer. (The sum and count let data-parallel
    ranks normalise over the whole batch.) Here, below both users: the attack's retain term and the unlearning's
    KL to the reference."""
    mask = (labels[:, 1:] != IGNORE).unsqueeze(-1)
    logp = F.log_softmax(reference_logits[:, :-1].float(), -1)
    logq = F.log_softmax(logits[:, :-1].float(), -1)
    return (logp.exp() * (logp - logq) * mask).sum(), int(mask.sum())


def _answer_logprobs(logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    targets = labels[:, 1:]
    mask = targets != IGNORE
    logp = -F.cross_entropy(logits[:, :-1].float().transpose(1, 2), targets.clamp(min=0), reduction="none")
    return logp * mask, mask


ADAPTERS: Registry[VisionLanguageAdapter] = Registry("model adapter")
