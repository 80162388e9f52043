"""What Your face leaves in memory: the server's resident set (RSS) before any visitor, after each of N full runs
(teach, check, unlearn, fit δ, attack and controls, as the page runs them: `ui/your_face/run.py` on the app's engine,
one browser session each), and after every session is dropped as its tab closes. Issue 39's target: back within
10 % of the level before the first visitor once the sessions are gone.

    .venv/bin/python benchmarks/face_memory.py [--visitors 20]

RSS is read from /proc/self/status (Linux); the first visitor's run also loads what every later one shares (the
vanilla model, the shipped δ), so the level to come back to is also printed after the first run.
"""

from __future__ import annotations

import argparse
import gc
import time
from pathlib import Path

from sua_demo.core.config import BenchConfig
from sua_demo.core.machine import describe
from sua_demo.engine.jobs.face import FACTS, invent
from sua_demo.ui.shared.server import AppState
from sua_demo.ui.your_face import run as face_run
from sua_demo.your_face.visitor import procedural_photos


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status (not Linux?)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--visitors", type=int, default=20)
    args = ap.parse_args()
    state = AppState()
    engine = state.engine
    start = rss_mb()
    print(f"Your face memory on {describe()}: {args.visitors} visitors, RSS before any: {start:.0f} MB")
    first = None
    for k in range(args.visitors):
        key = f"tab-{k}"
        sess = state.faces.get(key)
        sess.photos.extend(procedural_photos(700 + k, BenchConfig(), 4))
        name, *facts = invent(engine, 700 + k)
        t0 = time.monotonic()
        for _ in face_run.run(engine, sess, name, dict(zip(FACTS, facts, strict=True))):
            pass
        first = first or rss_mb()
        print(f"visitor {k + 1}: {time.monotonic() - t0:.0f} s, RSS {rss_mb():.0f} MB (session still open)", flush=True)
    for k in range(args.visitors):
        state.faces.drop(f"tab-{k}")  # each tab closed
    gc.collect()
    end = rss_mb()
    since_start, since_first = (end / start - 1) * 100, (end / (first or end) - 1) * 100
    print(f"after every session dropped: RSS {end:.0f} MB; before any visitor {start:.0f} MB ({since_start:+.0f} %), "
          f"after the first visitor {first:.0f} MB ({since_first:+.0f} %)")  # fmt: skip


if __name__ == "__main__":
    main()
