"""`sua build-*` and `train-*`: rebuilding what ships (models, noises, other worlds, the faithful world,
denoisers). Each resumes when run again."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from sua_demo.cli import common
from sua_demo.cli.flags import fraction, positive_int, seed_number
from sua_demo.core.config import CHECKPOINTS, BenchConfig
from sua_demo.core.errors import BadValueError

ROBUST_TITLE = "Quality gates of robust unlearning over the faithful worlds (docs/robust.md)"


def cmd_build_all(args: argparse.Namespace) -> None:
    from sua_demo.worlds.build import build_all

    build_all(Path(args.out), only=args.only, bench_cfg=BenchConfig(seed=args.bench_seed))


def cmd_build_noises(args: argparse.Namespace) -> None:
    from sua_demo.worlds.build import build_noises

    build_noises(Path(args.models), Path(args.out), only=args.only, bench_cfg=BenchConfig(seed=args.bench_seed))


def cmd_build_worlds(args: argparse.Namespace) -> None:
    from sua_demo.worlds import build_worlds

    build_worlds(args.seeds, Path(args.root), Path(args.noise), Path(args.noise))
    print((Path(args.noise) / "worlds.md").read_text())


def cmd_build_faithful(args: argparse.Namespace) -> None:
    from sua_demo.worlds.faithful import (
        FAITHFUL,
        attack_world,
        attacked_worlds,
        audit_world,
        build_general,
        build_second_retrain,
        build_world,
        gates_over_worlds,
        ship_reports,
        train_rule_gates,
        validation_attacked,
    )
    from sua_demo.worlds.first import compare_worlds

    if args.general_only:
        print(build_general())
        return
    for seed in args.seeds:
        if args.audit:
            print(audit_world(seed, tuple(args.only)) if args.only else audit_world(seed))
        elif args.second_retrain:
            print(build_second_retrain(seed))
        else:
            print(
                attack_world(seed, only=args.only)
                if args.attack
                else build_world(seed, args.only, validation=args.validation)
            )
        if not args.validation:  # a study's models (runs/faithful/validation/) ship by hand, if ever
            ship_reports(seed)  # a world beside the default one: its reports ship, its models stay in runs/
    gates_over_worlds()  # the shipped rules' table, and the train-photo rule's record beside it
    gates_over_worlds(title=ROBUST_TITLE, stem="robust_gates")
    train_rule_gates()
    if args.attack:  # every faithful world attacked so far, beside the first world's summary
        compare_worlds(CHECKPOINTS / "noise" / "worlds.json", attacked_worlds(), FAITHFUL, validation_attacked())
        print((FAITHFUL / "compare.md").read_text())


def cmd_build_scale(args: argparse.Namespace) -> None:
    from sua_demo.eval.recovery import ATTACKER_FRACTION
    from sua_demo.worlds.scale import (
        attack_people,
        attack_size,
        build_size,
        general_of,
        plan_of,
        write_people,
        write_trend,
    )

    other_share = args.attacker_fraction != ATTACKER_FRACTION
    if args.only and not (args.attack or args.people) or other_share and not args.attack:
        raise BadValueError("--only goes with --attack or --people, --attacker-fraction with --attack: they say what "
                            "is attacked")  # fmt: skip
    plan = plan_of(args.plan, args.out)
    if args.general_only:
        print(general_of(args.size, plan=plan))
        return
    if args.trend:
        write_trend(plan.reports, plan.reports)
        print((plan.reports / "trend.md").read_text())
        if write_people(args.size, plan.reports):
            print((plan.reports / args.size / "people.md").read_text())
        return
    for seed in args.seeds:
        if args.people:
            print(*attack_people(args.size, seed, plan, args.only), sep="\n")
        elif args.attack:
            print(attack_size(args.size, seed, plan, args.attacker_fraction, args.only))
        else:
            print(build_size(args.size, seed, plan=plan))


def cmd_train_ddpm(args: argparse.Namespace) -> None:
    from sua_demo.dataset import build_bench
    from sua_demo.denoisers.ddpm import save_ddpm, train_ddpm
    from sua_demo.models import load_adapter
    from sua_demo.models.examples import ImageBank

    bench = build_bench()
    bank = ImageBank(bench, load_adapter(common.FIRST.models / "vanilla"))
    images = bank.tensor[:, :5].reshape(-1, *bank.tensor.shape[2:])  # train photos only
    unet, loss = train_ddpm(images, steps=args.steps, seed=args.seed)
    save_ddpm(unet, args.out, {"steps": args.steps, "seed": args.seed, "final_loss": loss, "photos": len(images)})
    print(f"saved {args.out}: final noise-prediction MSE {loss:.4f}")


def cmd_train_dncnn(args: argparse.Namespace) -> None:
    from sua_demo.dataset import build_bench
    from sua_demo.denoisers.dncnn import train_dncnn
    from sua_demo.models import load_adapter
    from sua_demo.models.examples import ImageBank

    bench = build_bench()
    bank = ImageBank(bench, load_adapter(common.FIRST.models / "vanilla"))
    images = bank.tensor[:, :5].reshape(-1, *bank.tensor.shape[2:])  # train photos only
    model, mse = train_dncnn(images, steps=args.steps, seed=args.seed)
    model.save(
        args.out,
        {
            "steps": args.steps,
            "seed": args.seed,
            "final_mse": mse,
            "max_sigma_255": 25,
            "resolution": int(images.shape[-1]),
        },
    )
    print(f"saved {args.out}: final noise MSE {mse:.2e}")


def add_commands(sub: Any) -> None:
    """Rebuilding what ships: models, noises, other worlds, the faithful world, denoisers."""
    p = sub.add_parser("build-all", help="rebuild every shipped checkpoint from scratch, deterministically")
    p.add_argument("--out", default=str(common.FIRST.models))
    p.add_argument("--only", nargs="*", help="build only these checkpoints (and what they need)")
    p.add_argument("--bench-seed", type=seed_number, default=BenchConfig.seed, help="another world: the bench's seed")
    p.set_defaults(func=cmd_build_all)

    p = sub.add_parser("build-noises", help="rebuild the shipped noises and their recovery reports")
    p.add_argument("--models", default=str(common.FIRST.models))
    p.add_argument("--out", default=str(CHECKPOINTS / "noise"))
    p.add_argument("--only", nargs="*")
    p.add_argument(
        "--bench-seed", type=seed_number, default=BenchConfig.seed, help="the world the models were built on"
    )
    p.set_defaults(func=cmd_build_noises)

    p = sub.add_parser("build-worlds", help="other worlds (bench seeds) with the shipped recipes, and their summary")
    p.add_argument("--seeds", type=seed_number, nargs="+", default=[1, 2])
    p.add_argument("--root", default="runs/worlds", help="where the other worlds' models and noises are built")
    p.add_argument("--noise", default=str(CHECKPOINTS / "noise"), help="the shipped noises; worlds.json goes here")
    p.set_defaults(func=cmd_build_worlds)

    p = sub.add_parser("build-faithful", help="the faithful world (docs/world.md): shared tower, then its models")
    p.add_argument("--seeds", type=seed_number, nargs="+", default=[0], help="bench seeds; 0 is the one that ships")
    p.add_argument("--only", nargs="*", help="build (or with --attack / --audit, attack / audit) only these models")
    step = p.add_mutually_exclusive_group()  # one step a run: each is its own resumable command
    step.add_argument("--general-only", action="store_true", help="only the shared tower and general model")
    step.add_argument("--attack", action="store_true", help="attack the built worlds' demo models (3 splits, controls)")
    step.add_argument("--audit", action="store_true", help="audit the worlds' demo models, or --only others")
    step.add_argument("--second-retrain", action="store_true", help="the retrain control again from training seed 1")
    said = "the validation-photo rules' models (faithful.VALIDATION_RULES) from a world's vanilla, into runs/faithful/"
    step.add_argument("--validation", action="store_true", help=said)
    p.set_defaults(func=cmd_build_faithful)

    add_scale_command(sub)

    p = sub.add_parser("train-ddpm", help="train the DDPM purifier's UNet on bench photos (small-t range)")
    p.add_argument("--out", default=str(CHECKPOINTS / "denoisers" / "ddpm"))
    p.add_argument("--steps", type=positive_int, default=3000)
    p.add_argument("--seed", type=seed_number, default=0)
    p.set_defaults(func=cmd_train_ddpm)

    p = sub.add_parser("train-dncnn", help="train the DnCNN denoiser on bench photos")
    p.add_argument("--out", default=str(CHECKPOINTS / "denoisers" / "dncnn.safetensors"))
    p.add_argument("--steps", type=positive_int, default=800)
    p.add_argument("--seed", type=seed_number, default=0)
    p.set_defaults(func=cmd_train_dncnn, out_is_file=True)


def add_scale_command(sub: Any) -> None:
    """`sua build-scale`: docs/scale.md's study, one stage a run (gpu_scale.sh and studies/scale.sh call it)."""
    from sua_demo.eval.recovery import ATTACKER_FRACTION

    p = sub.add_parser("build-scale", help="docs/scale.md: a faithful world at another tower size, then its attack")
    p.add_argument(
        "--size",
        required=True,
        choices=["S", "M", "L", "XL", "XXL"],
        help="the tower, width x depth: S 64x2, M (shipped) 128x4, L 256x8; on a GPU XL 512x12, XXL 1024x12",
    )
    p.add_argument("--seeds", type=seed_number, nargs="+", default=[0, 1], help="bench seeds (worlds)")
    p.add_argument(
        "--plan",
        choices=["study", "toy"],
        default="study",
        help="study: every recipe as shipped; toy: every stage in seconds (a few people and steps)",
    )
    p.add_argument("--out", help="write weights and reports under this folder (default: runs/ and checkpoints/)")
    p.add_argument(
        "--attacker-fraction",
        type=fraction,
        default=ATTACKER_FRACTION,
        help="with --attack: the share of the forget people δ is fitted on (docs/scale.md's second axis; 0.25, 0.75)",
    )
    p.add_argument("--only", nargs="+", help="with --attack or --people: only these demo models (idk, grad_diff)")
    step = p.add_mutually_exclusive_group()
    step.add_argument("--general-only", action="store_true", help="only the size's tower and general model")
    step.add_argument("--attack", action="store_true", help="attack the built worlds (3 splits, every control)")
    step.add_argument("--people", action="store_true", help="attack the built worlds at 4, 8 and 11 attacker people")
    step.add_argument(
        "--trend",
        action="store_true",
        help="only rewrite the trend over every size attacked so far, and the size's second axis",
    )
    p.set_defaults(func=cmd_build_scale)
