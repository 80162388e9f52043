"""docs/scale.md's picture as a file, for docs/findings.md and the README: the same plotly figure the app's About
draws (`plots.scale_figure`) from the same trend.json (`sua build-scale --trend`), written by kaleido through
Debian's chromium, so the docs show what the app shows.

    .venv/bin/python studies/scale_picture.py [--out assets/scale_trend.png]

kaleido is a development requirement only (requirements-dev.txt): the app and the tests never render an image.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from sua_demo.plots import scale_figure
from sua_demo.scale import SCALE_REPORTS

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trend", type=Path, default=SCALE_REPORTS / "trend.json")
    p.add_argument("--out", type=Path, default=ROOT / "assets" / "scale_trend.png")
    args = p.parse_args()
    fig = scale_figure(json.loads(args.trend.read_text()))
    fig.write_image(args.out, width=900, height=520)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
