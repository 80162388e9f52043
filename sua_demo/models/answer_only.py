"""Compute only what an answer-only loss reads: the last decoder block's MLP at the kept positions.

The attack's NLL reads the logits of a few answer-predicting positions out of forty or more. Every layer
but the last must still run everywhere (later positions attend to earlier ones), but the last block's
output is read only through those logits, so its MLP, most of the block's work, can skip the other
positions. A forward pre-hook gathers the kept rows and a forward hook scatters them back (zeros
elsewhere, which nothing reads). The hooks stay installed and do nothing unless the calling thread set a
mask with `only_at`: a `generate` running in another thread (the app) sees the unchanged model.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import torch

_KEEP: ContextVar[torch.Tensor | None] = ContextVar("answer_positions", default=None)
_INSTALL = threading.Lock()  # two first calls at once must not hook the MLP twice


def _gather(module: torch.nn.Module, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
    keep = _KEEP.get()
    return None if keep is None else (args[0][keep], *args[1:])


def _scatter(module: torch.nn.Module, args: tuple[Any, ...], output: torch.Tensor) -> torch.Tensor | None:
    keep = _KEEP.get()
    if keep is None:
        return None
    full = output.new_zeros(*keep.shape, output.shape[-1])
    return full.index_put(keep.nonzero(as_tuple=True), output)


def install(model: Any) -> bool:
    """Hook the last decoder block's MLP once; False where the decoder has no `layers[-1].mlp`. The mark is on the
    MLP itself: a wrapper around the model (peft's LoRA while teaching) and the model unwrapped after it share the
    block, and hooks installed twice gathered the kept rows twice."""
    with _INSTALL:
        decoder = model.get_decoder() if hasattr(model, "get_decoder") else None
        layers = getattr(decoder, "layers", None)
        mlp = getattr(layers[-1], "mlp", None) if layers else None
        if not isinstance(mlp, torch.nn.Module):
            return False
        if not getattr(mlp, "_sua_answer_only", False):
            mlp.register_forward_pre_hook(_gather)
            mlp.register_forward_hook(_scatter)
            mlp._sua_answer_only = True
        return True


@contextmanager
def only_at(keep: torch.Tensor) -> Iterator[None]:
    """Within this block (this thread only), hooked MLPs run at the (N, T) positions where `keep` is True."""
    token = _KEEP.set(keep)
    try:
        yield
    finally:
        _KEEP.reset(token)
