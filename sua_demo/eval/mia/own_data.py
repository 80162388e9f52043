"""Membership inference on a user's own items, no unlearning needed (`sua mia`): two JSON Lines files, one item a
line, {"question": ..., "answer": ..., "image": optional path, relative to the file}. The items the user believes
the model trained on are the members; the others, of the same kind, the non-members."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from sua_demo.core.errors import BadValueError
from sua_demo.core.images import read_image
from sua_demo.dataset.records import QAItem
from sua_demo.eval.mia.scores import mia_report
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example

MAX_ITEMS = 20_000  # a file of items is read whole; more than this is not an audit but a dataset


class PreparedImages:
    """The items' pictures at the model's resolution; `get` answers a batch as the bench's image bank does."""

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor

    def get(self, examples: list[Example]) -> torch.Tensor | None:
        if examples[0].photo is None:
            return None
        return self.tensor[[e.photo for e in examples]]


def read_items(path: str | Path) -> list[dict[str, Any]]:
    """The file's items, each checked, with a line number in every complaint."""
    path = Path(path)
    if not path.is_file():
        raise BadValueError(f"no file at {path}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise BadValueError(f"{path.name} is not a text file: expected JSON Lines, one item a line") from None
    items = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as err:
            raise BadValueError(f"{path.name} line {n} is not JSON: {err.msg}") from None
        except RecursionError:
            raise BadValueError(f"{path.name} line {n} nests deeper than an item should") from None
        if not isinstance(item, dict) or not all(
            isinstance(item.get(k), str) and item[k] for k in ("question", "answer")
        ):
            raise BadValueError(f'{path.name} line {n} needs a non-empty "question" and "answer"')
        if "image" in item:
            item["image"] = str(path.parent / str(item["image"]))
        items.append(item)
        if len(items) > MAX_ITEMS:
            raise BadValueError(f"{path.name} holds more than {MAX_ITEMS} items")
    if not items:
        raise BadValueError(f"{path.name} holds no items")
    return items


def own_data_report(
    adapter: VisionLanguageAdapter, members: str | Path, nonmembers: str | Path, attacks: list[str] | None = None
) -> dict[str, Any]:
    """Every attack's AUC of the members file against the non-members file, with its scores' means."""
    sets = [read_items(members), read_items(nonmembers)]
    photos = [read_image(i["image"])[0] for s in sets for i in s if "image" in i]
    bank = PreparedImages(adapter.prepare_images(photos) if photos else torch.zeros(0))
    examples: list[list[Example]] = [[], []]
    at = 0
    for k, items in enumerate(sets):
        for i in items:
            examples[k].append(
                Example(
                    QAItem(0, "gen", "image" if "image" in i else "text", i["question"], i["answer"]),
                    at if "image" in i else None,
                )
            )
            at += "image" in i
    return mia_report(adapter, bank, examples[0], examples[1], attacks)
