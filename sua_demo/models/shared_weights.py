"""Model folders that keep only the tensors they changed and name the folder that holds the rest.

Every model of a faithful world carries the world's pretrained vision tower and projector unchanged (docs/world.md):
only the language model is taught or unlearned. Shipping those 1.9 MB again in each of the world's folders would
spend the `checkpoints/` budget on copies, so a folder may drop every tensor that is bit for bit its base's (the
world's general model) and say so in `shared_weights.json`: the base, relative to the folder, the names it lends,
and the SHA-256 of the base's weights file, so a base rebuilt since is refused rather than silently mixed in.
`load_adapter` reads such a folder whole; every other folder loads as transformers saved it.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from sua_demo.core.errors import SuaError

MARKER = "shared_weights.json"
WEIGHTS = "model.safetensors"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def share_weights(folder: Path, base: Path) -> int:
    """Drop from `folder`'s weights every tensor identical to `base`'s and name `base` for them; the bytes saved (0
    when nothing is shared, or the folder already shares). The folder loads to the same model as before."""
    folder, base = Path(folder), Path(base)
    if (folder / MARKER).is_file() or folder.resolve() == base.resolve() or not (folder / WEIGHTS).is_file():
        return 0
    own, theirs = load_file(folder / WEIGHTS), load_file(base / WEIGHTS)
    lent = sorted(k for k, v in own.items() if k in theirs and theirs[k].dtype == v.dtype and torch.equal(theirs[k], v))
    if not lent:
        return 0
    before = (folder / WEIGHTS).stat().st_size
    kept = {k: v for k, v in own.items() if k not in lent}
    tmp = folder / f".{WEIGHTS}.tmp"
    save_file(kept, str(tmp), metadata={"format": "pt"})
    record = {"from": os.path.relpath(base, folder), "sha256": _sha256(base / WEIGHTS), "tensors": lent}
    (folder / MARKER).write_text(json.dumps(record, indent=2) + "\n")
    tmp.replace(folder / WEIGHTS)
    return before - (folder / WEIGHTS).stat().st_size


def whole_state(folder: Path) -> dict[str, torch.Tensor] | None:
    """Every tensor of a folder that shares weights (its own, and those its base lends), or None for a folder that
    holds all of its own."""
    folder = Path(folder)
    if not (folder / MARKER).is_file():
        return None
    record = json.loads((folder / MARKER).read_text())
    base = folder / record["from"]
    if not (base / WEIGHTS).is_file():
        raise SuaError(f"{folder} keeps only the tensors it changed and takes the rest from {base}, which is missing")
    if _sha256(base / WEIGHTS) != record["sha256"]:
        raise SuaError(
            f"{folder} takes its unchanged tensors from {base}, whose weights changed since it was saved; "
            "rebuild the folder from that base"
        )
    theirs = load_file(base / WEIGHTS)
    return {**{k: theirs[k] for k in record["tensors"]}, **load_file(folder / WEIGHTS)}
