"""Your face on new people: the default lifecycle (teach, unlearn with IDK, the shipped δ and a fitted δ, every
control) on procedural people no world holds, and on photo-like people drawn here, unlike the bench's cartoons.

    .venv/bin/python studies/your_face.py [--world faithful|first] [--procedural 101 102 103 104 105] [--photo-like 1 2]

Without `--world`, the world the app serves (SUA_WORLD; unset, the faithful one), with the page's own settings
(its vanilla, its IDK δ of split 0, the unlearning rule's measured passes). Each person's report is written as it
finishes (checkpoints/studies/your_face/<world>/<person>.json), so a stopped run resumes with the next person;
summary.md sets them side by side.
"""

from __future__ import annotations

import argparse
import io
import json
import time

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

from sua_demo.attacks import load_noise
from sua_demo.core.config import CHECKPOINTS, World, served_world, shipped_world
from sua_demo.core.io import atomic_write_text, write_json
from sua_demo.core.machine import describe
from sua_demo.dataset import build_bench
from sua_demo.models.loading import load_adapter
from sua_demo.your_face import Visitor, invent_visitor, usable_photos
from sua_demo.your_face.lifecycle import LifecycleConfig, report_json, rule_steps, run_lifecycle
from sua_demo.your_face.visitor import procedural_photos

OUT = CHECKPOINTS / "studies" / "your_face"
ARTIFACTS = CHECKPOINTS.parent / "artifacts"


def photo_like(seed: int, n: int = 4, size: int = 256) -> list[Image.Image]:
    """`n` photos of one made-up face drawn unlike the bench's flat cartoons: soft shading, blurred edges, skin and
    hair texture, a gradient background with blotches, a directional light, camera noise and JPEG artefacts; the
    photos differ in framing, tilt and light, as snapshots of one person do."""
    rng = np.random.default_rng((seed, 29, 3))
    skin = rng.uniform([150, 100, 80], [235, 190, 160])
    hair = rng.uniform(20, 120, 3) * rng.uniform(0.6, 1.0)
    back = rng.uniform(40, 220, 3)
    iris = rng.uniform(20, 110, 3)
    face_w, face_h = rng.uniform(0.26, 0.32), rng.uniform(0.34, 0.40)
    photos = []
    for _ in range(n):
        yy, xx = np.mgrid[0:size, 0:size] / size
        canvas = back * (0.75 + 0.35 * yy[..., None])
        blotch = np.asarray(
            Image.fromarray((rng.uniform(0, 255, (8, 8))).astype(np.uint8)).resize((size, size), Image.BICUBIC)
        )
        canvas = canvas + (blotch[..., None] - 128) * 0.25
        img = Image.fromarray(np.clip(canvas, 0, 255).astype(np.uint8))
        draw = ImageDraw.Draw(img)
        cx, cy = size * (0.5 + rng.uniform(-0.06, 0.06)), size * (0.52 + rng.uniform(-0.05, 0.05))
        w, h = size * face_w * rng.uniform(0.92, 1.08), size * face_h * rng.uniform(0.92, 1.08)
        draw.ellipse([cx - w * 1.1, cy - h * 1.15, cx + w * 1.1, cy + h * 0.4], fill=tuple(int(v) for v in hair))
        draw.rectangle([cx - w * 0.35, cy + h * 0.8, cx + w * 0.35, size], fill=tuple(int(v * 0.9) for v in skin))
        draw.ellipse([cx - w, cy - h, cx + w, cy + h], fill=tuple(int(v) for v in skin))
        draw.chord(
            [cx - w * 1.02, cy - h * 1.1, cx + w * 1.02, cy - h * 0.1], 180, 360, fill=tuple(int(v) for v in hair)
        )
        for side in (-1, 1):
            ex, ey = cx + side * w * 0.42, cy - h * 0.12
            draw.ellipse([ex - w * 0.2, ey - h * 0.08, ex + w * 0.2, ey + h * 0.08], fill=(235, 232, 228))
            draw.ellipse([ex - w * 0.09, ey - h * 0.08, ex + w * 0.09, ey + h * 0.08], fill=tuple(int(v) for v in iris))
            draw.line(
                [ex - w * 0.25, ey - h * 0.2, ex + w * 0.22, ey - h * 0.22], fill=tuple(int(v) for v in hair), width=4
            )
        draw.line([cx, cy - h * 0.05, cx - w * 0.08, cy + h * 0.3], fill=tuple(int(v * 0.75) for v in skin), width=3)
        draw.arc([cx - w * 0.35, cy + h * 0.3, cx + w * 0.35, cy + h * 0.6], 15, 165, fill=(140, 60, 60), width=4)
        img = img.filter(ImageFilter.GaussianBlur(rng.uniform(1.2, 2.2)))
        img = img.rotate(rng.uniform(-8, 8), resample=Image.BICUBIC, fillcolor=tuple(int(v) for v in back))
        arr = np.asarray(img, dtype=np.float32)
        light = 1 + rng.uniform(-0.25, 0.25) * (xx - 0.5)[..., None] * 2 + rng.uniform(-0.15, 0.15)
        arr = arr * light + rng.normal(0, 5, arr.shape)
        buf = Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8))
        jpeg = io.BytesIO()
        buf.save(jpeg, format="JPEG", quality=int(rng.integers(60, 85)))
        photos.append(Image.open(io.BytesIO(jpeg.getvalue())).convert("RGB"))
    return photos


def run_one(key: str, photos: list[Image.Image], seed: int, world: World, before, bench, shipped) -> dict:  # noqa: ANN001
    photos, notes = usable_photos(photos)
    name, facts = invent_visitor(bench, seed, before.tokenizer)
    cfg = LifecycleConfig(unlearn_stops=rule_steps(world.models, "idk"))  # as the page runs it (jobs.face)
    t0 = time.time()
    report = run_lifecycle(before, bench, Visitor(name, facts, photos), shipped, cfg)
    out = {"person": key, "seconds": round(time.time() - t0, 1), "notes": notes, **report_json(report)}
    write_json(OUT / world.name / f"{key}.json", out)
    return out


def summary(rows: list[dict], world: World) -> str:
    lines = [
        f"# Your face on new people, {world.name} world",
        "",
        f"The default lifecycle on the shipped vanilla, the shipped IDK δ (split 0); {describe()}.",
        "",
        "| person | taught (held back) | unlearned (refusal) | others: before → taught → unlearned | shipped δ: "
        "back / clean / random / before-teaching + δ | fitted δ on held back: back / clean / random / "
        "before-teaching + δ | s |",
        "|---|---|---|---|---|---|---:|",
    ]
    for r in rows:
        f = r["figures"]
        cells = []
        for k in ("shipped", "fitted"):
            v = r["verdicts"][k]
            c = v["correct"]
            total = v["photos"] * v["questions"]
            cells.append(f"{v['brought_back']} / {c['clean']} / {c['random']} / {c['retrain_delta']} of {total}")
        lines.append(
            f"| {r['person']} | {100 * f['taught_held_back']:.0f} % | {100 * f['unlearned_held_back']:.0f} % "
            f"({100 * f['refusal_held_back']:.0f} %) | {100 * f['others_before']:.0f} → {100 * f['others_taught']:.0f} "
            f"→ {100 * f['others_unlearned']:.0f} % | {cells[0]} | {cells[1]} | {r['seconds']:.0f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--world", help="first or faithful (default: the world the app serves)")
    ap.add_argument("--procedural", type=int, nargs="*", default=[101, 102, 103, 104, 105])
    ap.add_argument("--photo-like", type=int, nargs="*", default=[1, 2])
    args = ap.parse_args()
    world = shipped_world(args.world) if args.world else served_world()
    out = OUT / world.name
    out.mkdir(parents=True, exist_ok=True)
    bench = build_bench(world.bench)
    before = load_adapter(world.models / "vanilla")
    shipped = load_noise(world.noise / "idk" / "delta_split0.safetensors", before.image_size)
    people = [(f"procedural{s}", lambda s=s: procedural_photos(s, world.bench, 4), s) for s in args.procedural]
    people += [(f"photo_like{s}", lambda s=s: photo_like(s), 1000 + s) for s in args.photo_like]
    rows = []
    for key, draw, seed in people:
        done = out / f"{key}.json"
        rows.append(
            json.loads(done.read_text())
            if done.is_file()
            else run_one(key, draw(), seed, world, before, bench, shipped)
        )
        print(f"{key}: {rows[-1]['seconds']:.0f} s")
    ARTIFACTS.mkdir(exist_ok=True)
    for s in args.photo_like:  # what the photo-like people look like (artifacts/: checkpoints/ ships no pictures)
        sheet = Image.new("RGB", (4 * 128, 128))
        for i, im in enumerate(photo_like(s)):
            sheet.paste(im.resize((128, 128)), (128 * i, 0))
        sheet.save(ARTIFACTS / f"your_face_photo_like{s}.png")
    atomic_write_text(out / "summary.md", summary(rows, world))
    print(summary(rows, world))


if __name__ == "__main__":
    main()
