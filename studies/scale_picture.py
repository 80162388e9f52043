"""docs/scale.md's pictures as files, for docs/findings.md and the README: the same plotly figures the app's About
draws (`plots.scale_figure`, `plots.people_figure`) from the same trend.json and people.json (`sua build-scale
--trend`), written by kaleido through Debian's chromium, so the docs show what the app shows.

    .venv/bin/python studies/scale_picture.py [--out assets/scale_trend.png] [--people-out assets/people_axis.png]

kaleido is a development requirement only (requirements-dev.txt): the app and the tests never render an image.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from sua_demo.ui.shared.plots import people_figure, scale_figure
from sua_demo.worlds.scale import SCALE_REPORTS

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trend", type=Path, default=SCALE_REPORTS / "trend.json")
    p.add_argument("--out", type=Path, default=ROOT / "assets" / "scale_trend.png")
    p.add_argument("--people", type=Path, default=SCALE_REPORTS / "M" / "people.json", help="the second axis")
    p.add_argument("--people-out", type=Path, default=ROOT / "assets" / "people_axis.png")
    args = p.parse_args()
    scale_figure(json.loads(args.trend.read_text())).write_image(args.out, width=900, height=520)
    print(f"wrote {args.out}")
    if args.people.is_file():
        people_figure(json.loads(args.people.read_text())).write_image(args.people_out, width=900, height=480)
        print(f"wrote {args.people_out}")


if __name__ == "__main__":
    main()
