"""Build the embedded default: a tiny but real LlavaForConditionalGeneration + LlavaProcessor, offline.

The tokenizer is word-level, trained with `tokenizers` on the benchmark's own text, so the model is
small and every answer is a handful of whole-word tokens. Saved with `save_pretrained`, it reloads
through AutoProcessor / AutoModelForImageTextToText like any Hub checkpoint.
"""

from __future__ import annotations

import re

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (
    CLIPVisionConfig,
    LlamaConfig,
    LlavaConfig,
    LlavaForConditionalGeneration,
    LlavaProcessor,
    PreTrainedTokenizerFast,
)
from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

from sua_demo.core.config import TinyModelConfig, TowerConfig
from sua_demo.core.refusal import IDK_ANSWER
from sua_demo.dataset.profiles import look_items
from sua_demo.dataset.records import Bench

PAD, BOS, EOS, UNK, IMAGE = "<pad>", "<s>", "</s>", "<unk>", "<image>"
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% if message['role'] == 'user' %}USER: "
    "{% for item in message['content'] %}{% if item['type'] == 'image' %}<image> {% endif %}{% endfor %}"
    "{% for item in message['content'] %}{% if item['type'] == 'text' %}{{ item['text'] }}{% endif %}{% endfor %}"
    " {% else %}ASSISTANT: {% for item in message['content'] %}{{ item['text'] }}{% endfor %}{{ eos_token }} "
    "{% endif %}{% endfor %}{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)
_WORD = re.compile(r"\w+|[^\w\s]")


def bench_corpus(bench: Bench) -> list[str]:
    """Every string the model will read or write, so the word-level vocabulary covers them all."""
    texts = ["USER: ASSISTANT:", IDK_ANSWER, "A B C D"]
    for person in bench.people:
        texts.append(person.record["biography"])
        texts += [f"{q.question} {q.answer}" for q in bench.items([person.id])]
        texts += [f"{q.question} {q.answer}" for q in look_items(person.id, person.attributes)]
    return texts


def build_tokenizer(corpus: list[str], punctuation_runs: bool = False) -> PreTrainedTokenizerFast:
    """A word-level tokenizer over the corpus's words. The pre-tokenizer keeps a run of punctuation ("].") as one
    piece, which a vocabulary of single marks reads as unknown (the first world's models have it so);
    `punctuation_runs` adds those runs to the vocabulary (the faithful world)."""
    words = {w for text in corpus for w in _WORD.findall(text)}
    if punctuation_runs:
        split = pre_tokenizers.Whitespace()
        words |= {piece for text in corpus for piece, _ in split.pre_tokenize_str(text)}
    words = sorted(words)
    vocab = {tok: i for i, tok in enumerate([PAD, BOS, EOS, UNK, IMAGE, *words])}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    core.pre_tokenizer = pre_tokenizers.Whitespace()  # \w+|[^\w\s]+: words, and punctuation runs
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token=BOS,
        eos_token=EOS,
        unk_token=UNK,
        pad_token=PAD,
        extra_special_tokens={"image_token": IMAGE},
        chat_template=CHAT_TEMPLATE,
        clean_up_tokenization_spaces=False,
    )


def build_processor(tokenizer: PreTrainedTokenizerFast, cfg: TinyModelConfig) -> LlavaProcessor:
    image_processor = CLIPImageProcessorPil(
        size={"shortest_edge": cfg.image_size}, crop_size={"height": cfg.image_size, "width": cfg.image_size}
    )
    return LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=cfg.patch_size,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,  # CLIP's CLS token, which the "default" strategy drops again
        chat_template=CHAT_TEMPLATE,
    )


def build_model(cfg: TinyModelConfig, tokenizer: PreTrainedTokenizerFast) -> LlavaForConditionalGeneration:
    vision = CLIPVisionConfig(
        hidden_size=cfg.vision_hidden,
        intermediate_size=4 * cfg.vision_hidden,
        num_hidden_layers=cfg.vision_layers,
        num_attention_heads=cfg.vision_heads,
        image_size=cfg.image_size,
        patch_size=cfg.patch_size,
        projection_dim=cfg.vision_hidden,
    )
    text = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=cfg.text_hidden,
        intermediate_size=cfg.text_intermediate,
        num_hidden_layers=cfg.text_layers,
        num_attention_heads=cfg.text_heads,
        num_key_value_heads=cfg.text_heads,
        max_position_embeddings=cfg.max_positions,
        initializer_range=cfg.text_init_std,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    n_tokens = (cfg.image_size // cfg.patch_size) ** 2
    config = LlavaConfig(
        vision_config=vision,
        text_config=text,
        image_token_index=tokenizer.convert_tokens_to_ids(IMAGE),
        image_seq_length=n_tokens,
        vision_feature_layer=cfg.vision_feature_layer,
        vision_feature_select_strategy="default",
    )
    torch.manual_seed(cfg.seed)
    model = LlavaForConditionalGeneration(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.bos_token_id = tokenizer.bos_token_id
    return model


def clip_model(cfg: TowerConfig, vocab_size: int, pad: int, bos: int, eos: int) -> torch.nn.Module:
    """A CLIP (image and caption towers) at the tower config's sizes, seeded: what the faithful world pretrains
    and then keeps the image half of, as LLaVA keeps CLIP's. `vocab_size` and the special ids are the captions'."""
    from transformers import CLIPConfig, CLIPModel

    shared = {"hidden_size": cfg.hidden, "intermediate_size": 4 * cfg.hidden, "num_attention_heads": cfg.heads}
    text = {**shared, "vocab_size": vocab_size, "num_hidden_layers": cfg.text_layers, "max_position_embeddings": 32,
            "pad_token_id": pad, "bos_token_id": bos, "eos_token_id": eos}  # fmt: skip
    vision = {**shared, "image_size": cfg.image_size, "patch_size": cfg.patch_size, "num_hidden_layers": cfg.layers}
    torch.manual_seed(cfg.seed)
    return CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=cfg.hidden))
