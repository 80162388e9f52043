"""Which float precision is fast on this machine: one rule for fine-tuning, unlearning, the attack and the app.

bf16 autocast pays only where bf16 matmuls are native. On a CPU with AMX or AVX512-BF16 they run about twice
as fast as fp32; on one without (an AVX2-only EPYC, say) oneDNN emulates them and a 1024^2 bf16 matmul ran at
1 GFLOP/s against 118 GFLOP/s in fp32, so a bf16 attack step was 13x slower than the fp32 one. "auto"
therefore asks the hardware, and on a CPU also times a short matmul in both dtypes (once per process).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from functools import lru_cache

import torch

from sua_demo.core.errors import BadValueError

log = logging.getLogger(__name__)
CHOICES = ("auto", "bf16", "fp32")
MIN_SPEEDUP = 1.3  # bf16 must beat fp32 by this much to be worth its rounding


@dataclass(frozen=True)
class Precision:
    """What a run computes in, and why (written into every noise's and checkpoint's metadata)."""

    name: str  # "bf16" or "fp32" (autocast or not); the weights' dtype where they were loaded in half precision
    reason: str

    @property
    def dtype(self) -> torch.dtype | None:
        """The autocast dtype; None: plain fp32, no autocast."""
        return torch.bfloat16 if self.name == "bf16" else None

    def autocast(self, device: torch.device | str) -> AbstractContextManager:
        kind = torch.device(device).type
        return torch.autocast(kind, dtype=torch.bfloat16) if self.dtype is not None else nullcontext()

    def as_meta(self) -> dict[str, str]:
        return {"precision": self.name, "precision_reason": self.reason}


def cpu_bf16_native() -> bool:
    """oneDNN's own answer: does this CPU have bf16 instructions (AVX512-BF16 or AMX)?"""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def _time(dtype: torch.dtype, n: int = 512, repeats: int = 4) -> float:
    a = torch.randn(n, n).to(dtype)
    b = torch.randn(n, n).to(dtype)
    torch.mm(a, b)  # warm-up: the first call picks kernels
    t0 = time.perf_counter()
    for _ in range(repeats):
        torch.mm(a, b)
    return time.perf_counter() - t0


def matmul_speedup() -> float:
    """How many times faster a bf16 matmul runs than an fp32 one here (~50 ms; best of two tries each)."""
    fp32 = min(_time(torch.float32) for _ in range(2))
    bf16 = min(_time(torch.bfloat16) for _ in range(2))
    return fp32 / max(bf16, 1e-9)


@lru_cache(maxsize=1)
def _cpu_auto() -> Precision:
    return decide_cpu(cpu_bf16_native, matmul_speedup)


def decide_cpu(native: Callable[[], bool], speedup: Callable[[], float]) -> Precision:
    """The CPU rule, with the hardware questions passed in (tests inject them)."""
    if not native():
        return Precision("fp32", "CPU without native bf16 (oneDNN), where bf16 matmuls are emulated and slow")
    ratio = speedup()
    if ratio < MIN_SPEEDUP:
        return Precision("fp32", f"bf16 matmul only {ratio:.2f}x fp32 on this CPU (< {MIN_SPEEDUP}x)")
    return Precision("bf16", f"native bf16 CPU, bf16 matmul {ratio:.2f}x fp32")


_logged: set[tuple[str, str]] = set()


def resolve(precision: str, device: torch.device | str = "cpu", weights: torch.dtype = torch.float32) -> Precision:
    """ "auto", "bf16" or "fp32" -> what to compute in on `device`; "auto" is logged once per process.

    Weights already loaded in half precision (`--dtype float16 / bfloat16`) run in their own dtype: autocast
    to bf16 over fp16 weights fails on CPU (mixed half types) and would round them twice on a GPU."""
    if precision not in CHOICES:
        raise BadValueError(f"precision must be one of {', '.join(CHOICES)}, got {precision!r}")
    kind = torch.device(device).type
    if weights in (torch.float16, torch.bfloat16):  # before "fp32": half weights do not compute in fp32
        name = str(weights).removeprefix("torch.")
        return Precision(name, f"weights loaded in {name}: computed in that dtype, no autocast")
    if precision == "fp32":
        return Precision("fp32", "asked for fp32")
    if kind == "cuda" and not torch.cuda.is_bf16_supported():
        if precision == "bf16":
            raise BadValueError("this GPU has no bf16; use precision 'fp32'")
        return Precision("fp32", "GPU without bf16")
    if precision == "bf16":
        return Precision("bf16", "asked for bf16")
    choice = Precision("bf16", "GPU with bf16") if kind == "cuda" else _cpu_auto()
    if (kind, choice.name) not in _logged:
        _logged.add((kind, choice.name))
        log.info("precision auto -> %s on %s: %s", choice.name, kind, choice.reason)
    return choice
