"""Data parallel attack: every rank holds the same delta, takes a shard of each batch, and the gradients
are averaged, so N processes take exactly the step one process would take on the whole batch.

Started with `accelerate launch` (or torchrun), which sets RANK / WORLD_SIZE / LOCAL_RANK; one process
without those variables is world size 1 and everything here is a no-op.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from sua_demo.core.errors import BadValueError, SuaError

# A collective that waits longer than this fails instead of hanging: a rank that died leaves the others stuck
# in all_reduce otherwise, and a launcher ends the whole group once any rank exits with an error.
TIMEOUT = timedelta(seconds=int(os.environ.get("SUA_DIST_TIMEOUT", "300")))


def world() -> tuple[int, int]:
    """(rank, world size) of the initialised process group, (0, 1) without one."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def launched() -> bool:
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def check_device_map(device_map: str | None) -> None:
    """Under a launcher each process holds a whole copy of the model on its own GPU; spreading one model over
    several GPUs (--device-map) is the other mode, for a model too large for one, in a single process."""
    if device_map and launched():
        raise SuaError(
            "--device-map spreads one model over GPUs, but under a launcher every process holds its own copy: "
            "drop --device-map for data parallelism, or run one process with --device-map auto for a model too "
            "big for one GPU"
        )


def init_from_env() -> torch.device | None:
    """Join the process group a launcher described in the environment; this rank's device, None when alone.
    The device is set before the group starts, so NCCL binds each rank to its own GPU."""
    if not launched():
        return None
    local = int(os.environ.get("LOCAL_RANK", "0"))
    use_cuda = torch.cuda.is_available() and os.environ.get("ACCELERATE_USE_CPU", "").lower() not in ("1", "true")
    if use_cuda:
        torch.cuda.set_device(local)
    if not dist.is_initialized():
        dist.init_process_group("nccl" if use_cuda else "gloo", timeout=TIMEOUT)
    return torch.device("cuda", local) if use_cuda else torch.device("cpu")


def shutdown(ok: bool = True) -> None:
    """Leave the process group: together after a run (a gloo group left for interpreter exit to tear down can
    abort a rank with SIGABRT after the work is done); at once after a failure, with no barrier the others
    would never reach, so this rank exits with its error and the launcher ends the group."""
    if dist.is_available() and dist.is_initialized():
        if ok:
            dist.barrier()
        dist.destroy_process_group()


@contextmanager
def group() -> Iterator[None]:
    """Run a distributed job: leave together when it ends, at once when this rank fails."""
    try:
        yield
    except BaseException:
        shutdown(ok=False)
        raise
    shutdown()


def broadcast_object(value: Any) -> Any:
    """Rank 0's value on every rank (e.g. what it read from a checkpoint that only it should read)."""
    if world()[1] == 1:
        return value
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def global_sum(value: float) -> float:
    """The sum of a number over all ranks."""
    if world()[1] == 1:
        return value
    on_gpu = dist.get_backend() == "nccl"  # NCCL reduces CUDA tensors only
    t = torch.tensor([float(value)], dtype=torch.float64, device="cuda" if on_gpu else "cpu")
    dist.all_reduce(t)
    return float(t[0])


def shard(n: int, rank: int, size: int) -> slice:
    """Contiguous, near-equal shard of n rows; every rank gets at least one row when n >= size."""
    if n < size:
        raise BadValueError(f"a batch of {n} cannot be shared among {size} processes; raise batch_size")
    base, extra = divmod(n, size)
    start = rank * base + min(rank, extra)
    return slice(start, start + base + (rank < extra))


def average(grad: torch.Tensor, stats: dict[str, float], n_local: int) -> tuple[torch.Tensor, dict[str, float]]:
    """Row-weighted mean over ranks of a shard-mean gradient and its logged figures.

    Each rank's loss is a mean over its own rows, so sum_r n_r * g_r / sum_r n_r is the gradient of the
    mean over the whole batch, also when shards differ in size by one.
    """
    _, size = world()
    if size == 1:
        return grad, stats
    keys = sorted(stats)
    packed = torch.cat(
        [
            grad.detach().flatten().double(),
            torch.tensor([1.0, *(stats[k] for k in keys)], dtype=torch.float64, device=grad.device),
        ]
    )
    packed *= n_local
    dist.all_reduce(packed)
    total = packed[grad.numel()]
    mean = packed / total
    figures = mean[grad.numel() + 1 :].tolist()
    return mean[: grad.numel()].view_as(grad).to(grad.dtype), dict(zip(keys, figures, strict=True))


def broadcast_(delta: torch.Tensor) -> None:
    """Rank 0's delta on every rank (a resumed checkpoint or a random start then agree bit for bit)."""
    if world()[1] > 1:
        dist.broadcast(delta.data, src=0)
