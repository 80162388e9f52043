"""MLLMU-Bench parquet layout: write our bench in it, and read it (ours or the released data) back.

Layout (one folder per config, any number of parquet shards inside):
  Full_Set/   ID, image {bytes, path}, biography, Classification_Task, Generation_Task, Mask_Task
              (one row per training photo; the released set has one photo per person)
  Test_Set/   ID, images [{bytes, path}, ...], Classification_Task, Generation_Task, Mask_Task: one row per
              person with several new photos and its own questions; no training may use them
  forget_K/   the rows of the forget people (K = 5, 10, 15); retain_{100-K}/ the others
"""

from __future__ import annotations

import io
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

from sua_demo.core.errors import SuaError
from sua_demo.dataset.records import Bench, Person, QAItem, Style

RECORD_FIELDS = ("ID", "biography", "Classification_Task", "Generation_Task", "Mask_Task")
_NAME_QUESTION = re.compile(r"\b(name of|who is)\b", re.IGNORECASE)
_BIO_NAME = re.compile(r"((?:[A-Z][a-z]+ ){1,2}[A-Z][a-z]+)\b")
TASK_FIELDS = ("Classification_Task", "Generation_Task", "Mask_Task")


def _png(image: Image.Image, path: str) -> dict[str, Any]:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return {"bytes": buf.getvalue(), "path": path}


def _write(rows: list[dict[str, Any]], folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / "train-00000-of-00001.parquet")


def released_id(pid: int) -> str:
    """MLLMU-Bench's IDs are zero-padded strings ("051"), and its code filters rows by them."""
    return f"{pid:03d}"


def write_mllmu(bench: Bench, out: str | Path) -> Path:
    """Write `bench` in MLLMU-Bench's parquet layout, with forget_K / retain_K for the bench's own split."""
    out = Path(out)
    full, test = [], []
    for p in bench.people:
        record = {**{k: p.record[k] for k in RECORD_FIELDS}, "ID": released_id(p.id)}
        for i in p.photo_indices("train"):
            full.append({**record, "image": _png(p.photos[i], f"{p.id}/{i}.png")})
        images = [_png(p.photos[i], f"{p.id}/{i}.png") for i in p.photo_indices("heldout")]
        test.append({"ID": released_id(p.id), "images": images, **{k: p.record[k] for k in TASK_FIELDS}})
    _write(full, out / "Full_Set")
    _write(test, out / "Test_Set")
    k = round(100 * len(bench.forget_ids) / len(bench.people))
    forget = {released_id(i) for i in bench.forget_ids}
    _write([r for r in full if r["ID"] in forget], out / f"forget_{k}")
    _write([r for r in full if r["ID"] not in forget], out / f"retain_{100 - k}")
    return out


def _read(folder: Path) -> list[dict[str, Any]]:
    files = sorted(folder.glob("*.parquet"))
    if not files:
        raise SuaError(f"no parquet files in {folder}; expected MLLMU-Bench's layout (Full_Set/, forget_10/, ...)")
    return [row for f in files for row in pq.read_table(f).to_pylist()]


def _image(cell: Any) -> Image.Image:
    data = cell.get("bytes") if isinstance(cell, dict) else cell
    if not data:
        raise SuaError("an image cell holds no bytes; re-download the parquet files")
    return Image.open(io.BytesIO(data)).convert("RGB")


def load_mllmu(root: str | Path, forget_split: str = "forget_10", style: Style = "mllmu") -> Bench:
    """Read MLLMU-Bench-format parquet into a Bench: Full_Set photos train, Test_Set photos are held out.
    Questions and scoring follow MLLMU-Bench's own evaluation; "synthetic" reads back a synthetic bench as built."""
    root = Path(root)
    if not (root / "Full_Set").is_dir():
        raise SuaError(f"{root} has no Full_Set/ folder; point to the folder that holds MLLMU-Bench's configs")
    if not (root / forget_split).is_dir():
        found = sorted(p.name for p in root.iterdir() if p.name.startswith("forget_"))
        raise SuaError(f"{root} has no {forget_split}/; available: {', '.join(found) or 'none'}")
    records: dict[int, dict[str, Any]] = {}
    train: dict[int, list[Image.Image]] = defaultdict(list)
    for row in _read(root / "Full_Set"):
        pid = int(row["ID"])
        records.setdefault(pid, {k: row.get(k) for k in RECORD_FIELDS})
        train[pid].append(_image(row["image"]))
    heldout: dict[int, list[Image.Image]] = defaultdict(list)
    test_records: dict[int, dict[str, Any]] = {}
    if (root / "Test_Set").is_dir():
        for row in _read(root / "Test_Set"):
            cells = row.get("images") or ([row["image"]] if row.get("image") else [])
            heldout[int(row["ID"])] += [_image(c) for c in cells]
            test_records.setdefault(int(row["ID"]), {"ID": row["ID"], **{k: row.get(k) for k in TASK_FIELDS}})
    forget = sorted({int(r["ID"]) for r in _read(root / forget_split)})
    people = []
    for pid in sorted(records):
        photos = train[pid] + heldout[pid]
        person = Person(pid, _name(records[pid], pid), records[pid], photos, len(train[pid]))
        person.heldout_record = test_records.get(pid)  # Test_Set photos are asked Test_Set's own questions
        people.append(person)
    utility = _celebrities(root / "Retain_Set", start=max(records) + 1) if (root / "Retain_Set").is_dir() else []
    bench = Bench(people + utility, forget, source=str(root), style=style, utility_ids=[p.id for p in utility])
    if (root / "ft_Data").is_dir():
        bench.ft_items = _ft_items(root / "ft_Data", records)
    return bench


def _celebrities(folder: Path, start: int) -> list[Person]:
    """Retain_Set: real people the model must still know (MLLMU-Bench's utility split), numbered after ours."""
    people = []
    for i, row in enumerate(_read(folder)):
        pid = start + i
        record = {"ID": pid, "biography": row.get("biography", ""), **{k: row.get(k) for k in TASK_FIELDS}}
        cells = row.get("images") or ([row["image"]] if row.get("image") else [])
        people.append(Person(pid, _name(record, pid), record, [_image(c) for c in cells], len(cells)))
    return people


def _ft_items(folder: Path, records: dict[int, dict[str, Any]]) -> dict[int, list[QAItem]]:
    """ft_Data: extra image questions for fine-tuning, a JSON list of {Question, Answer} per row."""
    out: dict[int, list[QAItem]] = defaultdict(list)
    for row in _read(folder):
        if row.get("ID") is None or int(row["ID"]) not in records:
            continue  # rows that name no bench person cannot be placed
        pid = int(row["ID"])
        for qa in json.loads(row.get("metadata") or "[]"):
            if qa.get("Question") and qa.get("Answer"):
                out[pid].append(QAItem(pid, "gen", "image", qa["Question"], str(qa["Answer"]), "ft_data"))
    return dict(out)


def _name(record: dict[str, Any], pid: int) -> str:
    """The person's name: the answer tagged `name`, else the answer to a question that asks for the name (the
    released data has no tags), else the biography's first words, else "Person N"."""
    gen = record.get("Generation_Task") or []
    tagged = next((q["Ground_Truth"] for q in gen if q.get("Fact") == "name"), None)
    asked = next((q["Ground_Truth"] for q in gen if _NAME_QUESTION.search(str(q.get("Question", "")))), None)
    bio = _BIO_NAME.match(str(record.get("biography") or ""))
    return str(tagged or asked or (bio.group(1) if bio else f"Person {pid}"))


def load_mllmu_test(root: str | Path, forget_split: str | None = None, style: Style = "mllmu") -> Bench:
    """Test_Set alone as a Bench: each person's new photos (all held out) with the Test_Set's own questions.

    This is what the reference SUA protocol attacks and scores (`sua mllmu-protocol`); the biography and name
    come from Full_Set where it is there. `forget_split` (e.g. "forget_10") marks those people as forget."""
    root = Path(root)
    if not (root / "Test_Set").is_dir():
        raise SuaError(f"{root} has no Test_Set/ folder; point to the folder that holds MLLMU-Bench's configs")
    full = {int(r["ID"]): r for r in _read(root / "Full_Set")} if (root / "Full_Set").is_dir() else {}
    people = []
    for row in _read(root / "Test_Set"):
        pid = int(row["ID"])
        cells = row.get("images") or ([row["image"]] if row.get("image") else [])
        if not cells:
            raise SuaError(f"Test_Set row {pid} holds no images; re-download the parquet files")
        bio = full.get(pid, {}).get("biography", "")
        record = {"ID": pid, "biography": bio, **{k: row.get(k) for k in TASK_FIELDS}}
        name = _name(full[pid], pid) if pid in full else _name(record, pid)
        people.append(Person(pid, name, record, [_image(c) for c in cells], n_train_photos=0))
    people.sort(key=lambda p: p.id)
    forget: list[int] = []
    if forget_split:
        if not (root / forget_split).is_dir():
            raise SuaError(f"{root} has no {forget_split}/ folder")
        ids = {p.id for p in people}
        forget = sorted({int(r["ID"]) for r in _read(root / forget_split)} & ids)
    return Bench(people, forget, source=f"{root} (Test_Set)", style=style)
