"""Load any supported model (local folder or Hub id, optionally a peft LoRA adapter) behind an adapter."""

from __future__ import annotations

import json
import logging
import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError

from sua_demo.core.errors import SuaError
from sua_demo.models.base import ADAPTERS, VisionLanguageAdapter
from sua_demo.models.shared_weights import whole_state

log = logging.getLogger(__name__)
LORA_CONFIG = "adapter_config.json"
LORA_WEIGHTS = "adapter_model.safetensors"
PICKLED = ("*.bin", "*.pt", "*.pth", "*.ckpt", "*.pkl")  # weight files whose loading unpickles, i.e. runs code
CONVERT = "convert it with save_pretrained(folder, safe_serialization=True) where you trust it"
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
DTYPE_CHOICES = ("auto", *DTYPES)


def resolve_dtype(name: str | torch.dtype | None, device: str | None = None) -> torch.dtype:
    """With "auto": bf16 on a GPU that has it (fp16 otherwise), float32 on CPU, where half precision is slow."""
    if isinstance(name, torch.dtype):
        return name
    if name in (None, "auto"):
        on_gpu = torch.cuda.is_available() and str(device).startswith(("cuda", "auto"))
        if not on_gpu:
            return torch.float32
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if name not in DTYPES:
        raise SuaError(f"dtype {name!r} is not one of {', '.join(DTYPE_CHOICES)}")
    return DTYPES[name]


@dataclass
class ImageTextProcessor:
    """An image processor and a tokenizer: all an adapter needs of a processor. Used when the model's own
    processor cannot be built here: Qwen2-VL's and SmolVLM's also hold a video processor, which needs torchvision."""

    image_processor: Any
    tokenizer: Any
    image_token: str
    chat_template: str | None = None

    def apply_chat_template(self, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
        return self.tokenizer.apply_chat_template(messages, chat_template=self.chat_template, **kwargs)

    def save_pretrained(self, path: str | Path) -> None:
        self.image_processor.save_pretrained(path)
        self.tokenizer.save_pretrained(path)

    @classmethod
    def from_pretrained(cls, source: str, image_token_id: int, **kwargs: Any) -> ImageTextProcessor:
        from transformers import AutoImageProcessor, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
        jinja, legacy = Path(source) / "chat_template.jinja", Path(source) / "chat_template.json"
        template = jinja.read_text() if jinja.is_file() else None  # else the tokenizer's own template
        if template is None and legacy.is_file():
            template = json.loads(legacy.read_text()).get("chat_template")
        return cls(
            AutoImageProcessor.from_pretrained(source, **kwargs),
            tokenizer,
            tokenizer.convert_ids_to_tokens(image_token_id),
            template,
        )


def _load_processor(base: str, config: Any, trust_remote_code: bool) -> Any:
    from transformers import AutoProcessor

    try:
        return AutoProcessor.from_pretrained(base, trust_remote_code=trust_remote_code)
    except (ImportError, AttributeError, TypeError) as err:
        # ImportError: an optional package of the full processor is missing (torchvision for Qwen2-VL's and
        # SmolVLM's video part, num2words for SmolVLM); the others: the same, seen through a dummy class.
        if not isinstance(err, ImportError) and "video" not in str(err).lower():
            raise
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        log.warning("%s: full processor unavailable (%s); using its image processor and tokenizer", base, first)
        return ImageTextProcessor.from_pretrained(base, config.image_token_id, trust_remote_code=trust_remote_code)


# Families a user is likely to try that have no adapter, and why (the message says it before any weights load).
WHY_NOT = {
    "paligemma": "PaliGemma is a prefix-LM (full attention over image and prompt, its own input format and "
    "suffix labels), which the chat-template adapters do not build",
}


def adapter_class(model_type: str) -> type[VisionLanguageAdapter]:
    for name in ADAPTERS.names():
        cls = ADAPTERS.get(name)
        if model_type in getattr(cls, "model_types", ()):
            return cls
    types = sorted({t for name in ADAPTERS.names() for t in getattr(ADAPTERS.get(name), "model_types", ())})
    why = f" ({WHY_NOT[model_type]})" if model_type in WHY_NOT else ""
    raise SuaError(f"model type {model_type!r} is not supported{why}; supported model types: {', '.join(types)}")


def _resolve_base(adapter_dir: Path) -> str:
    try:
        config = json.loads((adapter_dir / LORA_CONFIG).read_text())
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        raise SuaError(f"{adapter_dir / LORA_CONFIG} is not a readable JSON file; save the adapter again") from None
    base = config.get("base_model_name_or_path") if isinstance(config, dict) else None
    if not base or not isinstance(base, str):
        raise SuaError(f"{adapter_dir / LORA_CONFIG} names no base model; set base_model_name_or_path")
    local = (adapter_dir / base).resolve()
    return str(local) if local.exists() else base


def check_safetensors(folder: Path, lora: bool = False) -> None:
    """Only safetensors weights are ever loaded: a pickled .bin can run any code as it loads. A folder that holds
    none is refused here, in one line, before a byte of its weights is read."""
    found = (folder / LORA_WEIGHTS).is_file() if lora else any(folder.glob("*.safetensors"))
    if found:
        return
    pickled = sorted(p.name for pattern in PICKLED for p in folder.glob(pattern))
    what = f"only pickled weights ({', '.join(pickled[:3])})" if pickled else "no weights"
    name = LORA_WEIGHTS if lora else ".safetensors weights"
    raise SuaError(f"{folder} holds no {name} but {what}; only safetensors files are loaded, {CONVERT}")


def check_hub_id(source: str) -> None:
    """A name that is not a folder here must be a valid Hub id, said in our words before any download starts."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(source)
    except HFValidationError:
        raise SuaError(
            f"{source[:80]!r} is neither a model folder here nor a valid Hub id (org/name of letters, digits, "
            "'-', '_' and '.'); pass a folder holding config.json or a Hub id like llava-hf/llava-1.5-7b-hf"
        ) from None


def load_failure(err: BaseException, base: str, local: bool) -> SuaError:
    """One line for a load that failed inside the model libraries, in our words: theirs go to the log only."""
    from huggingface_hub.utils import HFValidationError

    chain: list[BaseException] = []
    cause: BaseException | None = err
    while cause is not None and len(chain) < 10:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    text = " ".join(str(c) for c in chain).lower()
    log.info("loading %s failed: %s", base, " <- ".join(f"{type(c).__name__}: {c}" for c in chain))
    if any(isinstance(c, HFValidationError) for c in chain) or "repo id must" in text:
        return SuaError(
            f"{base[:80]!r} is not a valid Hub id (org/name); pass a folder holding config.json or a Hub id"
        )
    if any(isinstance(c, pickle.UnpicklingError) for c in chain) or "weights only load failed" in text:
        return SuaError(f"{base} holds pickled weights, which could run code as they load; only safetensors files "
                        f"are loaded, {CONVERT}")  # fmt: skip
    if "safetensors" in text and ("no file named" in text or "does not appear to have" in text):
        return SuaError(f"{base} holds no .safetensors weights; only safetensors files are loaded, {CONVERT}")
    if any(isinstance(c, SafetensorError) for c in chain) or "header" in text:
        return SuaError(f"could not load {base}: its weights are truncated or corrupt; save or download it again")
    if "trust_remote_code" in text or "custom code" in text:
        return SuaError(
            f"{base} needs code of its own to load (trust_remote_code), which this app never runs; use a model "
            "that transformers supports as it is (LLaVA, LLaVA-NeXT, Qwen2-VL, Idefics, Gemma 3)"
        )
    if any(isinstance(c, json.JSONDecodeError) for c in chain):
        return SuaError(f"could not load {base}: one of its JSON files (config.json ...) is not valid JSON")
    if local:
        return SuaError(f"could not load {base}: a file it needs is missing, unreadable or corrupt; save it again")
    return SuaError(
        f"could not load {base}: it is not in the local Hub cache (offline) or not on the Hub; "
        "download it first, or pass a local folder"
    )


def check_device(device: str | None) -> None:
    """A device this torch can use, or one line saying why not (before any weights load)."""
    if not device or device == "auto":
        return
    try:
        dev = torch.device(device)
    except RuntimeError:
        raise SuaError(f"unknown device {device!r}; use cpu, cuda, cuda:1, mps ... or auto") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise SuaError(
            f"device {device!r}: no CUDA GPU is visible here (a CPU-only install, or no driver); use cpu or auto"
        )
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise SuaError(f"device {device!r}: there are {torch.cuda.device_count()} CUDA GPUs here")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise SuaError(f"device {device!r}: MPS is not available here; use cpu or auto")


DEVICE_ENV = "SUA_DEVICE"


def build_device() -> torch.device:
    """Where the builds compute and where a model loads when no device is named: $SUA_DEVICE, checked like
    --device ("auto": a CUDA GPU if one is visible), the CPU when unset. One variable rather than a flag on every
    stage, so every process of a study script computes where it says (benchmarks/gpu_scale.sh)."""
    name = os.environ.get(DEVICE_ENV, "").strip() or "cpu"
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    check_device(name)
    return torch.device(name)


def _where(source: str) -> tuple[Path | None, str]:
    """(the LoRA adapter folder or None, the base model's folder or Hub id), each checked before anything loads:
    a folder that is not a model, a Hub id that cannot be one, an adapter with pickled weights."""
    path = Path(source)
    looks_local = path.exists() or source.startswith((".", "/", "~")) or source.count("/") > 1
    if looks_local and not path.is_dir():
        raise SuaError(
            f"no model folder at {source}; pass a folder holding config.json, or a Hub id like llava-hf/llava-1.5-7b-hf"
        )
    if not looks_local and not path.is_dir():
        check_hub_id(source)
    lora_dir = path if (path / LORA_CONFIG).exists() else None
    if path.is_dir() and not lora_dir and not (path / "config.json").exists():
        raise SuaError(f"{source} has no config.json; is it a model folder saved with save_pretrained?")
    if lora_dir is not None:
        check_safetensors(lora_dir, lora=True)
    return lora_dir, _resolve_base(path) if lora_dir else source


def _load_model(
    base: str, base_local: bool, config: Any, dtype: torch.dtype, device_map: str | None, trust_remote_code: bool
) -> Any:
    """The weights: from a folder that borrows its unchanged tensors (models/shared_weights.py), or as transformers
    saved them."""
    from transformers import AutoModelForImageTextToText, GenerationConfig
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING

    state = whole_state(Path(base)) if base_local else None
    if state is None:
        return AutoModelForImageTextToText.from_pretrained(
            base,
            dtype=dtype,
            device_map=device_map,
            trust_remote_code=trust_remote_code,
            use_safetensors=True,  # a Hub repo with only pickled weights fails here rather than unpickling
        )
    model = MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING[type(config)].from_pretrained(
        None, config=config, state_dict=state, dtype=dtype, device_map=device_map
    )
    if (Path(base) / "generation_config.json").is_file():
        model.generation_config = GenerationConfig.from_pretrained(base)
    return model


def load_adapter(
    source: str | Path,
    dtype: str | torch.dtype | None = None,
    device: str | None = None,
    device_map: str | None = None,
    trust_remote_code: bool = False,
    merge_lora: bool = True,
) -> VisionLanguageAdapter:
    """A folder with config.json, a folder with a peft adapter, or a Hub id (from the local cache offline).

    dtype: a torch dtype or "auto" | "float32" | "bfloat16" | "float16" (None: float32, as before);
    device_map="auto" lets accelerate place a model too large for one device; remote code stays off
    unless `trust_remote_code` says otherwise, since it runs code from the model folder; no device named: where
    $SUA_DEVICE says (`build_device`), else the CPU."""
    from transformers import AutoConfig

    check_device(device)
    if device is None and device_map is None and os.environ.get(DEVICE_ENV):
        device = str(build_device())
    source = str(source)
    lora_dir, base = _where(source)
    base_local = Path(base).is_dir()
    if not base_local:
        check_hub_id(base)
    try:
        config = AutoConfig.from_pretrained(base, trust_remote_code=trust_remote_code)
        cls = adapter_class(config.model_type)  # before any weights load: a 7B model is refused in a second
        if base_local:
            check_safetensors(Path(base))  # before anything is read from a pickled file
        processor = _load_processor(base, config, trust_remote_code)
        torch_dtype = resolve_dtype(dtype or "float32", device or device_map)
        model = _load_model(base, base_local, config, torch_dtype, device_map, trust_remote_code)
    except SuaError:
        raise
    except (OSError, ValueError, SafetensorError, pickle.UnpicklingError) as err:
        raise load_failure(err, base, base_local) from err
    if lora_dir is not None:
        from peft import PeftModel

        try:
            model = PeftModel.from_pretrained(model, str(lora_dir))  # its safetensors file was checked above
        except (OSError, ValueError, KeyError, RuntimeError, SafetensorError, pickle.UnpicklingError) as err:
            raise load_failure(err, str(lora_dir), True) from err
        if merge_lora:
            model = model.merge_and_unload()
    if device and not device_map:
        model = model.to(device)
    model.eval()
    log.info("loaded %s (%s) with %s", source, config.model_type, cls.__name__)
    return cls(model, processor, source=source)
