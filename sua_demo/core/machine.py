"""What machine a figure was measured on: CPU model, cores, the ISA flags that decide bf16 speed, and oneDNN's
own answer. Every speed figure in this project names these."""

from __future__ import annotations

import os
import platform
from pathlib import Path

import torch

from sua_demo.core.precision import cpu_bf16_native

FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")


def _cpuinfo() -> dict[str, str]:
    path = Path("/proc/cpuinfo")
    out: dict[str, str] = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            key, _, value = line.partition(":")
            out.setdefault(key.strip(), value.strip())
    return out


def cpu_model() -> str:
    return _cpuinfo().get("model name") or platform.processor() or platform.machine()


def cpu_flags() -> dict[str, bool]:
    present = set(_cpuinfo().get("flags", "").split())
    return {f: f in present for f in FLAGS}


def describe() -> str:
    flags = ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in cpu_flags().items())
    return (
        f"CPU: {cpu_model()}, {os.cpu_count()} cores ({torch.get_num_threads()} torch threads); {flags}; "
        f"oneDNN native bf16: {cpu_bf16_native()}; torch {torch.__version__}"
    )
