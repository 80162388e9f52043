"""Save and reload model folders atomically, in fp16 safetensors, with their config and metrics beside them."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch

from sua_demo.core.config import to_dict
from sua_demo.core.io import write_json

CONFIG_FILE = "sua_config.json"


def round_to_fp16(model: torch.nn.Module) -> None:
    """Round weights to what the fp16 file will hold, so metrics measured now are the shipped model's."""
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.half().float())


def save_model_dir(
    adapter_or_model: Any, processor: Any, out_dir: str | Path, configs: list[Any], extra: dict[str, Any] | None = None
) -> Path:
    """Write a complete model folder next to a temp name, then swap it in: readers never see half a folder."""
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}."))
    try:
        model = adapter_or_model
        original = next(model.parameters()).dtype
        model.to(torch.float16)
        try:
            model.save_pretrained(tmp)
        finally:
            model.to(original)
        if processor is not None:
            processor.save_pretrained(tmp)
        write_json(tmp / CONFIG_FILE, {"configs": [to_dict(c) for c in configs], **(extra or {})})
        old = out.with_name(f".{out.name}.old")
        if out.exists():
            out.rename(old)
        tmp.rename(out)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out
