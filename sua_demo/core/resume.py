"""A long build's state on disk, so that running the same command again goes on from its last checkpoint
(a session may be stopped at any moment). One file per build, written atomically: a stop mid-write leaves the
previous checkpoint whole.

The file is safetensors: the tensors (weights, optimiser moments, generator states) as tensors, everything else
(step, losses, a numpy generator's state, the optimiser's settings) as JSON in its header. Nothing is ever
unpickled, so a file planted beside a build can fail to parse, and is refused in one line, but cannot run code."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save as save_tensors

from sua_demo.core.errors import SuaError
from sua_demo.core.io import atomic_write_bytes
from sua_demo.core.machine import cpu_model

log = logging.getLogger(__name__)
STATE_KEY = "sua.state"  # the header entry that holds the JSON half


class Checkpointed:
    """`state()` is None on a fresh start, else what the last `save` stored; `save` also adds up the wall time
    the build has taken over all its runs, which `seconds` reports."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._started = time.time()
        self._loaded = self.state()
        self._before = float(self._loaded["seconds"]) if self._loaded else 0.0
        if self._loaded:
            log.info("%s: resuming at step %s (%.0f s so far)", self.path, self._loaded.get("step"), self._before)

    def state(self) -> dict[str, Any] | None:
        if not self.path.is_file():
            return None
        return read_state(self.path)

    @property
    def resumed(self) -> dict[str, Any] | None:
        return self._loaded

    @property
    def seconds(self) -> float:
        return self._before + time.time() - self._started

    def save(self, **state: Any) -> None:
        atomic_write_bytes(self.path, state_bytes({**state, "seconds": self.seconds, "cpu": cpu_model()}))


def state_bytes(state: dict[str, Any]) -> bytes:
    """`state` as one safetensors file: each tensor stored under a numbered key, the rest as JSON naming them."""
    tensors: dict[str, torch.Tensor] = {}
    skeleton = _encode(state, tensors)
    return save_tensors(tensors, metadata={STATE_KEY: json.dumps(skeleton)})


def read_state(path: Path) -> dict[str, Any]:
    """What `state_bytes` wrote, or a one-line SuaError for anything else (a pickle, a truncated file, JSON that is
    not ours): the way on is to delete the file and start that build afresh."""
    refused = SuaError(f"{path.name} is not a build state this version wrote; delete it to start that build afresh")
    try:
        with safe_open(str(path), framework="pt") as f:
            skeleton = json.loads((f.metadata() or {})[STATE_KEY])
            tensors = {key: f.get_tensor(key) for key in f.keys()}
        state = _decode(skeleton, tensors)
    except (SafetensorError, ValueError, KeyError, TypeError, RecursionError, OSError) as err:
        raise refused from err
    if not isinstance(state, dict):
        raise refused
    return state


def _encode(obj: Any, tensors: dict[str, torch.Tensor]) -> Any:
    """JSON-able skeleton of `obj`; tensors move to `tensors`. Dicts with non-string keys (an optimiser's state is
    keyed by parameter number) and tuples are tagged, so that they come back as they went."""
    if isinstance(obj, torch.Tensor):
        key = str(len(tensors))
        tensors[key] = obj.detach().to("cpu").clone().contiguous()
        return {"__tensor__": key}
    if isinstance(obj, dict):
        if all(isinstance(k, str) and not k.startswith("__") for k in obj):
            return {k: _encode(v, tensors) for k, v in obj.items()}
        return {"__items__": [[_encode(k, tensors), _encode(v, tensors)] for k, v in obj.items()]}
    if isinstance(obj, tuple):
        return {"__tuple__": [_encode(v, tensors) for v in obj]}
    if isinstance(obj, list):
        return [_encode(v, tensors) for v in obj]
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if hasattr(obj, "item"):  # a numpy scalar
        return obj.item()
    raise TypeError(f"a build state cannot hold a {type(obj).__name__}")


def _decode(obj: Any, tensors: dict[str, torch.Tensor]) -> Any:
    if isinstance(obj, list):
        return [_decode(v, tensors) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if set(obj) == {"__tensor__"}:
        return tensors[obj["__tensor__"]]
    if set(obj) == {"__tuple__"}:
        return tuple(_decode(v, tensors) for v in obj["__tuple__"])
    if set(obj) == {"__items__"}:
        return {_decode(k, tensors): _decode(v, tensors) for k, v in obj["__items__"]}
    return {k: _decode(v, tensors) for k, v in obj.items()}
