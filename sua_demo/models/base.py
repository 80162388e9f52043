"""The adapter interface: everything the rest of SUA Lab needs from a multimodal LLM.

Images enter as float tensors in [0, 1], shape (N, 3, H, W), at the model's input resolution.
`pixel_values` turns them into the model's input *differentiably*, so attacks optimise in pixel
space for any model family. Text is tokenised once per distinct prompt and cached.
"""

from __future__ import annotations

import copy
import re
from abc import ABC, abstractmethod
from contextlib import nullcontext
from functools import cached_property, lru_cache
from typing import Any

import torch
import torch.nn.functional as F
from PIL import Image

from sua_demo.core.errors import SuaError
from sua_demo.core.refusal import DEFAULT as DEFAULT_REFUSALS
from sua_demo.core.refusal import Refusals
from sua_demo.core.registry import Registry
from sua_demo.models import answer_only

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
    projector_attr = "multi_modal_projector"  # and the projector from image features to the language model
    takes_embeddings = True  # False where the forward needs more than `inputs_embeds` to place an image
    refusals: Refusals = DEFAULT_REFUSALS  # how this model declines; set your own for a model that refuses otherwise

    def lm_forward(
        self, batch: dict[str, torch.Tensor], features: torch.Tensor | None, logits_to_keep: int | torch.Tensor
    ) -> torch.Tensor:
        """The model's forward with `features` in the image slots. Families whose forward needs more than
        `inputs_embeds` to place an image (Qwen2-VL's M-RoPE positions) override it and set `takes_embeddings`."""
        return self._forward_embeds(self.embed_inputs(batch["input_ids"], features), batch, logits_to_keep)

    def image_inputs(self, input_ids: torch.Tensor, images: torch.Tensor) -> dict[str, torch.Tensor]:
        """What carries the images into the model's own forward and `generate`; families that need more
        than `pixel_values` (Qwen2-VL's grid and token types) override this."""
        return {"pixel_values": self.pixel_values(images)}

    # -- the parts by name, and copies: what the audit's methods, LoRA and the speed policy reach for ------------
    @property
    def language_model(self) -> torch.nn.Module:
        return self.model.get_decoder()

    @property
    def vision_tower(self) -> torch.nn.Module | None:
        vision = getattr(getattr(self.model, "model", self.model), self.vision_attr, None)
        return vision if isinstance(vision, torch.nn.Module) else None

    @property
    def projector(self) -> torch.nn.Module | None:
        part = getattr(getattr(self.model, "model", self.model), self.projector_attr, None)
        return part if isinstance(part, torch.nn.Module) else None

    def freeze_vision_side(self) -> None:
        """Keep the vision tower and the projector as they are (LLaVA's frozen CLIP, MLLMU-Bench's untouched
        projector): only the language model learns or unlearns."""
        for part in (self.vision_tower, self.projector):
            if part is not None:
                part.requires_grad_(False)

    def towers(self) -> list[torch.nn.Module]:
        """The language model and the vision encoder: what `--compile` compiles."""
        return [m for m in (self.language_model, self.vision_tower) if m is not None]

    def decoder_layers(self) -> torch.nn.ModuleList:
        """The language model's transformer blocks, in order (RMU misdirects one of them). Every family we
        register keeps them at `language_model.layers`; one that does not says where."""
        return self.language_model.layers

    # -- what the attack's speed path asks of a family (attacks/speed.py) -------------------------------------
    def unread_vision_layers(self) -> list[torch.nn.Module]:
        """The vision encoder's layers after the hidden state the projector reads: they run and their output goes
        nowhere, so the attack's speed path lets them pass their input through. None by default (a projector that
        reads the last layer); a family whose projector reads an earlier one names them."""
        return []

    def vision_tokens(self) -> int | None:
        """Tokens the vision encoder makes of one image, class token included, where the config fixes the size
        (None where it does not): the speed path keeps the fused attention kernel for long sequences."""
        vision = getattr(getattr(self.model, "config", None), "vision_config", None)
        size, patch = getattr(vision, "image_size", None), getattr(vision, "patch_size", None)
        if not isinstance(size, int) or not isinstance(patch, int) or patch <= 0:
            return None
        return (size // patch) ** 2 + 1

    @property
    def attention(self) -> str | None:
        """The attention kernel the model runs ("sdpa", "eager", ...), as transformers names it."""
        return getattr(getattr(self.model, "config", None), "_attn_implementation", None)

    def set_attention(self, impl: str) -> None:
        """Switch the model's attention kernel (a model that cannot switch keeps its own)."""
        setter = getattr(self.model, "set_attn_implementation", None)
        if setter is not None:
            setter(impl)

    def language_prefix(self) -> str:
        """The qualified name of the language model's decoder inside the model (e.g. 'model.language_model')."""
        return next(name for name, m in self.model.named_modules() if m is self.language_model)

    def lora_pattern(self, targets: list[str]) -> str:
        """peft's target_modules regex: `targets` inside the language model only (as MLLMU-Bench does), plus the
        output head when asked for (IDK must emit words its head was never pushed towards)."""
        inner = "|".join(t for t in targets if t != "lm_head")
        lm = rf"{re.escape(self.language_prefix())}\..*\.({inner})"
        return rf"({lm}|lm_head)$" if "lm_head" in targets else rf"{lm}$"

    def clone(self) -> VisionLanguageAdapter:
        """This adapter over a deep copy of its model (processor and token caches shared): what a quantized or
        relearned copy changes is the copy's weights only."""
        twin = copy.copy(self)
        twin.model = copy.deepcopy(self.model)
        return twin

    def embed_inputs(
        self, input_ids: torch.Tensor, features: torch.Tensor | None, soft: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The language model's input embeddings: the tokens', with image `features` in the image slots and a soft
        prompt's (n, D) vectors in each row's n placeholder (unknown-word) slots."""
        if soft is not None and not self.takes_embeddings:
            family = type(self).__name__
            raise SuaError(f"a soft prompt needs a family whose forward takes embeddings alone, not {family}")
        embeds = self.model.get_input_embeddings()(input_ids)
        if features is not None:
            slots = (input_ids == self.image_token_id).unsqueeze(-1)
            embeds = embeds.masked_scatter(slots, features.to(embeds.dtype))
        if soft is not None:
            slots = (input_ids == self.tokenizer.unk_token_id).unsqueeze(-1)
            embeds = embeds.masked_scatter(slots, soft.repeat(input_ids.shape[0], 1).to(embeds.dtype))
        return embeds

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

    def _forward_embeds(
        self, embeds: torch.Tensor, batch: dict[str, torch.Tensor], logits_to_keep: int | torch.Tensor
    ) -> torch.Tensor:
        return self.model(
            inputs_embeds=embeds, attention_mask=batch["attention_mask"], logits_to_keep=logits_to_keep
        ).logits

    def _lm_logits(
        self,
        batch: dict[str, torch.Tensor],
        features: torch.Tensor | None,
        keep: torch.Tensor | None = None,
        soft: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The language model with image features already computed. `keep`, a (N, T) boolean mask, projects only
        those positions onto the vocabulary, (n_kept, V); the last block's MLP then runs only there too
        (models/answer_only.py), as nothing else is read."""
        pruned = keep is not None and answer_only.install(self.model)
        to_keep = 0 if keep is None else keep
        with answer_only.only_at(keep) if pruned else nullcontext():
            if soft is None:
                return self.lm_forward(batch, features, to_keep)
            return self._forward_embeds(self.embed_inputs(batch["input_ids"], features, soft), batch, to_keep)

    def _features(self, images: torch.Tensor) -> torch.Tensor:
        return self.image_features(self.pixel_values(images.to(self.device)))

    # -- the ways to run the model, named for what they return -------------------------------------------------
    def logits(self, batch: dict[str, torch.Tensor], images: torch.Tensor | None) -> torch.Tensor:
        """(N, T, V) logits of an `encode_batch` batch, with or without images: for what reads every position (a
        KL between two models' answers, membership scores); answer-only losses use `answer_logprobs`."""
        feats = None if images is None else self._features(images)
        return self._lm_logits(batch, feats)

    def answer_logprobs(
        self,
        images: torch.Tensor | None,
        questions: list[str],
        answers: list[str],
        soft: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-token log p(answer | image, question) and the answer-token mask, both (N, T): what every loss and
        score reduces (`answer_nll`, `answer_logprob`). Only the answer-predicting positions are projected onto
        the vocabulary and through the last block's MLP, as in the attack's `answer_token_logits`: the same values
        and gradients, and teaching and unlearning steps about a fifth cheaper on the embedded model."""
        batch = self.encode_batch(images is not None, questions, answers)
        feats = None if images is None else self._features(images)
        targets = batch["labels"][:, 1:]
        mask = targets != IGNORE
        inputs = {k: batch[k][:, :-1] for k in ("input_ids", "attention_mask")}  # the last column is only a label
        logits = self._lm_logits(inputs, feats, mask, soft)
        picked = -F.cross_entropy(logits.float(), targets[mask], reduction="none")
        return torch.zeros(mask.shape, dtype=picked.dtype, device=picked.device).masked_scatter(mask, picked), mask

    def answer_nll(self, images: torch.Tensor | None, questions: list[str], answers: list[str]) -> torch.Tensor:
        """(N,) mean NLL per answer token: the training and attack loss."""
        logp, mask = self.answer_logprobs(images, questions, answers)
        return -logp.sum(1) / mask.sum(1).clamp(min=1)

    def answer_logprob(self, images: torch.Tensor | None, questions: list[str], answers: list[str]) -> torch.Tensor:
        """(N,) summed log-probability of each answer: what NPO compares against the reference."""
        return self.answer_logprobs(images, questions, answers)[0].sum(1)

    def answer_token_logits(
        self, features: torch.Tensor, questions: list[str], answers: list[str]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The attack's fast path: logits at the answer-predicting positions only, given precomputed image
        features: (K, V) logits, (K,) target tokens and (K,) row indices, K the answer tokens of the batch."""
        batch = self.encode_batch(True, questions, answers)
        targets = batch["labels"][:, 1:]
        keep = targets != IGNORE  # the positions that predict an answer token
        # The last column is only ever a label, so the model reads one position fewer. Of the rest, only the
        # answer-predicting positions (a few in forty) go through the vocabulary projection (most of the
        # memory on a 32k-vocabulary model) and through the last block's MLP (a third of the tiny model's work).
        inputs = {k: batch[k][:, :-1] for k in ("input_ids", "attention_mask")}
        return self._lm_logits(inputs, features, keep), targets[keep], keep.nonzero()[:, 0]

    @torch.inference_mode()
    def generate(
        self,
        images: torch.Tensor | None,
        questions: list[str],
        max_new_tokens: int = 8,
        soft: torch.Tensor | None = None,
    ) -> list[str]:
        """Greedy answers, a left-padded batch through the model's own `generate` (from embeddings when a soft
        prompt fills the questions' placeholders)."""
        with_image = images is not None
        prompts = [self.prompt_ids(q, with_image) for q in questions]
        width = max(len(p) for p in prompts)
        pad = self.tokenizer.pad_token_id
        ids = torch.full((len(prompts), width), pad, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, p in enumerate(prompts):
            ids[i, width - len(p) :] = torch.tensor(p)
            mask[i, width - len(p) :] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        kwargs: dict[str, Any] = {"attention_mask": mask}
        if soft is not None:
            feats = self.image_features(self.pixel_values(images.to(self.device))) if with_image else None
            kwargs["inputs_embeds"] = self.embed_inputs(ids, feats, soft)
        else:
            kwargs["input_ids"] = ids
            if with_image:
                kwargs.update(self.image_inputs(ids, images.to(self.device)))
        out = self.model.generate(
            **kwargs,
            max_new_tokens=max_new_tokens,
            do_sample=False,
            pad_token_id=pad,
            eos_token_id=self.tokenizer.eos_token_id,
        )
        new = out if soft is not None else out[:, width:]  # from embeddings, generate returns the new tokens only
        return [s.strip() for s in self.tokenizer.batch_decode(new, skip_special_tokens=True)]

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


ADAPTERS: Registry[VisionLanguageAdapter] = Registry("model adapter")
