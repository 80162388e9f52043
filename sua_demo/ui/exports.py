"""Results as files people can keep: answers and metrics as CSV and JSON, noises as safetensors + PNG.

Every file says which model, noise and denoiser produced it, and names no server path. Files go into one
folder per run under the app's scratch directory, which `Scratch` empties when it grows old.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from sua_demo.attacks import Noise, save_noise
from sua_demo.engine import Story, public_name
from sua_demo.images import amplified, to_pil
from sua_demo.ui.story import story_header, story_rows

MAX_AGE_S = 3600


class Scratch:
    """A private temp folder for files offered as downloads; folders older than an hour are removed."""

    def __init__(self, root: Path | None = None, max_age_s: float = MAX_AGE_S) -> None:
        self.root = Path(root or tempfile.mkdtemp(prefix="sua_lab_"))
        self.root.mkdir(parents=True, exist_ok=True)
        self.max_age_s = max_age_s

    def folder(self) -> Path:
        self.sweep()
        return Path(tempfile.mkdtemp(dir=self.root))

    def sweep(self) -> None:
        cutoff = time.time() - self.max_age_s
        for old in self.root.iterdir():
            if old.is_dir() and old.stat().st_mtime < cutoff:
                shutil.rmtree(old, ignore_errors=True)

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def provenance(story: Story, noise_label: str, denoiser: str) -> dict[str, Any]:
    return {
        "model": public_name(story.model),
        "before_unlearning": story.controls["vanilla"],
        "retrain_control": story.controls["retrain"],
        "noise": noise_label,
        "denoiser": denoiser,
        "image": story.who,
    }


def story_csv(story: Story, noise_label: str, denoiser: str) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    for k, v in provenance(story, noise_label, denoiser).items():
        w.writerow([f"# {k}", v])
    w.writerow(story_header())
    w.writerows(story_rows(story))
    return buf.getvalue()


def story_json(story: Story, noise_label: str, denoiser: str, verdict: Any = None) -> str:
    rows = [{"question": r.question, "truth": r.truth, "answers": r.answers} for r in story.rows]
    out = {**provenance(story, noise_label, denoiser), "rows": rows, "pixels": story.pixels, "cosines": story.cosines}
    if verdict is not None:
        out["verdict"] = {"photos": verdict.photos, "questions": verdict.questions, "correct": verdict.correct,
                          "brought_back": verdict.brought_back, "facts": verdict.facts}  # fmt: skip
    return json.dumps(out, indent=2, ensure_ascii=False)


def write_story(folder: Path, story: Story, noise_label: str, denoiser: str, verdict: Any = None) -> list[Path]:
    csv_path, json_path = folder / "sua_answers.csv", folder / "sua_answers.json"
    csv_path.write_text(story_csv(story, noise_label, denoiser), encoding="utf-8")
    json_path.write_text(story_json(story, noise_label, denoiser, verdict), encoding="utf-8")
    return [csv_path, json_path]


def write_noise(folder: Path, noise: Noise, stem: str) -> list[Path]:
    """The noise as safetensors (what the app and CLI load) and its amplified PNG preview."""
    path = save_noise(noise, folder / f"{stem}.safetensors")
    png = folder / f"{stem}_amplified.png"
    to_pil(amplified(noise.delta, noise.eps)).save(png)
    return [path, png]


def table_csv(header: list[str], rows: list[list[Any]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()
