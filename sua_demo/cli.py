"""`sua ...` / `python -m sua_demo ...`: the batch interface over the same library the app uses."""

from __future__ import annotations

import argparse
import dataclasses
import errno
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from sua_demo.cli_flags import add_config_flags, config_from, fraction, positive_int, seed_number
from sua_demo.config import CHECKPOINTS, BenchConfig
from sua_demo.errors import BadValueError, SuaError

TINY = CHECKPOINTS / "tiny-llava"
log = logging.getLogger("sua")
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


def _bench(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from sua_demo.dataset import build_bench
    from sua_demo.dataset.mllmu import load_mllmu

    if getattr(args, "mllmu", None):
        return load_mllmu(args.mllmu, args.forget_split), BenchConfig()
    cfg = BenchConfig(n_people=args.people, forget_fraction=args.forget / 100, seed=args.bench_seed)
    return build_bench(cfg), cfg


def _load_model(args: argparse.Namespace, source: str):  # type: ignore[no-untyped-def]
    """load_adapter with the --dtype / --device / --device-map / --trust-remote-code options."""
    import torch

    from sua_demo.models import load_adapter

    device = getattr(args, "device", "cpu")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    device_map = getattr(args, "device_map", None)
    return load_adapter(
        source,
        dtype=getattr(args, "dtype", "float32"),
        device=None if device_map else device,
        device_map=device_map,
        trust_remote_code=getattr(args, "trust_remote_code", False),
    )


def cmd_bench_build(args: argparse.Namespace) -> None:
    from sua_demo.dataset.mllmu import write_mllmu

    bench, _ = _bench(args)
    out = write_mllmu(bench, args.out)
    print(f"wrote {len(bench.people)} people ({len(bench.forget_ids)} forget) in MLLMU-Bench layout to {out}")


def cmd_bench_sheet(args: argparse.Namespace) -> None:
    from sua_demo.dataset.faces import contact_sheet

    bench, _ = _bench(args)
    people = bench.people[: args.limit]
    images = [p.photos[0] for p in people]
    labels = [f"{p.id} {p.name} ({bench.split_of(p.id)})" for p in people]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    contact_sheet(images, labels).save(args.out)
    print(f"wrote {args.out}")


def cmd_finetune(args: argparse.Namespace) -> None:
    from sua_demo.config import TinyModelConfig, TrainConfig
    from sua_demo.training import finetune

    bench, bench_cfg = _bench(args)
    finetune(bench, bench_cfg, config_from(args, TrainConfig()), TinyModelConfig(), args.out)
    print(f"saved {args.out}")


def cmd_unlearn(args: argparse.Namespace) -> None:
    from sua_demo.config import UnlearnConfig
    from sua_demo.unlearn import unlearn

    bench, bench_cfg = _bench(args)
    cfg = config_from(args, UnlearnConfig(method=args.method))
    result = unlearn(args.start, bench, bench_cfg, cfg, args.out)
    print(f"saved {args.out}: {result.steps} steps, stopping rule met: {result.criterion_met}")


def cmd_eval(args: argparse.Namespace) -> None:
    from sua_demo.eval.evaluate import eval_groups, evaluate, markdown_table
    from sua_demo.io import atomic_write_text, write_json

    bench, _ = _bench(args)
    adapter = _load_model(args, args.model)
    report = evaluate(adapter, bench, groups=eval_groups(bench, args.photos_per_person))
    table = markdown_table(report)
    print(table)
    if args.out:
        write_json(Path(args.out), {"model": str(args.model), "report": report})
        atomic_write_text(Path(args.out).with_suffix(".md"), f"# Evaluation of {args.model}\n\n{table}")


def _attack_config(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from sua_demo.attacks.presets import preset

    cfg = config_from(args, preset(args.preset))
    every = getattr(args, "save_every", None)
    return dataclasses.replace(cfg, checkpoint_every=every) if every else cfg


def cmd_attack(args: argparse.Namespace) -> None:
    """Optimise one universal noise on the attacker's split and save it (resumes from --out if present)."""
    from sua_demo.attacks import ATTACKS
    from sua_demo.attacks.parallel import check_device_map, group, init_from_env
    from sua_demo.data import ImageBank, image_examples
    from sua_demo.eval.recovery import RETAIN_PEOPLE, attack_split, attacker_examples, split_meta

    check_device_map(args.device_map)
    cfg = _attack_config(args)
    if cfg.steps < 1 and args.attack != "random":
        raise BadValueError(f"--steps must be at least 1 for an optimised noise, got {cfg.steps}")
    if Path(args.out).is_dir():
        raise BadValueError(
            f"--out {args.out} is a folder; name the noise file, e.g. {Path(args.out) / 'delta.safetensors'}"
        )
    device = init_from_env()  # under `accelerate launch`: one process per GPU, each a shard of every batch
    if device is not None:
        args.device = str(device)
    bench, _ = _bench(args)
    split = attack_split(bench, args.attacker_fraction, args.split_seed)
    adapter = _load_model(args, args.model)
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

    bench, _ = _bench(args)
    cfg = ProtocolConfig(
        attack=_attack_config(args),
        attack_tasks=tuple(args.fit_tasks),
        splits=list(range(args.splits)),
        attacker_fraction=args.attacker_fraction,
        extras=not args.no_extras,
        budgets=tuple(args.budgets),
        purifiers=tuple(args.purifiers),
        reference=args.reference,
    )
    report = run_protocol(args.model, args.retrain, bench, cfg, args.out, vanilla=args.vanilla)
    print((Path(args.out) / "report.md").read_text() if report else "")


def cmd_mllmu_protocol(args: argparse.Namespace) -> None:
    """The reference protocol on MLLMU-Bench's Test_Set: attack one ID range, score another."""
    from sua_demo.dataset.mllmu import load_mllmu_test
    from sua_demo.mllmu_protocol import MllmuProtocolConfig, run_mllmu_protocol

    bench = load_mllmu_test(args.mllmu)
    adapter = _load_model(args, args.model)
    cfg = MllmuProtocolConfig(
        attack=_attack_config(args),
        attack_ids=tuple(args.attack_ids),
        test_ids=tuple(args.test_ids),
        tasks=tuple(args.tasks),
        attack_name=args.attack,
    )
    run_mllmu_protocol(adapter, bench, cfg, args.out)
    print((Path(args.out) / "report.md").read_text())


def cmd_build_all(args: argparse.Namespace) -> None:
    from sua_demo.build import build_all

    build_all(Path(args.out), only=args.only, bench_cfg=BenchConfig(seed=args.bench_seed))


def cmd_build_noises(args: argparse.Namespace) -> None:
    from sua_demo.build import build_noises

    build_noises(Path(args.models), Path(args.out), only=args.only, bench_cfg=BenchConfig(seed=args.bench_seed))


def cmd_audit(args: argparse.Namespace) -> None:
    from sua_demo.audit import run_audit

    name = Path(args.model).name
    noise = Path(args.noise_dir) if args.noise_dir else CHECKPOINTS / "noise" / name
    out = Path(args.out) if args.out else CHECKPOINTS / "audit" / name
    check_out(str(out))  # the default too, before the bench or a model is built
    bench, _ = _bench(args)
    run_audit(args.model, args.retrain, bench, noise if noise.is_dir() else None, out, splits=tuple(range(args.splits)))
    print((out / "audit.md").read_text())


def cmd_mia(args: argparse.Namespace) -> None:
    from sua_demo.eval.mia.own_data import own_data_report
    from sua_demo.io import write_json
    from sua_demo.models.loading import load_adapter

    report = own_data_report(load_adapter(args.model), args.members, args.nonmembers, args.attacks)
    if args.out:
        write_json(Path(args.out), report)
    print(f"{report['counts']['members']} members, {report['counts']['nonmembers']} non-members")
    for name, r in report["attacks"].items():
        print(f"{name:>7}: AUC {r['auc']:.3f} (mean score {r['members']:.3f} members, {r['nonmembers']:.3f} others)")


def cmd_membership(args: argparse.Namespace) -> None:
    from sua_demo.analysis.membership import membership_card, membership_markdown
    from sua_demo.io import atomic_write_text, write_json

    folder = Path(args.models)
    others = {"retrain_seed1": Path(args.second_retrain)} if args.second_retrain else {}
    card = membership_card(folder, args.names, others)
    out = Path(args.out) if args.out else folder
    write_json(out / "membership.json", card)
    atomic_write_text(out / "membership.md", membership_markdown(card))
    print(membership_markdown(card))


def cmd_build_worlds(args: argparse.Namespace) -> None:
    from sua_demo.worlds import build_worlds

    build_worlds(args.seeds, Path(args.root), Path(args.noise), Path(args.noise))
    print((Path(args.noise) / "worlds.md").read_text())


def cmd_build_faithful(args: argparse.Namespace) -> None:
    from sua_demo.faithful import (
        FAITHFUL,
        attack_world,
        attacked_worlds,
        audit_world,
        build_general,
        build_second_retrain,
        build_world,
        gates_over_worlds,
        ship_reports,
    )
    from sua_demo.worlds import compare_worlds

    if args.general_only:
        print(build_general())
        return
    for seed in args.seeds:
        if args.audit:
            print(audit_world(seed))
        elif args.second_retrain:
            print(build_second_retrain(seed))
        else:
            print(
                attack_world(seed, only=args.only)
                if args.attack
                else build_world(seed, args.only, validation=args.validation)
            )
        if args.validation:
            continue  # its models and gates stay in runs/ until the rule is adopted
        ship_reports(seed)  # a world beside the default one: its reports ship, its models stay in runs/
    gates_over_worlds()
    if args.attack:  # every faithful world attacked so far, beside the first world's summary
        compare_worlds(CHECKPOINTS / "noise" / "worlds.json", attacked_worlds(), FAITHFUL)
        print((FAITHFUL / "compare.md").read_text())


def cmd_train_ddpm(args: argparse.Namespace) -> None:
    from sua_demo.data import ImageBank
    from sua_demo.dataset import build_bench
    from sua_demo.denoisers.ddpm import save_ddpm, train_ddpm
    from sua_demo.models import load_adapter

    bench = build_bench()
    bank = ImageBank(bench, load_adapter(TINY / "vanilla"))
    images = bank.tensor[:, :5].reshape(-1, *bank.tensor.shape[2:])  # train photos only
    unet, loss = train_ddpm(images, steps=args.steps, seed=args.seed)
    save_ddpm(unet, args.out, {"steps": args.steps, "seed": args.seed, "final_loss": loss, "photos": len(images)})
    print(f"saved {args.out}: final noise-prediction MSE {loss:.4f}")


def cmd_train_dncnn(args: argparse.Namespace) -> None:
    from sua_demo.data import ImageBank
    from sua_demo.dataset import build_bench
    from sua_demo.denoisers.dncnn import train_dncnn
    from sua_demo.models import load_adapter

    bench = build_bench()
    bank = ImageBank(bench, load_adapter(TINY / "vanilla"))
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


def cmd_demo(args: argparse.Namespace) -> None:
    """Answer every image question about one forget person with the vanilla and the unlearned model."""
    from sua_demo.data import ImageBank, image_examples
    from sua_demo.dataset import build_bench
    from sua_demo.eval.evaluate import answer
    from sua_demo.models import load_adapter

    bench = build_bench()
    pid = bench.forget_ids[0] if args.person is None else args.person
    person = bench.person(pid)
    examples = image_examples(bench, [pid], "heldout", ("gen",), photos_per_person=1)
    rows = {}
    for name in ("vanilla", args.model):
        adapter = load_adapter(TINY / name)
        rows[name] = answer(adapter, ImageBank(bench, adapter), examples)
    print(f"person {pid}: {person.name} ({bench.split_of(pid)} set), held-out photo")
    for i, ex in enumerate(examples):
        print(f"  Q: {ex.item.question}\n     truth: {ex.item.answer}")
        for name, answers in rows.items():
            print(f"     {name:>10}: {answers[i]}")


def _visitor_facts(args: argparse.Namespace, bench, tokenizer) -> tuple[str, dict[str, str]]:  # type: ignore[no-untyped-def]
    """--name and --fact KEY=VALUE, with what is not given invented under --invent (and said so)."""
    from sua_demo.enrol.visitor import check_visitor, invent_visitor

    given: dict[str, str] = {}
    for pair in args.fact or []:
        key, sep, value = pair.partition("=")
        if not sep:
            raise BadValueError(f"--fact takes KEY=VALUE (as occupation=baker), not {pair[:40]!r}")
        given[key.strip()] = value.strip()
    name, invented = invent_visitor(bench, args.seed, tokenizer)
    if not args.invent and (not args.name or len(given) < len(invented)):
        raise BadValueError(f"give --name and every --fact ({', '.join(invented)}), or --invent to fill in the rest")
    filled = sorted(k for k in invented if k not in given) + ([] if args.name else ["name"])
    if filled:
        print(f"invented: {', '.join(filled)}")
    return check_visitor(args.name or name, {**invented, **given}, tokenizer)


def cmd_enrol(args: argparse.Namespace) -> None:
    from sua_demo.attacks import load_noise
    from sua_demo.dataset import build_bench
    from sua_demo.enrol import Visitor, usable_photos
    from sua_demo.enrol.visitor import procedural_photos
    from sua_demo.lifecycle import LifecycleConfig, report_markdown, run_lifecycle
    from sua_demo.models.loading import load_adapter

    bench_cfg = BenchConfig()
    bench = build_bench(bench_cfg)
    if args.procedural is not None and args.photos:
        raise BadValueError("give photos or --procedural SEED, not both")
    if args.procedural is not None:
        photos, notes = procedural_photos(args.procedural, bench_cfg, 6), []
    else:
        photos, notes = usable_photos(list(args.photos))
    for note in notes:
        print(note)
    before = load_adapter(args.model)
    name, facts = _visitor_facts(args, bench, before.tokenizer)
    noise = load_noise(args.noise, before.image_size) if args.noise else None
    cfg = LifecycleConfig(method=args.method, seed=args.seed)
    print(f"{name}: {', '.join(f'{k} {v}' for k, v in facts.items())}; {len(photos)} photos")
    report = run_lifecycle(
        before,
        bench,
        Visitor(name, facts, photos),
        noise,
        cfg,
        on_step=lambda s: print(f"{s.name} ({s.seconds:.0f} s): {s.line}"),
        out_dir=args.out,
    )
    print(report_markdown(report).split("\n## ")[0])


def _bench_args(p: argparse.ArgumentParser) -> None:
    bench = BenchConfig()  # the shipped checkpoints' bench, so that no flag means the same people
    p.add_argument("--people", type=positive_int, default=bench.n_people, help="number of fictitious people")
    p.add_argument(
        "--forget", type=int, default=round(bench.forget_fraction * 100), choices=(5, 10, 15), help="forget split, %%"
    )
    p.add_argument("--bench-seed", type=int, default=bench.seed)
    p.add_argument("--mllmu", help="folder with MLLMU-Bench-format parquet instead of the synthetic bench")
    p.add_argument("--forget-split", default="forget_10", help="with --mllmu: which forget_K folder")


def _model_args(p: argparse.ArgumentParser) -> None:
    from sua_demo.models.loading import DTYPE_CHOICES

    p.add_argument("--dtype", choices=DTYPE_CHOICES, default="auto", help="auto: bf16/fp16 on GPU, float32 on CPU")
    p.add_argument("--device", default="auto", help="auto (cuda if there is one), cpu, cuda, cuda:1 ...")
    p.add_argument("--device-map", default=None, help="'auto': let accelerate spread a large model over devices")
    p.add_argument("--trust-remote-code", action="store_true", help="run model code from the model folder / Hub")


def parser() -> argparse.ArgumentParser:
    """`sua`'s commands, one group of sub-commands per room: the data and models, the attack, the builds."""
    ap = argparse.ArgumentParser(prog="sua", description=__doc__)
    ap.add_argument("-v", "--verbose", action="store_true")
    sub = ap.add_subparsers(dest="command", required=True)
    _data_commands(sub)
    _attack_commands(sub)
    _build_commands(sub)
    _measure_commands(sub)
    _face_commands(sub)
    return ap


def _data_commands(sub: Any) -> None:
    """The bench and the models: build or look at the bench, fine-tune, unlearn, evaluate."""
    bench = sub.add_parser("bench", help="build or look at the benchmark").add_subparsers(
        dest="bench_command", required=True
    )
    p = bench.add_parser("build", help="write the synthetic bench as MLLMU-Bench parquet")
    _bench_args(p)
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_bench_build)
    p = bench.add_parser("sheet", help="contact sheet PNG of the people")
    _bench_args(p)
    p.add_argument("--out", default="bench_sheet.png")
    p.add_argument("--limit", type=positive_int, default=100, help="at most this many people on the sheet")
    p.set_defaults(func=cmd_bench_sheet, out_is_file=True)

    from sua_demo.config import TrainConfig

    p = sub.add_parser("finetune", help="train the tiny LLaVA on the bench (vanilla or retrain control)")
    _bench_args(p)
    p.add_argument("--out", required=True)
    add_config_flags(p, TrainConfig, TRAIN_FLAGS)
    p.set_defaults(func=cmd_finetune)

    from sua_demo.config import UnlearnConfig
    from sua_demo.unlearning import METHODS

    p = sub.add_parser("unlearn", help="unlearn the forget people from a fine-tuned model")
    _bench_args(p)
    p.add_argument("--method", required=True, choices=METHODS.names())
    p.add_argument("--start", default=str(TINY / "vanilla"), help="model folder to unlearn from")
    p.add_argument("--out", required=True)
    add_config_flags(p, UnlearnConfig, UNLEARN_FLAGS)
    p.set_defaults(func=cmd_unlearn)

    p = sub.add_parser("eval", help="accuracy and refusal on forget/retain, train/held-out photos")
    _bench_args(p)
    p.add_argument("model", help="model folder (or LoRA adapter folder)")
    _model_args(p)
    p.add_argument(
        "--photos-per-person", type=positive_int, default=None, help="only the first k photos of each split per person"
    )
    p.add_argument("--out", help="write the JSON report here (and a .md beside it)")
    p.set_defaults(func=cmd_eval, out_is_file=True)


def _attack_args(p: argparse.ArgumentParser) -> None:
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


def _attack_commands(sub: Any) -> None:
    """One noise, the recovery protocol with its controls, and the reference protocol on MLLMU-Bench."""
    from sua_demo.attacks import ATTACKS

    p = sub.add_parser("attack", help="optimise a universal noise against a model")
    _bench_args(p)
    _attack_args(p)
    p.add_argument("model")
    p.add_argument("--attack", choices=ATTACKS.names(), default="sua")
    p.add_argument("--split-seed", type=int, default=0, help="which attacker/unseen split of the forget people")
    _model_args(p)
    p.add_argument("--out", required=True, help="noise .safetensors (resumed if it exists with the same settings)")
    p.set_defaults(func=cmd_attack, out_is_file=True, resumes=True)

    p = sub.add_parser("attack-eval", help="the recovery protocol with controls and stealth metrics")
    _bench_args(p)
    _attack_args(p)
    p.add_argument("model", help="the unlearned model")
    p.add_argument("--retrain", default=str(TINY / "retrain"), help="the retrain control")
    p.add_argument(
        "--vanilla", default=str(TINY / "vanilla"), help="the model before unlearning, for the report's first column"
    )
    p.add_argument("--splits", type=positive_int, default=3, help="attacker/unseen splits to average over")
    p.add_argument("--no-extras", action="store_true", help="skip the no-stealth ablation and per-image PGD")
    p.add_argument("--budgets", type=float, nargs="*", default=[], help="eps (/255) of budget curves, e.g. 2 4 8 16")
    p.add_argument("--purifiers", nargs="*", default=[], help="denoisers to put in front of the model, e.g. jpeg")
    p.add_argument("--reference", action="store_true", help="also run the public code's settings (preset reference)")
    p.add_argument("--out", required=True, help="folder for report.json, report.md and the noises")
    p.set_defaults(func=cmd_attack_eval, resumes=True)

    p = sub.add_parser("mllmu-protocol", help="the reference SUA protocol on MLLMU-Bench's Test_Set")
    _attack_args(p)
    _model_args(p)
    p.add_argument("model", help="the unlearned model: folder, LoRA adapter folder or Hub id")
    p.add_argument("--mllmu", required=True, help="folder with MLLMU-Bench's parquet configs (Test_Set/ ...)")
    p.add_argument("--attack", choices=ATTACKS.names(), default="sua")
    p.add_argument("--attack-ids", type=int, nargs=2, default=[51, 100], metavar=("FIRST", "LAST"))
    p.add_argument("--test-ids", type=int, nargs=2, default=[1, 50], metavar=("FIRST", "LAST"))
    p.add_argument("--tasks", nargs="+", default=["cloze"], choices=("gen", "mc", "cloze"))
    p.add_argument("--out", required=True, help="folder for noise.safetensors, report.json and report.md")
    p.set_defaults(func=cmd_mllmu_protocol, resumes=True)


def _measure_commands(sub: Any) -> None:
    """Membership and forget quality: on a user's own items, or on a world's models."""
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
    p.add_argument("--names", nargs="+", default=["vanilla", "idk", "grad_diff"], help="the models to read")
    p.add_argument("--second-retrain", help="a retrain control from another seed: its forget quality should be high")
    p.add_argument("--out", help="folder for membership.json / .md (default: the world's folder)")
    p.set_defaults(func=cmd_membership)

    p = sub.add_parser("report-card", help="every audited method against every probe, with a sentence per method")
    p.add_argument("--audits", default=str(CHECKPOINTS / "audit"), help="a folder of <model>/audit.json")
    p.add_argument("--membership", help="a membership.json of the same models (sua membership)")
    p.add_argument("--out", help="folder for report_card.json / .md (default: the audits folder)")
    p.set_defaults(func=cmd_report_card)


def _build_commands(sub: Any) -> None:
    """Rebuilding what ships (models, noises, audits, other worlds, denoisers) and the demo."""
    p = sub.add_parser("build-all", help="rebuild every shipped checkpoint from scratch, deterministically")
    p.add_argument("--out", default=str(TINY))
    p.add_argument("--only", nargs="*", help="build only these checkpoints (and what they need)")
    p.add_argument("--bench-seed", type=int, default=BenchConfig.seed, help="another world: the bench's seed")
    p.set_defaults(func=cmd_build_all)

    p = sub.add_parser("build-noises", help="rebuild the shipped noises and their recovery reports")
    p.add_argument("--models", default=str(TINY))
    p.add_argument("--out", default=str(CHECKPOINTS / "noise"))
    p.add_argument("--only", nargs="*")
    p.add_argument("--bench-seed", type=int, default=BenchConfig.seed, help="the world the models were built on")
    p.set_defaults(func=cmd_build_noises)

    p = sub.add_parser("audit", help="the residual-knowledge audit: SUA beside quantization, relearning, soft prompts")
    _bench_args(p)
    p.add_argument("model", help="the unlearned model (a folder)")
    p.add_argument("--retrain", default=str(TINY / "retrain"), help="the retrain control: every method's control")
    p.add_argument("--noise-dir", help="folder of delta_split<N>.safetensors (default: the shipped noises)")
    p.add_argument("--splits", type=positive_int, default=3, help="attacker/unseen splits to average over")
    p.add_argument("--out", help="folder for audit.json and audit.md (default: checkpoints/audit/<model>)")
    p.set_defaults(func=cmd_audit)

    p = sub.add_parser("build-worlds", help="other worlds (bench seeds) with the shipped recipes, and their summary")
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    p.add_argument("--root", default="runs/worlds", help="where the other worlds' models and noises are built")
    p.add_argument("--noise", default=str(CHECKPOINTS / "noise"), help="the shipped noises; worlds.json goes here")
    p.set_defaults(func=cmd_build_worlds)

    p = sub.add_parser("build-faithful", help="the faithful world (docs/world.md): shared tower, then its models")
    p.add_argument("--seeds", type=int, nargs="+", default=[0], help="bench seeds; 0 is the one that ships")
    p.add_argument("--only", nargs="*", help="build (or with --attack, attack) only these models")
    step = p.add_mutually_exclusive_group()  # one step a run: each is its own resumable command
    step.add_argument("--general-only", action="store_true", help="only the shared tower and general model")
    step.add_argument("--attack", action="store_true", help="attack the built worlds' demo models (3 splits, controls)")
    step.add_argument("--audit", action="store_true", help="audit the attacked worlds' demo models (every probe)")
    step.add_argument("--second-retrain", action="store_true", help="the retrain control again from training seed 1")
    step.add_argument("--validation", action="store_true",
                      help="the unlearned models of the validation-photo stopping rules (faithful.VALIDATION_RULES), "
                      "into runs/faithful/validation/")  # fmt: skip
    p.set_defaults(func=cmd_build_faithful)

    p = sub.add_parser("train-ddpm", help="train the DDPM purifier's UNet on bench photos (small-t range)")
    p.add_argument("--out", default=str(CHECKPOINTS / "denoisers" / "ddpm"))
    p.add_argument("--steps", type=positive_int, default=3000)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=cmd_train_ddpm)

    p = sub.add_parser("train-dncnn", help="train the DnCNN denoiser on bench photos")
    p.add_argument("--out", default=str(CHECKPOINTS / "denoisers" / "dncnn.safetensors"))
    p.add_argument("--steps", type=positive_int, default=800)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=cmd_train_dncnn, out_is_file=True)

    p = sub.add_parser("demo", help="ask the vanilla and an unlearned model about a forget-set person")
    p.add_argument("--model", default="idk", help="shipped unlearned model name")
    p.add_argument("--person", type=positive_int, default=None, help="bench person id; default the first forget person")
    p.set_defaults(func=cmd_demo)


def cmd_report_card(args: argparse.Namespace) -> None:
    from sua_demo.audit.report_card import card_markdown, report_card
    from sua_demo.io import atomic_write_text, write_json

    card = report_card(args.audits, args.membership)
    out = Path(args.out or args.audits)
    write_json(out / "report_card.json", card)
    atomic_write_text(out / "report_card.md", card_markdown(card))
    print(card_markdown(card))


def _face_commands(sub: Any) -> None:
    """A visitor's own person: taught, unlearned and attacked, with its controls."""
    p = sub.add_parser("enrol", help="teach the model a person from your photos, unlearn them, attack with controls")
    p.add_argument("photos", nargs="*", help="3-8 photos of one face (JPEG, PNG, WebP, GIF or BMP)")
    p.add_argument("--procedural", type=seed_number, metavar="SEED", help="instead of photos: a new procedural person")
    p.add_argument("--name", help="a made-up name (the embedded model knows its bench's words only)")
    p.add_argument("--fact", action="append", metavar="KEY=VALUE", help="birthplace, occupation, hobby or food")
    p.add_argument("--invent", action="store_true", help="invent the name and facts not given")
    p.add_argument("--method", choices=("idk", "grad_diff"), default="idk", help="how the person is unlearned")
    p.add_argument("--model", default=str(TINY / "vanilla"), help="the model to teach (default: the shipped vanilla)")
    p.add_argument(
        "--noise",
        default=str(CHECKPOINTS / "noise" / "idk" / "delta_split0.safetensors"),
        help="the shipped δ to try (it never saw this person nor this model)",
    )
    p.add_argument("--seed", type=seed_number, default=0)
    p.add_argument("--out", required=True, help="folder for the taught adapter, the unlearned weights and the report")
    p.set_defaults(func=cmd_enrol)


def check_out(out: str, is_file: bool = False) -> None:
    """`--out` can be written, said in one line before the first step: a run of hours must not fail at its end
    because its folder is read-only or its path runs through a regular file."""
    target = Path(out)
    if not is_file and target.exists() and not target.is_dir():
        raise SuaError(f"--out {out} is a file, not a folder; name a folder for the results")
    folder = target.parent if is_file else target
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise SuaError(f"--out {out} is under {folder}, which is a file, not a folder; choose another --out")
    if not writable(folder):
        raise SuaError(f"--out {out}: the folder {folder} is read-only here; choose a folder you can write to")


def writable(folder: Path) -> bool:
    """Whether a file can be made in `folder`: asked of the permissions, then tried (a read-only mount, or
    permissions that root ignores, only show when one writes)."""
    if not os.access(folder, os.W_OK | os.X_OK):
        return False
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


FULL = (errno.ENOSPC, errno.EDQUOT)
DENIED = (errno.EACCES, errno.EPERM, errno.EROFS)


def write_failure(err: OSError, args: argparse.Namespace) -> SuaError | None:
    """A full disk or a refused write while a command writes, as one line; None for any other OSError."""
    where = getattr(args, "out", None) or err.filename or "its output"
    if err.errno in FULL:
        again = "run again: it resumes from its last checkpoint" if getattr(args, "resumes", False) else "run again"
        return SuaError(f"the disk is full while writing {where}; free space and {again}")
    if err.errno in DENIED:
        return SuaError(f"could not write {where}: permission denied or a read-only disk; choose a writable --out")
    return None


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if not args.verbose:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # per-shard bars of tiny models are noise; ours stay
    try:
        if getattr(args, "out", None):
            check_out(args.out, getattr(args, "out_is_file", False))
        args.func(args)
    except SuaError as err:
        print(f"sua: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        failure = write_failure(err, args)
        if failure is None:
            raise
        log.info("write failed: %s", err)
        print(f"sua: error: {failure}", file=sys.stderr)
        return 2
    return 0
