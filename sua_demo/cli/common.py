"""What every command group shares: the bench and model flags, loading them, and `--out` checked before a run."""

from __future__ import annotations

import argparse
import errno
import os
import tempfile
from dataclasses import replace
from pathlib import Path

from sua_demo.cli.flags import positive_int, seed_number
from sua_demo.core.config import BenchConfig, World, served_world, shipped_world
from sua_demo.core.errors import SuaError

FIRST = shipped_world("first")  # what `sua build-*` and `train-*` make: the first world's models and denoisers


def world(model: str | None = None) -> World:
    """The world the commands' defaults name: the shipped world `model` is a folder of (a first-world model keeps
    the first world's bench, controls and noises whatever SUA_WORLD says), else the served one (SUA_WORLD; unset,
    the faithful one)."""
    if model:
        try:
            folder = Path(model).resolve()
        except (OSError, ValueError):
            folder = None
        for name in ("first", "faithful"):
            shipped = shipped_world(name)
            if folder is not None and folder.parent == shipped.models.resolve():
                return shipped
    return served_world()


def bench_of(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from sua_demo.dataset import build_bench
    from sua_demo.dataset.mllmu import load_mllmu

    if getattr(args, "mllmu", None):
        return load_mllmu(args.mllmu, args.forget_split), BenchConfig()
    model = getattr(args, "model", None)  # a shipped world's model: that world's bench; else the parser's default
    base = world(model).bench if model else getattr(args, "bench_base", world().bench)
    cfg = replace(base, n_people=args.people, forget_fraction=args.forget / 100, seed=args.bench_seed)
    return build_bench(cfg), cfg


def load_model(args: argparse.Namespace, source: str):  # type: ignore[no-untyped-def]
    """load_adapter with the --dtype / --device / --device-map / --trust-remote-code options."""
    import torch

    from sua_demo.models import load_adapter

    device = getattr(args, "device", "cpu")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    device_map = getattr(args, "device_map", None)
    return load_adapter(
        source,
        dtype=getattr(args, "dtype", "float32"),
        device=None if device_map else device,
        device_map=device_map,
        trust_remote_code=getattr(args, "trust_remote_code", False),
    )


def bench_args(p: argparse.ArgumentParser, of: World | None = None) -> None:
    """The bench flags, defaulting to world `of`'s bench (the served world's), so that no flag means the people its
    models learned; the flags change its size, forget share and seed, never its photos' size or kind."""
    bench = (of or world()).bench
    p.set_defaults(bench_base=bench)
    p.add_argument("--people", type=positive_int, default=bench.n_people, help="number of fictitious people")
    p.add_argument(
        "--forget", type=int, default=round(bench.forget_fraction * 100), choices=(5, 10, 15), help="forget split, %%"
    )
    p.add_argument("--bench-seed", type=seed_number, default=bench.seed)
    p.add_argument("--mllmu", help="folder with MLLMU-Bench-format parquet instead of the synthetic bench")
    p.add_argument("--forget-split", default="forget_10", help="with --mllmu: which forget_K folder")


def model_args(p: argparse.ArgumentParser) -> None:
    from sua_demo.models.loading import DTYPE_CHOICES

    p.add_argument("--dtype", choices=DTYPE_CHOICES, default="auto", help="auto: bf16/fp16 on GPU, float32 on CPU")
    p.add_argument("--device", default="auto", help="auto (cuda if there is one), cpu, cuda, cuda:1 ...")
    p.add_argument("--device-map", default=None, help="'auto': let accelerate spread a large model over devices")
    p.add_argument("--trust-remote-code", action="store_true", help="run model code from the model folder / Hub")


def check_out(out: str, is_file: bool = False) -> None:
    """`--out` can be written, said in one line before the first step: a run of hours must not fail at its end
    because its folder is read-only or its path runs through a regular file."""
    target = Path(out)
    if not is_file and target.exists() and not target.is_dir():
        raise SuaError(f"--out {out} is a file, not a folder; name a folder for the results")
    folder = target.parent if is_file else target
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise SuaError(f"--out {out} is under {folder}, which is a file, not a folder; choose another --out")
    if not writable(folder):
        raise SuaError(f"--out {out}: the folder {folder} is read-only here; choose a folder you can write to")


def writable(folder: Path) -> bool:
    """Whether a file can be made in `folder`: asked of the permissions, then tried (a read-only mount, or
    permissions that root ignores, only show when one writes)."""
    if not os.access(folder, os.W_OK | os.X_OK):
        return False
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


FULL = (errno.ENOSPC, errno.EDQUOT)
DENIED = (errno.EACCES, errno.EPERM, errno.EROFS)


def write_failure(err: OSError, args: argparse.Namespace) -> SuaError | None:
    """A full disk or a refused write while a command writes, as one line; None for any other OSError."""
    where = getattr(args, "out", None) or err.filename or "its output"
    if err.errno in FULL:
        again = "run again: it resumes from its last checkpoint" if getattr(args, "resumes", False) else "run again"
        return SuaError(f"the disk is full while writing {where}; free space and {again}")
    if err.errno in DENIED:
        return SuaError(f"could not write {where}: permission denied or a read-only disk; choose a writable --out")
    return None
