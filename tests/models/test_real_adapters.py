"""The real model families (LLaVA-1.5 and -NeXT, Qwen2-VL, Idefics2/3, Gemma 3) on tiny random configs.

Each family must: turn [0, 1] pixels into exactly the processor's `pixel_values`, pass gradients to
delta, generate, let a 3-step SUA lower the loss, and reload through the Auto classes, with or
without a peft LoRA adapter on top.
"""

import json

import pytest
import torch
import torch.nn.functional as F
from PIL import Image

from sua_demo.attacks import ATTACKS, AttackConfig
from sua_demo.core.errors import SuaError
from sua_demo.models import ADAPTERS, VisionLanguageAdapter, answer_only, load_adapter
from sua_demo.models.examples import ImageBank, image_examples
from sua_demo.models.gemma3 import Gemma3Adapter
from sua_demo.models.idefics2 import Idefics2Adapter
from sua_demo.models.idefics3 import Idefics3Adapter
from sua_demo.models.llava_next import LlavaNextAdapter
from sua_demo.models.loading import ImageTextProcessor
from sua_demo.models.qwen2_vl import Qwen2VLAdapter
from sua_demo.models.tiny_llava import bench_corpus, build_tokenizer

FAMILIES = ADAPTERS.names()  # every registered adapter is built tiny and tested the same way
QUESTION = "Where was this person born?"
QWEN_TOKENS = ["<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]
QWEN_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>{% else %}{{ item['text'] }}"
    "{% endif %}{% endfor %}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
IDEFICS_TOKENS = ["<fake_token_around_image>", "<global-img>", "<end_of_utterance>", "<|im_start|>"]
IDEFICS_TEMPLATE = (
    "<|im_start|>{% for message in messages %}{{ message['role'] | capitalize }}:{% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}<image>{% else %}{{ item['text'] }}{% endif %}{% endfor %}<end_of_utterance>\n"
    "{% endfor %}{% if add_generation_prompt %}Assistant:{% endif %}"
)
TEXT = {"vocab_size": 0, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2}
HEADS = {"num_attention_heads": 2, "num_key_value_heads": 2, "max_position_embeddings": 512}


def _tokenizer(bench, extra):
    tok = build_tokenizer([*bench_corpus(bench), "user assistant User Assistant"])
    tok.add_special_tokens({"additional_special_tokens": extra})
    return tok


def _text_config(tok):
    ids = {"bos_token_id": tok.bos_token_id, "eos_token_id": tok.eos_token_id, "pad_token_id": tok.pad_token_id}
    return {**TEXT, **HEADS, **ids, "vocab_size": len(tok)}


def _tiny_qwen(bench):
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    tok = _tokenizer(bench, QWEN_TOKENS)
    tok.chat_template = QWEN_TEMPLATE
    image_processor = Qwen2VLImageProcessorPil(patch_size=8, merge_size=2, min_pixels=32 * 32, max_pixels=64 * 64)
    vision = {"depth": 1, "embed_dim": 32, "hidden_size": 64, "num_heads": 2, "patch_size": 8, "mlp_ratio": 2}
    rope = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [4, 6, 6]}  # sums to head_dim / 2
    config = Qwen2VLConfig(
        vision_config=vision,
        text_config={**_text_config(tok), "rope_parameters": rope},
        **{f"{k}_token_id": tok.convert_tokens_to_ids(f"<|{k}|>") for k in ("vision_start", "vision_end")},
        image_token_id=tok.convert_tokens_to_ids("<|image_pad|>"),
        video_token_id=tok.convert_tokens_to_ids("<|video_pad|>"),
    )
    torch.manual_seed(0)
    model = Qwen2VLForConditionalGeneration(config).eval()
    # Qwen2VLProcessor also holds a video processor, which needs torchvision (not installed): the fallback.
    return Qwen2VLAdapter(model, ImageTextProcessor(image_processor, tok, "<|image_pad|>"), source="tiny-qwen2-vl")


IDEFICS2_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] | capitalize }}:{% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}<image>{% else %}{{ item['text'] }}{% endif %}{% endfor %}<end_of_utterance>\n"
    "{% endfor %}{% if add_generation_prompt %}Assistant:{% endif %}"
)


def _tiny_idefics2(bench):
    from transformers import (
        Idefics2Config,
        Idefics2ForConditionalGeneration,
        Idefics2Processor,
        PreTrainedTokenizerFast,
    )
    from transformers.models.idefics2.image_processing_pil_idefics2 import Idefics2ImageProcessorPil

    base = _tokenizer(bench, ["<fake_token_around_image>", "<end_of_utterance>"])
    named = {"image_token": "<image>", "image_boundary_token": "<fake_token_around_image>"}
    tok = PreTrainedTokenizerFast(tokenizer_object=base.backend_tokenizer, bos_token="<s>", eos_token="</s>",
                                  unk_token="<unk>", pad_token="<pad>", extra_special_tokens=named)  # fmt: skip
    image_processor = Idefics2ImageProcessorPil(size={"shortest_edge": 64, "longest_edge": 128})
    processor = Idefics2Processor(image_processor, tok, image_seq_len=4, chat_template=IDEFICS2_TEMPLATE)
    vision = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2}
    perceiver = {"resampler_n_latents": 4, "resampler_depth": 1, "resampler_n_heads": 2, "resampler_head_dim": 16}
    config = Idefics2Config(
        vision_config={**vision, "image_size": 64, "patch_size": 16},
        perceiver_config={**perceiver, "hidden_size": 64, "num_key_value_heads": 1},
        text_config={**_text_config(tok), "model_type": "mistral"},
        image_token_id=processor.image_token_id,
    )
    torch.manual_seed(0)
    model = Idefics2ForConditionalGeneration(config).eval()
    return Idefics2Adapter(model, processor, source="tiny-idefics2")


GEMMA3_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<start_of_turn>{{ message['role'] }}\n"
    "{% for item in message['content'] %}{% if item['type'] == 'image' %}<start_of_image>{% else %}{{ item['text'] }}"
    "{% endif %}{% endfor %}<end_of_turn>\n{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)


def _tiny_gemma3(bench):
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration, Gemma3Processor, PreTrainedTokenizerFast
    from transformers.models.gemma3.image_processing_pil_gemma3 import Gemma3ImageProcessorPil

    marks = ["<start_of_image>", "<end_of_image>", "<image_soft_token>", "<start_of_turn>", "<end_of_turn>"]
    base = _tokenizer(bench, marks)
    named = {"image_token": "<image_soft_token>", "boi_token": "<start_of_image>", "eoi_token": "<end_of_image>"}
    tok = PreTrainedTokenizerFast(tokenizer_object=base.backend_tokenizer, bos_token="<s>", eos_token="</s>",
                                  unk_token="<unk>", pad_token="<pad>", extra_special_tokens=named)  # fmt: skip
    image_processor = Gemma3ImageProcessorPil(size={"height": 64, "width": 64})
    processor = Gemma3Processor(image_processor, tok, chat_template=GEMMA3_TEMPLATE, image_seq_length=4)
    vision = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2}
    config = Gemma3Config(
        text_config={**_text_config(tok), "head_dim": 32, "sliding_window": 64},
        vision_config={**vision, "image_size": 64, "patch_size": 16},
        mm_tokens_per_image=4,
        **{f"{k}_token_index": tok.convert_tokens_to_ids(named[f"{k}_token"]) for k in ("boi", "eoi")},
        image_token_index=tok.convert_tokens_to_ids("<image_soft_token>"),
    )
    torch.manual_seed(0)
    model = Gemma3ForConditionalGeneration(config).eval()
    with torch.no_grad():  # random init leaves the projector at zero: the image would reach nothing
        torch.nn.init.normal_(model.model.multi_modal_projector.mm_input_projection_weight, std=0.2)
    return Gemma3Adapter(model, processor, source="tiny-gemma3")


def _tiny_llava_next(bench):
    from transformers import LlavaNextConfig, LlavaNextForConditionalGeneration, LlavaNextProcessor
    from transformers.models.llava_next.image_processing_pil_llava_next import LlavaNextImageProcessorPil

    from sua_demo.models.tiny_llava import CHAT_TEMPLATE

    tok = build_tokenizer(bench_corpus(bench))
    pinpoints = [[64, 128], [128, 64], [128, 128]]  # as released: the adapter fixes one grid
    image_processor = LlavaNextImageProcessorPil(
        size={"shortest_edge": 64}, crop_size={"height": 64, "width": 64}, image_grid_pinpoints=pinpoints
    )
    processor = LlavaNextProcessor(image_processor=image_processor, tokenizer=tok, patch_size=16,
                                   vision_feature_select_strategy="default", chat_template=CHAT_TEMPLATE,
                                   num_additional_image_tokens=1)  # fmt: skip
    vision = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2}
    config = LlavaNextConfig(
        vision_config={**vision, "image_size": 64, "patch_size": 16, "model_type": "clip_vision_model"},
        text_config={**_text_config(tok), "model_type": "llama"},
        image_token_index=tok.convert_tokens_to_ids("<image>"),
        image_grid_pinpoints=pinpoints,
        vision_feature_layer=-1,
        vision_feature_select_strategy="default",
    )
    torch.manual_seed(0)
    model = LlavaNextForConditionalGeneration(config).eval()
    return LlavaNextAdapter(model, processor, source="tiny-llava-next")


def _tiny_idefics3(bench):
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration, Idefics3Processor
    from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil

    tok = _tokenizer(bench, IDEFICS_TOKENS)
    # Splitting stays on in the processor's config, as in the released checkpoints; the adapter turns it off.
    image_processor = Idefics3ImageProcessorPil(size={"longest_edge": 128}, max_image_size={"longest_edge": 64})
    processor = Idefics3Processor(image_processor, tok, image_seq_len=4, chat_template=IDEFICS_TEMPLATE)
    vision = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2}
    config = Idefics3Config(
        vision_config={**vision, "image_size": 64, "patch_size": 16},
        text_config={**_text_config(tok), "model_type": "llama"},
        scale_factor=2,
        image_token_id=processor.image_token_id,
        pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(0)
    model = Idefics3ForConditionalGeneration(config).eval()
    return Idefics3Adapter(model, processor, source="tiny-idefics3")


@pytest.fixture(scope="module", params=FAMILIES)
def family(request, micro_bench, micro_model_cfg):
    from dataclasses import replace

    from sua_demo.training.finetune import build_tiny

    bench = micro_bench[0]
    if request.param == "llava":  # llava-1.5's layout: penultimate CLIP layer, CLS token dropped
        return request.param, build_tiny(bench, replace(micro_model_cfg, vision_feature_layer=-2))
    builders = {"qwen2_vl": _tiny_qwen, "idefics3": _tiny_idefics3, "idefics2": _tiny_idefics2, "gemma3": _tiny_gemma3,
                "llava_next": _tiny_llava_next}  # fmt: skip
    return request.param, builders[request.param](bench)


def _reference_inputs(name, adapter, photos, text):
    """The processor's own encoding of the prompt and photos, as a user of the model would make it."""
    proc = adapter.processor
    if name == "qwen2_vl":  # fixed square, as the attack uses; the processor then keeps that size
        side = adapter.image_size
        out = dict(proc.image_processor([p.convert("RGB").resize((side, side), Image.BICUBIC) for p in photos]))
        n_tokens = int(out["image_grid_thw"][0].prod()) // proc.image_processor.merge_size**2
        ids = proc.tokenizer([text.replace(proc.image_token, proc.image_token * n_tokens)] * len(photos))["input_ids"]
        out["input_ids"] = torch.tensor(ids)
        out["mm_token_type_ids"] = (out["input_ids"] == adapter.image_token_id).int()
        return {k: torch.as_tensor(v) for k, v in out.items()}
    if name in ("idefics2", "llava_next"):  # a fixed square, as the attack uses; the processor then keeps it
        side = adapter.image_size
        photos = [p.convert("RGB").resize((side, side), Image.BICUBIC) for p in photos]
    kwargs = {"do_image_splitting": False} if name in ("idefics2", "idefics3") else {}
    return dict(proc(text=[text] * len(photos), images=[[p] for p in photos], return_tensors="pt", **kwargs))


def test_pixel_path_and_prompt_match_the_processor(family, micro_bench):
    name, adapter = family
    bench, _ = micro_bench
    photos = [bench.people[0].photos[0], bench.people[1].photos[1].resize((100, 140))]
    x = adapter.prepare_images(photos)
    assert x.shape == (2, 3, adapter.image_size, adapter.image_size) and 0 <= x.min() and x.max() <= 1
    ref = _reference_inputs(name, adapter, photos, adapter.prompt_text(QUESTION, True))
    torch.testing.assert_close(adapter.pixel_values(x), ref["pixel_values"].float(), atol=1e-5, rtol=1e-5)
    assert tuple(ref["input_ids"][0].tolist()) == adapter.prompt_ids(QUESTION, True)
    if name == "qwen2_vl":
        assert torch.equal(ref["image_grid_thw"], adapter.grid_thw(2))


def test_one_pass_logits_match_the_models_own_forward(family, micro_bench):
    """Features computed once and handed to the language model give the model's own logits (for Qwen2-VL
    this checks the M-RoPE positions built from the image grid)."""
    name, adapter = family
    bench, _ = micro_bench
    photos = [p.photos[0] for p in bench.people[:2]]
    batch = adapter.encode_batch(True, [QUESTION] * 2, ["Glenmere", "Aldmoor"])
    x = adapter.prepare_images(photos)
    with torch.no_grad():
        ours = adapter.logits(batch, x)
        pooled = adapter.image_embeddings(x)
        extra = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
        ref = adapter.model(**extra, **adapter.image_inputs(batch["input_ids"], x)).logits
    torch.testing.assert_close(ours, ref, atol=1e-5, rtol=1e-4)
    if name == "qwen2_vl":  # the shared inputs_embeds path alone would get the positions wrong
        with torch.no_grad():
            plain = VisionLanguageAdapter.lm_forward(adapter, batch, adapter.image_features(adapter.pixel_values(x)), 0)
        assert not torch.allclose(plain, ref, atol=1e-4)
    assert pooled.shape == (2, adapter.model.config.get_text_config().hidden_size)


def test_answer_only_projection_equals_the_full_logits(family, micro_bench):
    """The attack's NLL projects only answer-predicting positions onto the vocabulary, and runs the last
    block's MLP only there; on rows of mixed prompt and answer lengths it must equal the NLL from full
    logits, in value and in gradient."""
    _, adapter = family
    bench, _ = micro_bench
    assert answer_only.install(adapter.model)  # the last block's MLP runs at the kept positions only
    x = adapter.prepare_images([p.photos[0] for p in bench.people[:3]])
    questions = [QUESTION, "Which job does this person have? A. baker B. tailor C. pilot D. nurse", QUESTION]
    answers = ["Glenmere", "B", "Aldo Farrow of Glenmere"]
    delta = torch.zeros_like(x, requires_grad=True)
    feats = adapter.image_features(adapter.pixel_values((x + delta).clamp(0, 1)))
    sliced = nll_from_features(adapter, feats, questions, answers)
    (g_sliced,) = torch.autograd.grad(sliced.sum(), delta)
    full = adapter.answer_nll((x + delta).clamp(0, 1), questions, answers)
    (g_full,) = torch.autograd.grad(full.sum(), delta)
    torch.testing.assert_close(sliced, full, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(g_sliced, g_full, atol=1e-6, rtol=1e-4)


def test_gradients_reach_delta_and_generate_runs(family, micro_bench):
    _, adapter = family
    bench, _ = micro_bench
    x = adapter.prepare_images([p.photos[0] for p in bench.people[:3]])
    delta = torch.zeros(3, adapter.image_size, adapter.image_size, requires_grad=True)
    loss = adapter.answer_nll((x + delta).clamp(0, 1), [QUESTION] * 3, ["Glenmere"] * 3)
    loss.sum().backward()
    assert delta.grad is not None and delta.grad.abs().sum() > 0
    answers = adapter.generate(x, [QUESTION] * 3, max_new_tokens=3)
    assert len(answers) == 3 and all(isinstance(a, str) for a in answers)
    assert len(adapter.generate(None, [QUESTION], max_new_tokens=2)) == 1
    assert torch.isfinite(adapter.answer_nll(None, [QUESTION], ["Glenmere"])).all()


def test_three_step_sua_lowers_the_loss(family, micro_bench):
    _, adapter = family
    bench, _ = micro_bench
    bank = ImageBank(bench, adapter)
    examples = image_examples(bench, bench.forget_ids, "train", ("gen",))[:8]
    x = bank.get(examples)
    q, a = [e.item.question for e in examples], [e.item.answer for e in examples]
    with torch.no_grad():
        before = adapter.answer_nll(x, q, a).mean()
    cfg = AttackConfig(steps=3, batch_size=8, eot=False, optimizer="adam", adam_lr=0.03, stealth_weight=0.1)
    noise = ATTACKS.get("sua")(adapter, cfg).run(bank, examples, progress=False)
    with torch.no_grad():
        after = adapter.answer_nll(noise.apply(x), q, a).mean()
    assert noise.delta.shape == (3, adapter.image_size, adapter.image_size)
    assert after < before


def _save(adapter, folder, name):
    adapter.model.save_pretrained(folder)
    adapter.processor.save_pretrained(folder)
    if name == "qwen2_vl":  # as in the released checkpoints, which AutoProcessor maps to Qwen2VLProcessor
        path = folder / "preprocessor_config.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "processor_class": "Qwen2VLProcessor"}))


def test_saves_and_reloads_through_auto_classes_offline(family, micro_bench, tmp_path):
    name, adapter = family
    bench, _ = micro_bench
    _save(adapter, tmp_path, name)
    again = load_adapter(tmp_path)
    assert type(again) is type(adapter) and type(again.model) is type(adapter.model)
    assert again.prompt_ids(QUESTION, True) == adapter.prompt_ids(QUESTION, True)
    x = adapter.prepare_images([bench.people[0].photos[0]])
    torch.testing.assert_close(again.prepare_images([bench.people[0].photos[0]]), x)
    with torch.no_grad():
        want = adapter.answer_nll(x, [QUESTION], ["Glenmere"])
        torch.testing.assert_close(again.answer_nll(x, [QUESTION], ["Glenmere"]), want, atol=1e-5, rtol=1e-5)


def test_lora_adapter_folder_loads_on_its_base(family, micro_bench, tmp_path):
    """CLEAR / MLLMU-Bench release unlearned models as a peft adapter folder naming its base model."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForImageTextToText

    name, adapter = family
    bench, _ = micro_bench
    _save(adapter, tmp_path / "base", name)
    torch.manual_seed(1)
    lora = LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    peft_model = get_peft_model(AutoModelForImageTextToText.from_pretrained(tmp_path / "base"), lora).eval()
    peft_model.peft_config["default"].base_model_name_or_path = str(tmp_path / "base")
    peft_model.save_pretrained(tmp_path / "lora")
    loaded = load_adapter(tmp_path / "lora")
    x = adapter.prepare_images([bench.people[0].photos[0]])
    batch = adapter.encode_batch(True, [QUESTION], ["Glenmere"])
    with torch.no_grad():
        want = peft_model(**batch, **adapter.image_inputs(batch["input_ids"], x)).logits
        base = adapter.logits(batch, x)
        got = loaded.logits(batch, x)
    assert not torch.allclose(want, base, atol=1e-4)  # the adapter changes the model
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


def test_dtype_choice():
    from sua_demo.core.errors import SuaError
    from sua_demo.models.loading import resolve_dtype

    assert resolve_dtype("bfloat16") is torch.bfloat16 and resolve_dtype("float16") is torch.float16
    assert resolve_dtype("auto", "cpu") is torch.float32 and resolve_dtype(torch.float16) is torch.float16
    with pytest.raises(SuaError, match="auto"):
        resolve_dtype("int8")


def test_qwen2_5_vl_uses_the_same_adapter(micro_bench):
    """Qwen2.5-VL: same processor and token layout, a windowed vision tower; one-pass logits still match."""
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    bench, _ = micro_bench
    qwen2 = _tiny_qwen(bench)
    c = qwen2.model.config.to_dict()
    vision = {"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "patch_size": 8}
    vision |= {"out_hidden_size": 64, "window_size": 32, "fullatt_block_indexes": [1]}
    ids = {k: c[k] for k in ("image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id")}
    torch.manual_seed(0)
    config = Qwen2_5_VLConfig(vision_config=vision, text_config=c["text_config"], **ids)
    model = Qwen2_5_VLForConditionalGeneration(config)
    adapter = Qwen2VLAdapter(model.eval(), qwen2.processor)
    x = adapter.prepare_images([p.photos[0] for p in bench.people[:2]])
    batch = adapter.encode_batch(True, [QUESTION] * 2, ["Glenmere", "Aldmoor"])
    with torch.no_grad():
        ours = adapter.logits(batch, x)
        ref = model(**batch, **adapter.image_inputs(batch["input_ids"], x)).logits  # labels only add a loss
    torch.testing.assert_close(ours, ref, atol=1e-5, rtol=1e-4)
    delta = torch.zeros_like(x[0], requires_grad=True)
    adapter.answer_nll((x + delta).clamp(0, 1), [QUESTION] * 2, ["Glenmere"] * 2).sum().backward()
    assert delta.grad.abs().sum() > 0


def test_load_with_dtype_and_device_map(micro_adapter, tmp_path):
    micro_adapter.model.save_pretrained(tmp_path)
    micro_adapter.processor.save_pretrained(tmp_path)
    adapter = load_adapter(tmp_path, dtype="bfloat16", device_map="auto")  # accelerate places it (CPU here)
    assert adapter.model.dtype == torch.bfloat16 and adapter.device.type == "cpu"
    x = adapter.prepare_images([Image.new("RGB", (80, 60), "gray")])
    assert torch.isfinite(adapter.answer_nll(x, [QUESTION], ["Glenmere"])).all()


def test_the_family_names_its_towers_and_its_lora_targets(family):
    """Nothing outside models/ names a family's modules: the adapter says what to compile and where LoRA goes."""
    import re

    name, adapter = family
    towers = adapter.towers()
    assert towers == [adapter.language_model, adapter.vision_tower] and towers[0] is adapter.model.get_decoder(), name
    patch_embedding = next(m for m in adapter.model.modules() if isinstance(m, (torch.nn.Conv2d, torch.nn.Conv3d)))
    assert any(m is patch_embedding for m in adapter.vision_tower.modules()), name  # the tower, found by name
    pattern = re.compile(adapter.lora_pattern(["q_proj", "v_proj"]))
    hits = [n for n, _ in adapter.model.named_modules() if pattern.fullmatch(n)]
    vision_names = {n for n, m in adapter.model.named_modules() if any(m is t for t in towers[1].modules())}
    assert hits and not set(hits) & vision_names, (name, hits[:4])
    with_head = re.compile(adapter.lora_pattern(["q_proj", "lm_head"]))
    assert any(with_head.fullmatch(n) for n, _ in adapter.model.named_modules() if n.endswith("lm_head"))


def test_the_researchers_pipeline_runs_on_every_family(family, micro_bench, tmp_path):
    """A saved model of each family -> LoRA unlearning (a few steps) -> the recovery protocol with its controls
    -> a report: the chain a researcher runs on a real model, on a tiny random one."""
    from sua_demo.core.config import UnlearnConfig
    from sua_demo.eval.protocol import ProtocolConfig, run_protocol
    from sua_demo.unlearning.runner import unlearn

    name, adapter = family
    bench, bench_cfg = micro_bench
    _save(adapter, tmp_path / "vanilla", name)
    cfg = UnlearnConfig(method="grad_diff", lr=1e-3, max_steps=3, eval_every=3, batch_size=4, lora=True)
    result = unlearn(tmp_path / "vanilla", bench, bench_cfg, cfg, tmp_path / "unlearned", progress=False)
    assert result.steps == 3 and (tmp_path / "unlearned" / "adapter_model.safetensors").exists()
    pcfg = ProtocolConfig(
        attack=AttackConfig(steps=2, batch_size=4, precision="fp32"), splits=[0], retain_people=1, extras=False
    )
    report = run_protocol(tmp_path / "unlearned", tmp_path / "vanilla", bench, pcfg, tmp_path / "r", progress=False)
    assert "unlearned/c_unseen_heldout/gain_sua" in report["summary"] and (tmp_path / "r" / "report.md").exists()


def nll_from_features(adapter, features, questions, answers):
    """(N,) answer NLL from precomputed image features, the way the attack's losses read answer_token_logits."""
    from sua_demo.models.base import per_row_mean

    logits, targets, rows = adapter.answer_token_logits(features, questions, answers)
    return per_row_mean(F.cross_entropy(logits.float(), targets, reduction="none"), rows, len(questions))


def test_a_soft_prompt_runs_where_the_family_takes_embeddings_and_is_refused_where_not(family, micro_bench):
    """The soft-prompt hook: its vectors fill the placeholder slots (a zero prompt at an unknown-word slot is the
    zero embedding's logits); families whose forward needs more than embeddings say so instead of running wrong."""
    name, adapter = family
    bench, _ = micro_bench
    x = adapter.prepare_images([bench.people[0].photos[0]])
    question = f"{adapter.tokenizer.unk_token} {QUESTION}"
    dim = adapter.model.get_input_embeddings().weight.shape[1]
    if not adapter.takes_embeddings:
        with pytest.raises(SuaError, match="takes embeddings alone"):
            adapter.answer_logprobs(x, [question], ["Glenmere"], torch.zeros(1, dim))
        return
    with torch.no_grad():
        soft = torch.randn(1, dim)
        ids = adapter.encode_batch(True, [question], ["Glenmere"])["input_ids"]
        embeds = adapter.embed_inputs(ids, adapter.image_features(adapter.pixel_values(x)), soft)
        slot = (ids[0] == adapter.tokenizer.unk_token_id).nonzero()[0, 0]
        torch.testing.assert_close(embeds[0, slot], soft[0].to(embeds.dtype))
        with_soft = adapter.answer_logprobs(x, [question], ["Glenmere"], soft)[0]
        without = adapter.answer_logprobs(x, [question], ["Glenmere"])[0]
    assert not torch.allclose(with_soft, without)
    assert len(adapter.generate(x, [question], max_new_tokens=2, soft=soft)) == 1


def test_a_clone_changes_only_its_own_weights(family):
    """What the quantize and relearn probes rely on: the clone's weights are its own."""
    name, adapter = family
    twin = adapter.clone()
    before = adapter.model.get_input_embeddings().weight.clone()
    with torch.no_grad():
        twin.model.get_input_embeddings().weight.add_(1.0)
    assert torch.equal(adapter.model.get_input_embeddings().weight, before), name
    assert twin.processor is adapter.processor and twin.model is not adapter.model


def test_the_speed_path_works_for_every_family(family, micro_bench):
    """The attack's speed path (attacks/speed.py) asks the adapter for what is family knowledge: the vision layers
    nobody reads, the vision sequence's length, the attention switch. For every registered family, attack mode
    skips exactly the layers the projector does not read, gives the plain step's loss and gradient, and is undone."""
    from sua_demo.attacks.speed import attack_mode
    from tests.attacks.test_attacks import sua_step_inputs

    name, adapter = family
    attack, x, delta, examples, bank = sua_step_inputs(adapter, micro_bench)

    def step() -> tuple[torch.Tensor, float]:
        loss, _ = attack.objective(x, delta, examples, None, bank)
        return torch.autograd.grad(loss, delta)[0], float(loss.detach())

    config = adapter.model.config
    chosen = getattr(config, "vision_feature_layer", None)
    layers = getattr(config.vision_config, "num_hidden_layers", 0)
    unread = layers - chosen % (layers + 1) if isinstance(chosen, int) else 0  # hidden state i is layer i's output
    assert len(adapter.unread_vision_layers()) == unread, name
    attention, threads = adapter.attention, torch.get_num_threads()
    plain, loss = step()
    with attack_mode(adapter, torch.device("cpu"), None, threads=1):
        fast, fast_loss = step()
    torch.testing.assert_close(fast, plain, atol=1e-4 * float(plain.abs().max()) + 1e-9, rtol=1e-3)
    assert abs(fast_loss - loss) < 1e-4 * max(1.0, abs(loss)), name
    assert adapter.attention == attention and torch.get_num_threads() == threads
    assert not any("forward" in vars(m) for m in adapter.model.modules()), "every patch is undone"
    assert (name == "llava") == bool(unread), "the fixtures exercise a skipped layer (llava-1.5's layout)"
