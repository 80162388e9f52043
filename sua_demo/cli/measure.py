"""`sua audit`, `mia`, `membership`, `report-card`: what a model still holds, probed every way, and membership."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from sua_demo.cli import common
from sua_demo.cli.flags import positive_int
from sua_demo.core import shipped
from sua_demo.core.config import CHECKPOINTS


def cmd_audit(args: argparse.Namespace) -> None:
    from sua_demo.audit import run_audit

    name, world = Path(args.model).name, common.world(args.model)
    noise = Path(args.noise_dir) if args.noise_dir else world.noise / name
    out = Path(args.out) if args.out else world.audit / name
    common.check_out(str(out))  # the default too, before the bench or a model is built
    bench, _ = common.bench_of(args)
    retrain = args.retrain or world.models / "retrain"
    run_audit(args.model, retrain, bench, noise if noise.is_dir() else None, out, splits=tuple(range(args.splits)))
    print((out / "audit.md").read_text())


def cmd_mia(args: argparse.Namespace) -> None:
    from sua_demo.core.io import write_json
    from sua_demo.eval.mia.own_data import own_data_report
    from sua_demo.models.loading import load_adapter

    report = own_data_report(load_adapter(args.model), args.members, args.nonmembers, args.attacks)
    if args.out:
        write_json(Path(args.out), report)
    print(f"{report['counts']['members']} members, {report['counts']['nonmembers']} non-members")
    for name, r in report["attacks"].items():
        print(f"{name:>7}: AUC {r['auc']:.3f} (mean score {r['members']:.3f} members, {r['nonmembers']:.3f} others)")


def cmd_membership(args: argparse.Namespace) -> None:
    from sua_demo.analysis.membership import membership_card, membership_markdown, updated_card
    from sua_demo.core.io import atomic_write_text, write_json

    folder = Path(args.models)
    others = {"retrain_seed1": Path(args.second_retrain)} if args.second_retrain else {}
    card = membership_card(folder, args.names, others)
    out = Path(args.out) if args.out else folder
    if args.update:
        card = updated_card(json.loads((out / "membership.json").read_text()), card)
    write_json(out / "membership.json", card)
    atomic_write_text(out / "membership.md", membership_markdown(card))
    print(membership_markdown(card))


def cmd_report_card(args: argparse.Namespace) -> None:
    from sua_demo.audit.report_card import card_markdown, report_card
    from sua_demo.core.io import atomic_write_text, write_json

    card = report_card(args.audits, args.membership)
    out = Path(args.out or args.audits)
    write_json(out / "report_card.json", card)
    atomic_write_text(out / "report_card.md", card_markdown(card))
    print(card_markdown(card))


def add_commands(sub: Any) -> None:
    """The audit of one model; membership and forget quality on a user's own items or a world's models; the card."""
    p = sub.add_parser("audit", help="the residual-knowledge audit: SUA beside quantization, relearning, soft prompts")
    common.bench_args(p)
    p.add_argument("model", help="the unlearned model (a folder)")
    p.add_argument("--retrain", help="the retrain control, every probe's (default: the model's world's)")
    p.add_argument("--noise-dir", help="folder of delta_split<N>.safetensors (default: the shipped noises)")
    p.add_argument("--splits", type=positive_int, default=3, help="attacker/unseen splits to average over")
    p.add_argument("--out", help="folder for audit.json and audit.md (default: the model's world's audit/<model>)")
    p.set_defaults(func=cmd_audit)

    p = sub.add_parser("mia", help="membership inference on your own items: LOSS, ZLib, Min-K%%, Min-K%%++ and AUC")
    p.add_argument("model", help="a model folder or Hub id")
    p.add_argument(
        "--members", required=True, help='JSON Lines of items it trained on: {"question", "answer", "image"?}'
    )
    p.add_argument("--nonmembers", required=True, help="JSON Lines of items of the same kind it never saw")
    p.add_argument("--attacks", nargs="*", help="which attacks (default: all)")
    p.add_argument("--out", help="write the report as JSON here")
    p.set_defaults(func=cmd_mia, out_is_file=True)

    p = sub.add_parser(
        "membership", help="a world's models: MIA AUC of forget vs holdout people, privleak, forget quality"
    )
    p.add_argument("models", help="a world's folder of models (vanilla and retrain in it)")
    p.add_argument("--names", nargs="+", default=["vanilla", *shipped.DEMO], help="the models to read")
    p.add_argument("--second-retrain", help="a retrain control from another seed: its forget quality should be high")
    p.add_argument("--out", help="folder for membership.json / .md (default: the world's folder)")
    p.add_argument("--update", action="store_true",
                   help="replace only these models' rows of the card already in --out (rebuilt models)")  # fmt: skip
    p.set_defaults(func=cmd_membership)

    p = sub.add_parser("report-card", help="every audited method against every probe, with a sentence per method")
    p.add_argument("--audits", default=str(CHECKPOINTS / "audit"), help="a folder of <model>/audit.json")
    p.add_argument("--membership", help="a membership.json of the same models (sua membership)")
    p.add_argument("--out", help="folder for report_card.json / .md (default: the audits folder)")
    p.set_defaults(func=cmd_report_card)
