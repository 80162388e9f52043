import pytest
import torch

from sua_demo.core.errors import SuaError
from sua_demo.models import load_adapter


def test_pixel_path_matches_processor(micro_adapter, micro_bench):
    bench, _ = micro_bench
    photos = [bench.people[0].photos[0], bench.people[1].photos[1].resize((100, 140))]
    expected = micro_adapter.processor.image_processor(photos, return_tensors="pt")["pixel_values"]
    x = micro_adapter.prepare_images(photos)
    assert x.shape == (2, 3, micro_adapter.image_size, micro_adapter.image_size)
    assert 0 <= x.min() and x.max() <= 1
    torch.testing.assert_close(micro_adapter.pixel_values(x), expected, atol=1e-5, rtol=1e-5)


def test_cached_prompt_ids_match_processor(micro_adapter, micro_bench):
    bench, _ = micro_bench
    q = bench.items([bench.people[0].id], modalities=("image",))[0].question
    text = micro_adapter.prompt_text(q, with_image=True)
    ids = micro_adapter.processor(text=[text], images=[bench.people[0].photos[0]], return_tensors="pt")["input_ids"][0]
    assert tuple(ids.tolist()) == micro_adapter.prompt_ids(q, True)
    assert tuple(micro_adapter.tokenizer(micro_adapter.prompt_text(q, False))["input_ids"]) == micro_adapter.prompt_ids(
        q, False
    )


def test_answer_loss_reaches_pixels_and_generate_runs(micro_adapter, micro_bench):
    bench, _ = micro_bench
    x = micro_adapter.prepare_images([p.photos[0] for p in bench.people[:3]]).requires_grad_(True)
    q = ["What is the name of the person in the image?"] * 3
    loss = micro_adapter.answer_nll(x, q, [p.name for p in bench.people[:3]])
    assert loss.shape == (3,) and torch.isfinite(loss).all()
    loss.sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    answers = micro_adapter.generate(x.detach(), q, max_new_tokens=3)
    assert len(answers) == 3 and all(isinstance(a, str) for a in answers)
    emb = micro_adapter.image_embeddings(x.detach())
    assert emb.shape == (3, micro_adapter.model.config.text_config.hidden_size)


def test_text_only_loss(micro_adapter):
    loss = micro_adapter.answer_nll(None, ["Where was Aldo Farrow born?"], ["Glenmere"])
    assert loss.shape == (1,) and torch.isfinite(loss).all()


def test_saves_and_reloads_through_auto_classes_offline(micro_adapter, micro_bench, tmp_path):
    from transformers import AutoModelForImageTextToText, AutoProcessor

    bench, cfg = micro_bench
    micro_adapter.model.save_pretrained(tmp_path)
    micro_adapter.processor.save_pretrained(tmp_path)
    model = AutoModelForImageTextToText.from_pretrained(tmp_path)
    processor = AutoProcessor.from_pretrained(tmp_path)
    assert type(model).__name__ == "LlavaForConditionalGeneration" and type(processor).__name__ == "LlavaProcessor"
    text = micro_adapter.prompt_text("Where was this person born?", True)
    inputs = processor(text=[text], images=[bench.people[0].photos[0]], return_tensors="pt")
    with torch.no_grad():
        torch.testing.assert_close(model(**inputs).logits, micro_adapter.model(**inputs).logits)
    again = load_adapter(tmp_path)
    assert again.prompt_ids("Where was this person born?", True) == micro_adapter.prompt_ids(
        "Where was this person born?", True
    )


def test_load_errors_are_one_clear_line(tmp_path):
    with pytest.raises(SuaError, match="no model folder"):
        load_adapter(tmp_path / "nope")
    with pytest.raises(SuaError, match="no config.json"):
        load_adapter(tmp_path)
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(SuaError, match="could not load"):
        load_adapter(tmp_path)


def test_corrupt_weights_are_reported(micro_adapter, tmp_path):
    micro_adapter.model.save_pretrained(tmp_path)
    micro_adapter.processor.save_pretrained(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"\x00" * 64)
    with pytest.raises(SuaError, match="could not load"):
        load_adapter(tmp_path)


def test_one_pass_logits_match_the_models_own_forward(micro_adapter, micro_bench):
    """The attack's single vision pass (features scattered into inputs_embeds) equals model(pixel_values=...)."""
    bench, _ = micro_bench
    x = micro_adapter.prepare_images([p.photos[0] for p in bench.people[:2]])
    q, a = ["Where was this person born?"] * 2, ["Glenmere", "Aldmoor"]
    batch = micro_adapter.encode_batch(True, q, a)
    with torch.no_grad():
        ours = micro_adapter.logits(batch, x)
        ref = micro_adapter.model(
            input_ids=batch["input_ids"],
            attention_mask=batch["attention_mask"],
            pixel_values=micro_adapter.pixel_values(x),
        ).logits
        torch.testing.assert_close(ours, ref, atol=1e-5, rtol=1e-4)


def test_an_unsupported_family_is_refused_before_any_weights_load(tmp_path):
    """config.json is read first: the message lists the model types there are adapters for, and a folder with no
    weights at all is refused for its type, not for its missing weights."""
    import json

    import pytest

    from sua_demo.core.errors import SuaError
    from sua_demo.models import load_adapter

    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    with pytest.raises(SuaError, match="model type 'bert' is not supported; supported model types: .*llava"):
        load_adapter(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "paligemma"}))
    with pytest.raises(SuaError, match="'paligemma' is not supported \\(PaliGemma is a prefix-LM.*llava"):
        load_adapter(tmp_path)


def test_answer_logprobs_equal_the_full_forward_through_a_lora_wrapper_and_after_it(micro_bench, micro_model_cfg):
    """`answer_logprobs` runs the last block's MLP and the vocabulary projection at answer-predicting positions only
    (models/answer_only.py): its values are the log-softmax of the model's own full forward there. Checked on a
    fresh model first used inside peft's LoRA wrapper, then unwrapped (Your face's teaching): hooks installed once
    per wrapper gathered the kept rows twice on the unwrapped model and failed."""
    from peft import LoraConfig, get_peft_model

    from sua_demo.models.base import IGNORE
    from sua_demo.training.finetune import build_tiny

    bench, _ = micro_bench
    adapter = build_tiny(bench, micro_model_cfg)
    x = adapter.prepare_images([p.photos[0] for p in bench.people[:2]])
    q, a = ["Where was this person born?", "What is this person's job?"], ["Glenmere", "a baker"]

    def check() -> None:
        batch = adapter.encode_batch(True, q, a)
        with torch.no_grad():
            ours, mask = adapter.answer_logprobs(x, q, a)
            logits = adapter.model(
                input_ids=batch["input_ids"],
                attention_mask=batch["attention_mask"],
                pixel_values=adapter.pixel_values(x),
            ).logits[:, :-1]
        targets = batch["labels"][:, 1:]
        full = logits.log_softmax(-1).gather(-1, targets.clamp(min=0).unsqueeze(-1)).squeeze(-1)
        assert torch.equal(mask, targets != IGNORE) and mask.any()
        torch.testing.assert_close(ours, full * mask, atol=1e-5, rtol=1e-4)

    lora = LoraConfig(r=2, lora_alpha=4, target_modules=adapter.lora_pattern(["q_proj", "up_proj"]))
    adapter.model = get_peft_model(adapter.model, lora)
    check()
    adapter.model = adapter.model.merge_and_unload()
    check()
