"""Noise files: delta as safetensors plus string metadata. Never pickle; every load is validated."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save

from sua_demo.errors import SuaError
from sua_demo.io import atomic_write_bytes

KEY = "delta"
EPS_SLACK = 1e-6  # float rounding of a projected delta


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


def save_noise(noise: Noise, path: str | Path) -> Path:
    meta = _encode({**noise.meta, "eps": noise.eps})
    data = save({KEY: noise.delta.detach().float().cpu().contiguous()}, metadata=meta)
    atomic_write_bytes(Path(path), data)
    return Path(path)


def _parse(value: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


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
                raise SuaError(
                    f"{path.name} holds {keys or 'no tensors'}, not a '{KEY}' tensor; is it a SUA noise file?"
                )
            delta = f.get_tensor(KEY)
    except SafetensorError as err:
        raise SuaError(f"{path.name} is not a valid safetensors file ({err}); noise files are .safetensors") from err
    meta = {k: _parse(v) for k, v in raw_meta.items()}
    if "eps" not in meta:
        raise SuaError(f"{path.name} has no 'eps' in its metadata; cannot check the noise budget")
    try:
        eps = float(meta.pop("eps"))
    except (TypeError, ValueError):
        raise SuaError(f"{path.name} has a non-numeric 'eps' in its metadata; cannot check the noise budget") from None
    if delta.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        raise SuaError(f"noise must be a float tensor, got {delta.dtype}")
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
