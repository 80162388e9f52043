"""`sua attack`, `attack-eval`, `mllmu-protocol`: one noise, the recovery protocol with its controls, and the
reference protocol on MLLMU-Bench."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from sua_demo.cli import common
from sua_demo.cli.flags import add_config_flags, config_from, fraction, positive_int, seed_number
from sua_demo.core.errors import BadValueError

ATTACK_FLAGS = {
    "eps": "L-inf budget",
    "alpha": "PGD step",
    "alpha_schedule": "constant or cosine",
    "steps": "optimisation steps",
    "batch_size": "examples per step",
    "optimizer": "pgd, momentum (MI-FGSM) or adam",
    "momentum": "decay of the momentum optimizer's gradient sum",
    "block": "sua_lowfreq: side of the pixel squares delta is constant over",
    "frame": "sua_frame: width in pixels of the border delta lives on (zero inside)",
    "loss": "answer term: nll or margin",
    "denoiser": "denoiser in the stealth term",
    "stealth_weight": "weight of 1 - cos(E(x+delta), E(D(x+delta)))",
    "beta": "weight of the answer loss on D(x+delta)",
    "retain_kl_weight": "weight of the retain-preservation KL",
    "gate_weight": "weight of the refusal-gate term",
    "eot": "random photo jitter at every step",
    "eot_strength": "scale of the jitter",
    "random_start": "start from uniform noise",
    "seed": "seed",
    "precision": "auto (bf16 only where fast), bf16 or fp32",
    "compile": "torch.compile the towers (opt-in; slow to start)",
}


def attack_config(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from sua_demo.attacks.presets import preset

    cfg = config_from(args, preset(args.preset))
    every = getattr(args, "save_every", None)
    return dataclasses.replace(cfg, checkpoint_every=every) if every else cfg


def cmd_attack(args: argparse.Namespace) -> None:
    """Optimise one universal noise on the attacker's split and save it (resumes from --out if present)."""
    from sua_demo.attacks import ATTACKS
    from sua_demo.attacks.parallel import check_device_map, group, init_from_env
    from sua_demo.eval.recovery import RETAIN_PEOPLE, attack_split, attacker_examples, split_meta
    from sua_demo.models.examples import ImageBank, image_examples

    check_device_map(args.device_map)
    cfg = attack_config(args)
    if cfg.steps < 1 and args.attack != "random":
        raise BadValueError(f"--steps must be at least 1 for an optimised noise, got {cfg.steps}")
    if Path(args.out).is_dir():
        raise BadValueError(
            f"--out {args.out} is a folder; name the noise file, e.g. {Path(args.out) / 'delta.safetensors'}"
        )
    device = init_from_env()  # under `accelerate launch`: one process per GPU, each a shard of every batch
    if device is not None:
        args.device = str(device)
    bench, _ = common.bench_of(args)
    split = attack_split(bench, args.attacker_fraction, args.split_seed)
    adapter = common.load_model(args, args.model)
    bank = ImageBank(bench, adapter)
    retain_ids = bench.retain_ids[:RETAIN_PEOPLE]
    retain = image_examples(bench, retain_ids, "train", ("gen",)) if cfg.retain_kl_weight > 0 else None
    meta = {**split_meta(split), "denoiser": cfg.denoiser}
    with group():  # a failing rank leaves at once; the launcher then ends the others
        noise = ATTACKS.get(args.attack)(adapter, cfg).run(
            bank, attacker_examples(bench, split, tuple(args.fit_tasks)), retain, checkpoint=args.out, meta=meta
        )
    print(f"saved {args.out}: eps {noise.eps * 255:.0f}/255, final loss {noise.meta.get('loss', float('nan')):.3f}")


def cmd_attack_eval(args: argparse.Namespace) -> None:
    from sua_demo.eval.protocol import ProtocolConfig, run_protocol

    bench, _ = common.bench_of(args)
    cfg = ProtocolConfig(
        attack=attack_config(args),
        attack_tasks=tuple(args.fit_tasks),
        splits=list(range(args.splits)),
        attacker_fraction=args.attacker_fraction,
        extras=not args.no_extras,
        budgets=tuple(args.budgets),
        purifiers=tuple(args.purifiers),
        reference=args.reference,
    )
    models = common.world(args.model).models
    retrain, vanilla = args.retrain or models / "retrain", args.vanilla or models / "vanilla"
    report = run_protocol(args.model, retrain, bench, cfg, args.out, vanilla=vanilla)
    print((Path(args.out) / "report.md").read_text() if report else "")


def cmd_mllmu_protocol(args: argparse.Namespace) -> None:
    """The reference protocol on MLLMU-Bench's Test_Set: attack one ID range, score another."""
    from sua_demo.dataset.mllmu import load_mllmu_test
    from sua_demo.eval.mllmu_protocol import MllmuProtocolConfig, run_mllmu_protocol

    bench = load_mllmu_test(args.mllmu)
    adapter = common.load_model(args, args.model)
    cfg = MllmuProtocolConfig(
        attack=attack_config(args),
        attack_ids=tuple(args.attack_ids),
        test_ids=tuple(args.test_ids),
        tasks=tuple(args.tasks),
        attack_name=args.attack,
    )
    run_mllmu_protocol(adapter, bench, cfg, args.out)
    print((Path(args.out) / "report.md").read_text())


def attack_args(p: argparse.ArgumentParser) -> None:
    """The attack's settings, shared by attack, attack-eval and mllmu-protocol."""
    from sua_demo.attacks import AttackConfig
    from sua_demo.attacks.presets import PRESETS
    from sua_demo.eval.recovery import ATTACKER_FRACTION, FIT_TASKS, TASKS

    p.add_argument("--preset", default="default", choices=list(PRESETS), help="start from these settings")
    add_config_flags(p, AttackConfig, ATTACK_FLAGS)
    p.add_argument(
        "--attacker-fraction",
        type=fraction,
        default=ATTACKER_FRACTION,
        help="share of forget people the attacker uses",
    )
    p.add_argument("--fit-tasks", nargs="+", default=list(FIT_TASKS), choices=TASKS, help="tasks delta fits on")
    p.add_argument(
        "--save-every",
        type=positive_int,
        default=None,
        metavar="N",
        help=f"save delta every N steps (a stopped run resumes there); default {AttackConfig.checkpoint_every}",
    )


def add_commands(sub: Any) -> None:
    """One noise, the recovery protocol with its controls, and the reference protocol on MLLMU-Bench."""
    from sua_demo.attacks import ATTACKS

    p = sub.add_parser("attack", help="optimise a universal noise against a model")
    common.bench_args(p)
    attack_args(p)
    p.add_argument("model")
    p.add_argument("--attack", choices=ATTACKS.names(), default="sua")
    p.add_argument("--split-seed", type=seed_number, default=0, help="which attacker/unseen split of the forget people")
    common.model_args(p)
    p.add_argument("--out", required=True, help="noise .safetensors (resumed if it exists with the same settings)")
    p.set_defaults(func=cmd_attack, out_is_file=True, resumes=True)

    p = sub.add_parser("attack-eval", help="the recovery protocol with controls and stealth metrics")
    common.bench_args(p)
    attack_args(p)
    p.add_argument("model", help="the unlearned model")
    p.add_argument("--retrain", help="the retrain control (default: the model's world's, or the served world's)")
    p.add_argument("--vanilla", help="the model before unlearning, first column (default: as --retrain)")
    p.add_argument("--splits", type=positive_int, default=3, help="attacker/unseen splits to average over")
    p.add_argument("--no-extras", action="store_true", help="skip the no-stealth ablation and per-image PGD")
    p.add_argument("--budgets", type=float, nargs="*", default=[], help="eps (/255) of budget curves, e.g. 2 4 8 16")
    p.add_argument("--purifiers", nargs="*", default=[], help="denoisers to put in front of the model, e.g. jpeg")
    p.add_argument("--reference", action="store_true", help="also run the public code's settings (preset reference)")
    p.add_argument("--out", required=True, help="folder for report.json, report.md and the noises")
    p.set_defaults(func=cmd_attack_eval, resumes=True)

    p = sub.add_parser("mllmu-protocol", help="the reference SUA protocol on MLLMU-Bench's Test_Set")
    attack_args(p)
    common.model_args(p)
    p.add_argument("model", help="the unlearned model: folder, LoRA adapter folder or Hub id")
    p.add_argument("--mllmu", required=True, help="folder with MLLMU-Bench's parquet configs (Test_Set/ ...)")
    p.add_argument("--attack", choices=ATTACKS.names(), default="sua")
    p.add_argument("--attack-ids", type=int, nargs=2, default=[51, 100], metavar=("FIRST", "LAST"))
    p.add_argument("--test-ids", type=int, nargs=2, default=[1, 50], metavar=("FIRST", "LAST"))
    p.add_argument("--tasks", nargs="+", default=["cloze"], choices=("gen", "mc", "cloze"))
    p.add_argument("--out", required=True, help="folder for noise.safetensors, report.json and report.md")
    p.set_defaults(func=cmd_mllmu_protocol, resumes=True)
