"""`sua bench`, `finetune`, `unlearn`, `eval`: the bench and the models."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from sua_demo.cli import common
from sua_demo.cli.flags import add_config_flags, config_from, positive_int

TRAIN_FLAGS = {
    "retain_only": "the retrain control: never sees forget people",
    "epochs": "epochs",
    "lr": "learning rate",
    "seed": "seed",
    "precision": "auto, bf16 or fp32",
}
UNLEARN_FLAGS = {
    "lr": "learning rate",
    "max_steps": "step budget",
    "forget_target": "stop once forget exact match is at most this",
    "retain_floor": "... while retain stays above this fraction of the start model's",
    "refusal_target": "IDK: and forget refusal is at least this",
    "retain_weight": "weight of the retain loss",
    "lora": "LoRA adapters on the language model (peft)",
    "seed": "seed",
    "precision": "auto, bf16 or fp32",
}


def cmd_bench_build(args: argparse.Namespace) -> None:
    from sua_demo.dataset.mllmu import write_mllmu

    bench, _ = common.bench_of(args)
    out = write_mllmu(bench, args.out)
    print(f"wrote {len(bench.people)} people ({len(bench.forget_ids)} forget) in MLLMU-Bench layout to {out}")


def cmd_bench_sheet(args: argparse.Namespace) -> None:
    from sua_demo.dataset.faces import contact_sheet

    bench, _ = common.bench_of(args)
    people = bench.people[: args.limit]
    images = [p.photos[0] for p in people]
    labels = [f"{p.id} {p.name} ({bench.split_of(p.id)})" for p in people]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    contact_sheet(images, labels).save(args.out)
    print(f"wrote {args.out}")


def cmd_finetune(args: argparse.Namespace) -> None:
    from sua_demo.core.config import TinyModelConfig, TrainConfig
    from sua_demo.training.finetune import finetune

    bench, bench_cfg = common.bench_of(args)
    finetune(bench, bench_cfg, config_from(args, TrainConfig()), TinyModelConfig(), args.out)
    print(f"saved {args.out}")


def cmd_unlearn(args: argparse.Namespace) -> None:
    from sua_demo.core.config import UnlearnConfig
    from sua_demo.unlearning.runner import unlearn

    bench, bench_cfg = common.bench_of(args)
    cfg = config_from(args, UnlearnConfig(method=args.method))
    result = unlearn(args.start, bench, bench_cfg, cfg, args.out)
    print(f"saved {args.out}: {result.steps} steps, stopping rule met: {result.criterion_met}")


def cmd_eval(args: argparse.Namespace) -> None:
    from sua_demo.core.io import atomic_write_text, write_json
    from sua_demo.eval.evaluate import eval_groups, evaluate, markdown_table

    bench, _ = common.bench_of(args)
    adapter = common.load_model(args, args.model)
    report = evaluate(adapter, bench, groups=eval_groups(bench, args.photos_per_person))
    table = markdown_table(report)
    print(table)
    if args.out:
        write_json(Path(args.out), {"model": str(args.model), "report": report})
        atomic_write_text(Path(args.out).with_suffix(".md"), f"# Evaluation of {args.model}\n\n{table}")


def add_commands(sub: Any) -> None:
    """The bench and the models: build or look at the bench, fine-tune, unlearn, evaluate."""
    bench = sub.add_parser("bench", help="build or look at the benchmark").add_subparsers(
        dest="bench_command", required=True
    )
    p = bench.add_parser("build", help="write the synthetic bench as MLLMU-Bench parquet")
    common.bench_args(p)
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_bench_build)
    p = bench.add_parser("sheet", help="contact sheet PNG of the people")
    common.bench_args(p)
    p.add_argument("--out", default="bench_sheet.png")
    p.add_argument("--limit", type=positive_int, default=100, help="at most this many people on the sheet")
    p.set_defaults(func=cmd_bench_sheet, out_is_file=True)

    from sua_demo.core.config import TrainConfig

    p = sub.add_parser("finetune", help="train the tiny LLaVA on the bench (vanilla or retrain control)")
    common.bench_args(p, common.FIRST)  # the first world's recipe: a tower trained from scratch on the bench
    p.add_argument("--out", required=True)
    add_config_flags(p, TrainConfig, TRAIN_FLAGS)
    p.set_defaults(func=cmd_finetune)

    from sua_demo.core.config import UnlearnConfig
    from sua_demo.unlearning import METHODS

    p = sub.add_parser("unlearn", help="unlearn the forget people from a fine-tuned model (the first world's recipe)")
    common.bench_args(p, common.FIRST)
    p.add_argument("--method", required=True, choices=METHODS.names())
    p.add_argument("--start", default=str(common.FIRST.models / "vanilla"), help="model folder to unlearn from")
    p.add_argument("--out", required=True)
    add_config_flags(p, UnlearnConfig, UNLEARN_FLAGS)
    p.set_defaults(func=cmd_unlearn)

    p = sub.add_parser("eval", help="accuracy and refusal on forget/retain, train/held-out photos")
    common.bench_args(p)
    p.add_argument("model", help="model folder (or LoRA adapter folder)")
    common.model_args(p)
    p.add_argument(
        "--photos-per-person", type=positive_int, default=None, help="only the first k photos of each split per person"
    )
    p.add_argument("--out", help="write the JSON report here (and a .md beside it)")
    p.set_defaults(func=cmd_eval, out_is_file=True)
