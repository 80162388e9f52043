"""Load any supported model (local folder or Hub id, optionally a peft LoRA adapter) behind an adapter."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import torch
from safetensors import SafetensorError

from sua_demo.errors import SuaError
from sua_demo.models.base import ADAPTERS, VisionLanguageAdapter

log = logging.getLogger(__name__)
LORA_CONFIG = "adapter_config.json"


def adapter_class(model_type: str) -> type[VisionLanguageAdapter]:
    for name in ADAPTERS.names():
        cls = ADAPTERS.get(name)
        if model_type in getattr(cls, "model_types", ()):
            return cls
    raise SuaError(f"model type {model_type!r} has no adapter; supported: {', '.join(ADAPTERS.names())}")


def _resolve_base(adapter_dir: Path) -> str:
    base = json.loads((adapter_dir / LORA_CONFIG).read_text()).get("base_model_name_or_path")
    if not base:
        raise SuaError(f"{adapter_dir / LORA_CONFIG} names no base model; set base_model_name_or_path")
    local = (adapter_dir / base).resolve()
    return str(local) if local.exists() else base


def load_adapter(
    source: str | Path,
    dtype: torch.dtype | None = None,
    device: str | None = None,
    device_map: str | None = None,
    trust_remote_code: bool = False,
    merge_lora: bool = True,
) -> VisionLanguageAdapter:
    """A folder with config.json, a folder with a peft adapter, or a Hub id (from the local cache offline)."""
    from transformers import AutoConfig, AutoModelForImageTextToText, AutoProcessor

    source = str(source)
    path = Path(source)
    looks_local = path.exists() or source.startswith((".", "/", "~")) or source.count("/") > 1
    if looks_local and not path.is_dir():
        raise SuaError(
            f"no model folder at {source}; pass a folder holding config.json, or a Hub id like llava-hf/llava-1.5-7b-hf"
        )
    lora_dir = path if (path / LORA_CONFIG).exists() else None
    base = _resolve_base(path) if lora_dir else source
    if path.is_dir() and not lora_dir and not (path / "config.json").exists():
        raise SuaError(f"{source} has no config.json; is it a model folder saved with save_pretrained?")
    try:
        config = AutoConfig.from_pretrained(base, trust_remote_code=trust_remote_code)
        processor = AutoProcessor.from_pretrained(base, trust_remote_code=trust_remote_code)
        model = AutoModelForImageTextToText.from_pretrained(
            base, dtype=dtype or torch.float32, device_map=device_map, trust_remote_code=trust_remote_code
        )
    except (OSError, ValueError, SafetensorError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise SuaError(
            f"could not load {base}: {first}. Offline, a Hub model must already be in the local cache; "
            "otherwise pass a local folder"
        ) from err
    if lora_dir is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, str(lora_dir))
        if merge_lora:
            model = model.merge_and_unload()
    if device and not device_map:
        model = model.to(device)
    model.eval()
    cls = adapter_class(config.model_type)
    log.info("loaded %s (%s) with %s", source, config.model_type, cls.__name__)
    return cls(model, processor, source=source)
