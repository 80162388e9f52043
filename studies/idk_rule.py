"""IDK under a stopping rule that reads validation photos, one recipe change at a time (docs/world.md, Changes:
runs a-h), from a faithful world's vanilla, judged on the world's IDK gates alone.

    OMP_NUM_THREADS=1 .venv/bin/python studies/idk_rule.py g --refusal 0.95 --max-steps 600
    OMP_NUM_THREADS=1 .venv/bin/python studies/idk_rule.py h --light 0.7

The defaults are run f's recipe (IDK's own targets with a retain floor of 0.93, read on every person's validation
photo; the training's photo jitter with light and colour 0.35). The model and its gates go to runs/val/<run>/ (a
finished model is kept, so the same command goes on with its gates); the gates and evaluation are copied to
checkpoints/faithful/validation/world<seed>_idk_<run>/ for the record.
"""

from __future__ import annotations

import argparse
import logging
import shutil

from sua_demo.core.config import CHECKPOINTS, faithful_bench
from sua_demo.worlds.build import RECIPES
from sua_demo.worlds.faithful import FAITHFUL, SHIPPED_RULES, build_model, world_dir, write_gates

RUNS = CHECKPOINTS.parent / "runs" / "val"


def rule(args: argparse.Namespace) -> dict:
    """The stopping rule and jitter of one run: the shipped IDK rule (run h) with the flags' refusal, light and
    steps, whose defaults make it run f's."""
    return {**SHIPPED_RULES["idk"], "refusal_target": args.refusal, "augment_light": args.light,
            "max_steps": args.max_steps}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", help="the run's name in docs/world.md (its folder under runs/val/)")
    parser.add_argument("--seed", type=int, default=0, help="the faithful world (bench seed) whose vanilla unlearns")
    parser.add_argument("--refusal", type=float, default=0.90, help="refusal asked of the validation photos")
    parser.add_argument("--light", type=float, default=0.35, help="the light-and-colour jitter's strength")
    parser.add_argument("--max-steps", type=int, default=400)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    out = RUNS / args.run
    recipe = next(r for r in RECIPES if r.name == "idk")
    build_model(recipe, None, world_dir(args.seed) / "vanilla", faithful_bench(args.seed), out / "idk", rule(args))
    write_gates(out)
    record = FAITHFUL / "validation" / f"world{args.seed}_idk_{args.run}"
    (record / "idk").mkdir(parents=True, exist_ok=True)
    for name in ("gates.json", "gates.md"):
        shutil.copy2(out / name, record / name)
    for name in ("eval.json", "eval.md"):
        shutil.copy2(out / "idk" / name, record / "idk" / name)
    print((out / "gates.md").read_text())


if __name__ == "__main__":
    main()
