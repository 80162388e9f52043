"""Noise files: delta as safetensors plus string metadata. Never pickle; every load is validated."""

from __future__ import annotations

import hashlib
import json
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save

from sua_demo.core.errors import SuaError
from sua_demo.core.io import atomic_write_bytes

log = logging.getLogger(__name__)
KEY = "delta"
EPS_SLACK = 1e-6  # float rounding of a projected delta
# A metadata value is a short JSON text (a run's settings are under 2 kB, 500 person IDs under 4 kB); a hostile
# file's value is read no further than these caps, so no parser recursion or giant-number conversion can start.
MAX_META_CHARS = 64_000
MAX_META_DEPTH = 16
MAX_DIGITS = 40  # a whole number's digits: far beyond any step, seed or ID, far below int()'s own limit


class _Refused(ValueError):
    """A metadata value that is not read: too long, too deeply nested, or a number with too many digits."""


@dataclass
class Noise:
    delta: torch.Tensor  # (3, H, W), pixel units in [0, 1] scale
    eps: float
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def resolution(self) -> int:
        return int(self.delta.shape[-1])

    def apply(self, x: torch.Tensor) -> torch.Tensor:
        """x + delta, clamped to valid pixels; delta is resized if the image is at another resolution."""
        d = self.delta.to(x.device, x.dtype)
        if d.shape[-2:] != x.shape[-2:]:
            d = torch.nn.functional.interpolate(d[None], size=x.shape[-2:], mode="bilinear", align_corners=False)[0]
        return (x + d).clamp(0, 1)


def _encode(meta: dict[str, Any]) -> dict[str, str]:
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in meta.items()}


def as_saved(meta: dict[str, Any]) -> dict[str, Any]:
    """`meta` as load_noise will return it once saved (tuples become lists, numeric strings numbers)."""
    return {k: _parse(v) for k, v in _encode(meta).items()}


def noise_bytes(noise: Noise) -> bytes:
    """The noise file's bytes, so that a caller can name a download by its content before writing it."""
    meta = _encode({**noise.meta, "eps": noise.eps})
    return save({KEY: noise.delta.detach().float().cpu().contiguous()}, metadata=meta)


def noise_digest(noise: Noise) -> str:
    """A hex digest of what the noise is (delta's values, eps and metadata), the same for equal noises even though
    two saves of one noise can differ in bytes: the file header lists its metadata in no fixed order."""
    h = hashlib.sha256(noise.delta.detach().float().cpu().contiguous().numpy().tobytes())
    h.update(json.dumps(_encode({**noise.meta, "eps": noise.eps}), sort_keys=True).encode())
    return h.hexdigest()


def save_noise(noise: Noise, path: str | Path) -> Path:
    atomic_write_bytes(Path(path), noise_bytes(noise))
    return Path(path)


def _depth(text: str) -> int:
    """How deeply JSON arrays and objects nest in `text` (brackets inside strings do not count); read before
    json.loads, whose recursion a 100000-deep value would exhaust."""
    depth = top = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            top = max(top, depth)
        elif ch in "]}":
            depth -= 1
    return top


def _whole(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise _Refused(text)
    return int(text)


def _real(text: str) -> float:
    if len(text) > MAX_DIGITS * 2:
        raise _Refused(text)
    return float(text)


def _parse(value: str) -> Any:
    """A metadata value as JSON where it is JSON, else the string itself; _Refused where it is not safe to read."""
    if len(value) > MAX_META_CHARS or _depth(value) > MAX_META_DEPTH:
        raise _Refused(value[:40])
    try:
        return json.loads(value, parse_int=_whole, parse_float=_real)
    except _Refused:
        raise
    except json.JSONDecodeError:
        return value
    except (ValueError, RecursionError) as err:  # belt and braces: no parser message reaches a person
        raise _Refused(value[:40]) from err


def load_noise(path: str | Path, resolution: int | None = None) -> Noise:
    """Load and check shape, dtype, finiteness, range and eps; each failure says what is wrong."""
    path = Path(path)
    if path.is_dir():
        raise SuaError(f"{path} is a folder; name the noise file itself, e.g. {path / 'delta.safetensors'}")
    if not path.is_file():
        raise SuaError(f"no noise file at {path}")
    try:
        with safe_open(str(path), framework="pt") as f:
            keys = list(f.keys())
            raw_meta = f.metadata() or {}
            if KEY not in keys:
                shown = ", ".join(repr(k[:40]) for k in keys[:5]) or "no tensors"
                raise SuaError(f"{path.name} holds {shown}, not a '{KEY}' tensor; is it a SUA noise file?")
            delta = f.get_tensor(KEY)
    except SuaError:
        raise
    except (SafetensorError, OSError, ValueError, TypeError, RuntimeError) as err:
        log.debug("could not read %s: %s", path.name, err)  # the library's words, for whoever debugs
        raise SuaError(
            f"{path.name} is not a readable noise file (another format, truncated or corrupt); "
            "upload a .safetensors noise saved by SUA Lab or `sua attack`"
        ) from None
    meta = _read_meta(raw_meta, path.name)
    eps = _eps(meta, path.name)
    if delta.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        kind = str(delta.dtype).removeprefix("torch.")
        raise SuaError(f"noise must be a float tensor (float32, float16 or bfloat16), got {kind}")
    if delta.ndim != 3 or delta.shape[0] != 3 or delta.shape[1] != delta.shape[2]:
        raise SuaError(f"noise must have shape (3, S, S), got {tuple(delta.shape)}")
    if resolution is not None and delta.shape[-1] != resolution:
        raise SuaError(
            f"noise is {delta.shape[-1]} px but the model takes {resolution} px; optimise a noise for this model"
        )
    delta = delta.float()
    if not torch.isfinite(delta).all():
        raise SuaError("noise contains NaN or infinite values")
    if not (math.isfinite(eps) and 0 < eps <= 1):
        raise SuaError(f"noise eps must be in (0, 1], got {eps}")
    peak = float(delta.abs().max())
    if peak > eps + EPS_SLACK:
        raise SuaError(f"noise exceeds its own budget: max |delta| = {peak:.4f} > eps = {eps:.4f}")
    _check_meta(meta, path.name)
    return Noise(delta, eps, meta)


def _read_meta(raw: dict[str, str], name: str) -> dict[str, Any]:
    """Every metadata value parsed, or one line naming the first that is not safe to read."""
    meta: dict[str, Any] = {}
    for key, value in raw.items():
        try:
            meta[key] = _parse(value)
        except _Refused:
            raise SuaError(
                f"{name}: metadata {key[:40]!r} is too long, too deeply nested or holds a number with too many "
                "digits; save the noise again with SUA Lab or `sua attack`"
            ) from None
    return meta


def _eps(meta: dict[str, Any], name: str) -> float:
    """The noise budget: a real number (JSON `true` is not 1), popped from `meta`."""
    if "eps" not in meta:
        raise SuaError(f"{name} has no 'eps' in its metadata; cannot check the noise budget")
    eps = meta.pop("eps")
    if isinstance(eps, bool) or not isinstance(eps, (int, float)):
        raise SuaError(f"{name} has a non-numeric 'eps' in its metadata; cannot check the noise budget")
    try:
        return float(eps)
    except OverflowError:
        raise SuaError(f"{name} has an 'eps' far out of range in its metadata; eps must be in (0, 1]") from None


ID_LISTS = ("attacker_ids", "unseen_ids")
INTS = ("split_seed", "step")
MAX_ID = 10**6


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < MAX_ID


def _check_meta(meta: dict[str, Any], name: str) -> None:
    """The metadata the app and the protocol read (who the noise was fitted on) must be what it claims to be."""
    for key in ID_LISTS:
        if key in meta and not (isinstance(meta[key], list) and all(_is_int(v) for v in meta[key])):
            raise SuaError(
                f"{name}: metadata '{key}' must be a list of person IDs (whole numbers), not {str(meta[key])[:40]!r}"
            )
    for key in INTS:
        if key in meta and not _is_int(meta[key]):
            raise SuaError(f"{name}: metadata '{key}' must be a whole number, not {str(meta[key])[:40]!r}")
