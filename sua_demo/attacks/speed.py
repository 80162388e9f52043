"""How the attack loop runs fast, kept apart from what it computes: precision, kernels, threads, compile.

Every setting here changes speed, never the objective; `attack_mode` undoes them all on exit, because the
same adapter goes on to evaluation. Figures behind the defaults: benchmarks/attack_speed.py.
"""

from __future__ import annotations

import os
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch.nn.functional as F


def default_threads() -> int:
    """Torch's own choice (one thread per core) for one process; the cores shared out among the processes
    a launcher started on this machine, or they would oversubscribe the cores and each run slower."""
    local = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    return max(1, (os.cpu_count() or 1) // local) if local > 1 else torch.get_num_threads()


def _patch_linear(self: torch.nn.Conv2d, x: torch.Tensor) -> torch.Tensor:
    """A patchify convolution (kernel == stride, no padding) as one matrix product over unfolded patches."""
    p, q = self.kernel_size
    n, c, h, w = x.shape
    x = x[..., : h - h % p, : w - w % q]  # what the strided convolution would drop
    gh, gw = h // p, w // q
    patches = x.reshape(n, c, gh, p, gw, q).permute(0, 2, 4, 1, 3, 5).reshape(n, gh * gw, c * p * q)
    out = F.linear(patches, self.weight.reshape(self.out_channels, -1), self.bias)
    return out.transpose(1, 2).reshape(n, self.out_channels, gh, gw)


def _patchify_convs(model: torch.nn.Module) -> list[torch.nn.Conv2d]:
    """Vision towers embed patches with a Conv2d whose input-gradient kernel is slow on CPU (as slow as the
    tower's matmuls); the same weights as a matmul give the same numbers at a fraction of the time."""
    found = []
    for m in model.modules():
        if (
            type(m) is torch.nn.Conv2d
            and m.kernel_size == m.stride
            and m.padding == (0, 0)
            and m.dilation == (1, 1)
            and m.groups == 1
        ):
            m.forward = types.MethodType(_patch_linear, m)  # type: ignore[method-assign]
            found.append(m)
    return found


def _identity(self: torch.nn.Module, hidden_states: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
    return hidden_states


def _skip(layers: list[torch.nn.Module]) -> list[torch.nn.Module]:
    """Unread layers pass their input through (capture hooks and the list's length stay as they are)."""
    for m in layers:
        m.forward = types.MethodType(_identity, m)  # type: ignore[method-assign]
    return layers


# Eager attention beats the fused CPU kernel on short sequences and loses on long ones. fp32, 2 threads, AMD EPYC
# (AVX2), forward + input backward at batch 32, 4 heads of 32: eager/SDPA 0.88-1.07 at 17-64 keys, 1.25 at 128,
# 2.8 at 256; in the whole IDK step, eager was 4-12 % faster (benchmarks/README.md). Past this many image tokens the
# fused kernel stays (LLaVA-1.5 has 577, where eager would also keep an L x L matrix per head for the backward).
EAGER_MAX_IMAGE_TOKENS = 64


def eager_attention_pays(adapter: Any, device: torch.device, dtype: torch.dtype | None) -> bool:
    """On CPU: always in half precision (the fused kernel's bf16 backward was a third of the step), and in fp32
    where the model's sequences are short (the count includes a class token)."""
    if device.type != "cpu" or adapter.attention != "sdpa":
        return False
    tokens = adapter.vision_tokens()
    return dtype is not None or (tokens is not None and tokens <= EAGER_MAX_IMAGE_TOKENS)


@contextmanager
def attack_mode(
    adapter: Any, device: torch.device, dtype: torch.dtype | None, threads: int = 0, compile: bool = False
) -> Iterator[None]:
    """Frozen eval-mode model with the fast kernels for this device and dtype, restored on exit.

    What is family knowledge the adapter says (`models/`): the vision layers nobody reads are skipped
    (`adapter.unread_vision_layers()`); on CPU, eager attention where it pays (`eager_attention_pays`, from
    `adapter.vision_tokens()`). `compile` (opt-in) wraps the adapter's towers in torch.compile; a platform without
    a working compiler falls back to eager at its first call (`UniversalAttack._grad`).
    """
    model = adapter.model
    old_threads, old_attn = torch.get_num_threads(), adapter.attention
    torch.set_num_threads(threads or default_threads())
    model.eval()
    model.requires_grad_(False)
    patched = (_patchify_convs(model) if device.type == "cpu" else []) + _skip(adapter.unread_vision_layers())
    if eager_attention_pays(adapter, device, dtype):
        adapter.set_attention("eager")
    compiled = compile_towers(adapter.towers()) if compile else []
    try:
        yield
    finally:
        for m in patched:
            del m.forward
        uncompile(compiled)
        if old_attn is not None and adapter.attention != old_attn:
            adapter.set_attention(old_attn)
        torch.set_num_threads(old_threads)


def compile_towers(towers: list[torch.nn.Module]) -> list[torch.nn.Module]:
    """torch.compile the towers the adapter names, in place (dynamic shapes: batches vary in length)."""
    for t in towers:
        t.compile(dynamic=True)
    return towers


def uncompile(modules: list[torch.nn.Module]) -> None:
    for m in modules:
        m._compiled_call_impl = None
