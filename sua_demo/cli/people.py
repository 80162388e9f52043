"""`sua demo` and `sua enrol`: one person's answers, a bench person's or a visitor's own face taught, unlearned
and attacked with its controls."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from sua_demo.cli import common
from sua_demo.cli.flags import positive_int, seed_number
from sua_demo.core import shipped
from sua_demo.core.errors import BadValueError

DEMO_COLUMNS = {"vanilla": "before unlearning", "clean": "unlearned, clean", "delta": "unlearned + δ",
                "random": "+ random noise", "retrain_delta": "retrain + δ"}  # fmt: skip


def cmd_demo(args: argparse.Namespace) -> None:
    """The story of one person's photo, as the app's table tells it: the model before unlearning, the unlearned
    model clean, with the shipped δ, with random noise of the same ε, and the retrain control with δ. By default
    the model's first guided example (the person and photo where δ brings back most beyond its controls, as the
    app opens on), so the first run shows what the tool is for."""
    from sua_demo.engine import Engine
    from sua_demo.engine.answers import fold, mark

    eng = Engine(common.world())
    sess = eng.session(args.model)
    if sess.shipped_noise is None:
        raise BadValueError(f"{args.model} ships no noise in this world; choose one of {', '.join(demo_models())}")
    first = next(iter(eng.examples(sess)), None)
    pid = args.person or (int(first["person"]) if first else eng.bench.forget_ids[0])
    photo = args.photo if args.photo is not None else int(first["photo"]) if first and not args.person else 5
    x = eng.prepare(sess, eng.photo(pid, photo))
    story = eng.story(sess, x, eng.questions(pid), sess.shipped_noise, "gaussian", *eng.controls(sess))
    person = eng.person(pid)
    print(f"person {pid}: {person.name} ({eng.role(pid, sess.shipped_noise)}), photo {photo}; model {args.model}; "
          f"noise: {sess.noise_note} (ε {sess.shipped_noise.eps * 255:.0f}/255); {eng.world.title}")  # fmt: skip
    for row in story.rows:
        print(f"  Q: {row.question}\n     truth: {row.truth}")
        for column, title in DEMO_COLUMNS.items():
            if column in row.answers:
                said = row.answers[column]
                print(f"     {title:>17}: {fold(said) or '(empty)'} {mark(said, row.truth)}".rstrip())


def demo_models() -> list[str]:
    """The shipped unlearned models this world has (the first world ships RMU and SimNPO, the faithful one not)."""
    models = common.world().models
    return [m for m in shipped.UNLEARNED if (models / m).is_dir()]


def _visitor_facts(args: argparse.Namespace, bench, tokenizer) -> tuple[str, dict[str, str]]:  # type: ignore[no-untyped-def]
    """--name and --fact KEY=VALUE, with what is not given invented under --invent (and said so)."""
    from sua_demo.your_face.visitor import check_visitor, invent_visitor

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


def say_step(item: Any) -> None:
    """A finished step as a line on stdout; the step under way as one line on stderr rewritten in place."""
    from sua_demo.your_face.lifecycle import Progress

    if isinstance(item, Progress):
        print(f"\r{item.name}: pass {item.done} of {'at most ' * item.name.startswith('unlearn')}{item.total}",
              end="", file=sys.stderr, flush=True)  # fmt: skip
        return
    print(file=sys.stderr, flush=True)  # the pass counter's line ends; the step's own line follows
    print(f"{item.name} ({item.seconds:.0f} s): {item.line}", flush=True)


def cmd_enrol(args: argparse.Namespace) -> None:
    from sua_demo.attacks import load_noise
    from sua_demo.dataset import build_bench
    from sua_demo.models.loading import load_adapter
    from sua_demo.your_face import Visitor, usable_photos
    from sua_demo.your_face.lifecycle import LifecycleConfig, report_markdown, rule_steps, run_lifecycle
    from sua_demo.your_face.visitor import procedural_photos

    bench_cfg = common.world().bench
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
    stops = rule_steps(Path(args.model).parent, args.method)  # a shipped world's measured passes, if any
    cfg = LifecycleConfig(method=args.method, seed=args.seed, unlearn_stops=stops)
    print(f"{name}: {', '.join(f'{k} {v}' for k, v in facts.items())}; {len(photos)} photos")
    report = run_lifecycle(
        before,
        bench,
        Visitor(name, facts, photos),
        noise,
        cfg,
        on_step=say_step,
        out_dir=args.out,
    )
    print(report_markdown(report).split("\n## ")[0])


def add_commands(sub: Any) -> None:
    """A visitor's own person: taught, unlearned and attacked, with its controls."""
    p = sub.add_parser("enrol", help="teach the model a person from your photos, unlearn them, attack with controls")
    p.add_argument("photos", nargs="*", help="3-8 photos of one face (JPEG, PNG, WebP, GIF or BMP)")
    p.add_argument("--procedural", type=seed_number, metavar="SEED", help="instead of photos: a new procedural person")
    p.add_argument("--name", help="a made-up name (the embedded model knows its bench's words only)")
    p.add_argument("--fact", action="append", metavar="KEY=VALUE", help="birthplace, occupation, hobby or food")
    p.add_argument("--invent", action="store_true", help="invent the name and facts not given")
    p.add_argument("--method", choices=shipped.DEMO, default=shipped.DEFAULT, help="how the person is unlearned")
    world = common.world()
    p.add_argument("--model", default=str(world.models / "vanilla"), help="the model to teach (default: vanilla)")
    p.add_argument(
        "--noise",
        default=str(world.noise / shipped.DEFAULT / "delta_split0.safetensors"),
        help="the shipped δ to try (it never saw this person nor this model)",
    )
    p.add_argument("--seed", type=seed_number, default=0)
    p.add_argument("--out", required=True, help="folder for the taught adapter, the unlearned weights and the report")
    p.set_defaults(func=cmd_enrol)

    p = sub.add_parser("demo", help="one person's answers before and after unlearning, clean and with δ")
    p.add_argument("--model", default=shipped.DEFAULT, choices=demo_models(), help="a shipped unlearned model")
    p.add_argument("--person", type=positive_int, default=None, help="bench person id; default the first example")
    p.add_argument("--photo", type=int, choices=range(7), default=None, help="0-4 train, 5-6 held out")
    p.set_defaults(func=cmd_demo)
