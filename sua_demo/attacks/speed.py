"""How the attack loop runs fast, kept apart from what it computes: precision, kernels, threads, compile.

Every setting here changes speed, never the objective; `attack_mode` undoes them all on exit, because the
same adapter goes on to evaluation. Figures behind the defaults: benchmarks/attack_speed.py.
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch.nn.functional as F

from sua_demo.threads import default_threads


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


def unread_vision_layers(model: Any) -> list[torch.nn.Module]:
    """The vision encoder's layers after the one whose hidden state the projector reads (LLaVA's
    `vision_feature_layer`, -2 by default): the tower still runs them, and their output goes nowhere. Four of the
    faithful tower's layers, one is unread (a quarter of its work); one of LLaVA-1.5's 24. None where the model
    names no feature layer (it reads the last one) or the encoder is not a plain list of layers."""
    config = getattr(model, "config", None)
    chosen = getattr(config, "vision_feature_layer", None)
    chosen = [chosen] if isinstance(chosen, int) else chosen
    n = getattr(getattr(config, "vision_config", None), "num_hidden_layers", None)
    if not chosen or not all(isinstance(i, int) for i in chosen) or not isinstance(n, int):
        return []
    read = max(i % (n + 1) for i in chosen)  # hidden state i is the output of layer i (0: the embeddings)
    suffixes = ("vision_tower.encoder.layers", "vision_tower.vision_model.encoder.layers")  # CLIP, either wrapping
    lists = [m for name, m in model.named_modules() if name.endswith(suffixes)]
    if len(lists) != 1 or not isinstance(lists[0], torch.nn.ModuleList) or len(lists[0]) != n:
        return []
    return list(lists[0])[read:]


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


def image_tokens(model: Any) -> int | None:
    """Tokens a fixed-size vision tower makes of one image (None where the size is not fixed in the config)."""
    vision = getattr(getattr(model, "config", None), "vision_config", None)
    size, patch = getattr(vision, "image_size", None), getattr(vision, "patch_size", None)
    if not isinstance(size, int) or not isinstance(patch, int) or patch <= 0:
        return None
    return (size // patch) ** 2 + 1


def eager_attention_pays(model: Any, device: torch.device, dtype: torch.dtype | None) -> bool:
    """On CPU: always in half precision (the fused kernel's bf16 backward was a third of the step), and in fp32
    where the model's sequences are short (the count includes a class token)."""
    if device.type != "cpu" or getattr(getattr(model, "config", None), "_attn_implementation", None) != "sdpa":
        return False
    tokens = image_tokens(model)
    return dtype is not None or (tokens is not None and tokens <= EAGER_MAX_IMAGE_TOKENS)


def _set_attention(model: Any, impl: str) -> None:
    setter = getattr(model, "set_attn_implementation", None)
    if setter is not None:
        setter(impl)


@contextmanager
def attack_mode(
    model: Any,
    device: torch.device,
    dtype: torch.dtype | None,
    threads: int = 0,
    compile: bool = False,
    towers: list[torch.nn.Module] | None = None,
) -> Iterator[None]:
    """Frozen eval-mode model with the fast kernels for this device and dtype, restored on exit.

    The vision layers nobody reads are skipped (`unread_vision_layers`). On CPU, eager attention where it pays
    (`eager_attention_pays`). `compile` (opt-in) wraps the
    language and vision towers in torch.compile; a platform without a working compiler falls back to
    eager at its first call (`UniversalAttack._grad`).
    """
    old_threads = torch.get_num_threads()
    old_attn = getattr(getattr(model, "config", None), "_attn_implementation", None)
    torch.set_num_threads(threads or default_threads())
    model.eval()
    model.requires_grad_(False)
    patched = (_patchify_convs(model) if device.type == "cpu" else []) + _skip(unread_vision_layers(model))
    if eager_attention_pays(model, device, dtype):
        _set_attention(model, "eager")
    compiled = compile_towers(towers or []) if compile else []
    try:
        yield
    finally:
        for m in patched:
            del m.forward
        uncompile(compiled)
        if old_attn is not None and model.config._attn_implementation != old_attn:
            _set_attention(model, old_attn)
        torch.set_num_threads(old_threads)


def compile_towers(towers: list[torch.nn.Module]) -> list[torch.nn.Module]:
    """torch.compile the towers the adapter names, in place (dynamic shapes: batches vary in length)."""
    for t in towers:
        t.compile(dynamic=True)
    return towers


def uncompile(modules: list[torch.nn.Module]) -> None:
    for m in modules:
        m._compiled_call_impl = None
