"""Robust unlearning attacked as a defence must be (docs/robust.md): the adaptive attacks, then the reading.

    HF_HUB_OFFLINE=1 .venv/bin/python studies/robust_attacks.py --world 0 --models idk_robust idk
    HF_HUB_OFFLINE=1 .venv/bin/python studies/robust_attacks.py --world 0 --models idk_robust --read

Each variant resumes where it stopped when run again (δ files mid-fit, protocol records split by split):
- `restart0` … `restart4`: the attacker's δ only (`eval.protocol.attacker_delta`), the shipped recipe at 4x its
  steps from a random start of seed k, on splits 0 1 2, blind, into `studies/robust_attack_fits/<world
  folder>/<model>/restart<k>/` (committed as they finish: a later session's adaptive stage needs them);
- `adaptive`: per split, once its five restarts are fitted, the one whose δ ends with the lowest attacker-side loss
  (its own record) runs the rest of the recovery protocol (`eval.protocol.run_protocol`: every control) from that
  δ, read back: what a whole protocol of that restart would give, at a third of the cost of one per restart;
- `eps32`: the shipped recipe at 2ε (reported, not judged);
- `per_image`: the protocol's per-image PGD on each evaluated photo, the pixel channel's upper bound (reported).
The protocols write under `runs/faithful/robust_attacks/<world folder>/<model>/<variant>/` (1 MB a variant, not
shipped; the adaptive attack's under `adaptive/split<s>/`); each finished split's record (20 KB) is also kept,
committed, under `studies/robust_attack_fits/<world folder>/<model>/records/<variant>/`, which the reading reads.
The shipped attack is `<world>/noise/<model>/` (`sua build-faithful --attack --only <model>`). EOT over the photo
jitter is part of the shipped recipe (`eot=True`), so every variant has it; the defence has no randomness of its
own. The offsets ceiling is `studies/offsets.py --world faithful --models <model> retrain`.

`--read` asks each judged attack's δ (shipped, adaptive) every question on unseen people's held-out photos, on the
method and on its retrain control, and writes `robust_attacks/<model>/reading.json` and `.md`: the gains beyond the
control, the paired test against the controls, and the rule's sentence (`analysis/robust_reading.py`). The probes
of the report card come from the model's audit (`sua build-faithful --audit --only <model>`) once it exists.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
from dataclasses import replace
from pathlib import Path

from sua_demo.analysis.paired import against_controls
from sua_demo.analysis.robust_reading import Judged, card_probes, reading
from sua_demo.analysis.split_gains import attack_table, split_gains
from sua_demo.attacks import ATTACKS, AttackConfig, load_noise
from sua_demo.audit.run import LABELS
from sua_demo.core.config import faithful_bench
from sua_demo.core.io import atomic_write_text, write_json
from sua_demo.core.machine import describe
from sua_demo.dataset import build_bench
from sua_demo.dataset.records import Bench
from sua_demo.eval.metrics import exact_match
from sua_demo.eval.protocol import ProtocolConfig, attacker_delta, run_protocol
from sua_demo.eval.recovery import attack_split, protocol_groups, recovery_answers
from sua_demo.models.examples import ImageBank
from sua_demo.models.loading import load_adapter
from sua_demo.worlds.build import SHIPPED_PRECISION
from sua_demo.worlds.faithful import ATTACK_SPLITS, RUNS, world_dir

log = logging.getLogger("robust_attacks")
FITS = Path(__file__).resolve().parent / "robust_attack_fits"
SHIPPED = AttackConfig(precision=SHIPPED_PRECISION)
RESTARTS = 5
VARIANTS = {
    **{
        f"restart{k}": (replace(SHIPPED, steps=4 * SHIPPED.steps, random_start=True, seed=k), False)
        for k in range(RESTARTS)
    },
    "eps32": (replace(SHIPPED, eps=32 / 255), False),
    "per_image": (SHIPPED, True),
}
ADAPTIVE = "adaptive"
UNSEEN = "c_unseen_heldout"


def runs_dir(world: Path, model: str) -> Path:
    """Where a model's attack variants run (their δ files and per-split records: about 1 MB a variant, so under runs/,
    not checkpoints/); the reading beside the world's reports is what ships."""
    return RUNS / "robust_attacks" / world.name / model


def fits_dir(world: Path, model: str) -> Path:
    """Where the restarts' δ fits live (150 KB each, fifteen a model): committed as they finish, beside this script,
    because the adaptive attack's next stage needs all fifteen and one session fits about that many."""
    return FITS / world.name / model


def records_dir(world: Path, model: str, variant: str) -> Path:
    """Where a variant's finished per-split records are kept (20 KB each, committed beside the fits): what the
    reading's every-group table reads, so a reading can be written again after runs/ is gone."""
    return fits_dir(world, model) / "records" / variant


def keep_records(out: Path, kept: Path, splits: list[int]) -> None:
    """Copy the splits a protocol has finished in `out` to the committed `kept` folder."""
    for s in splits:
        if (out / f"split{s}.json").is_file():
            kept.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(out / f"split{s}.json", kept / f"split{s}.json")


def attack(world: Path, model: str, variants: list[str], splits: list[int], seed: int) -> None:
    """Each variant on `model`: the restarts' fits split by split (so a split's adaptive attack can start while
    later splits still fit), then the adaptive attack's protocols and the other variants', with every control;
    what is finished is read back, not run again."""
    bench = build_bench(faithful_bench(seed))
    fits, runs = fits_dir(world, model), runs_dir(world, model)
    if restarts := [v for v in variants if v.startswith("restart")]:
        method = load_adapter(world / model)
        bank = ImageBank(bench, method)
        for s in splits:
            for name in restarts:
                attacker_delta(s, bench, method, bank, ProtocolConfig(attack=VARIANTS[name][0]), fits / name)
        log.info("%s %s fitted on %s", model, " ".join(restarts), describe())
    for name in (v for v in variants if v not in restarts):
        if name == ADAPTIVE:
            for s, path in adaptive_deltas(fits, splits).items():
                out = runs / ADAPTIVE / f"split{s}"  # the kept restart's δ, read back by the protocol
                out.mkdir(parents=True, exist_ok=True)
                if not (out / path.name).is_file():
                    shutil.copyfile(path, out / path.name)
                _protocol(world, model, bench, VARIANTS[path.parent.name][0], False, [s], out)
                keep_records(out, records_dir(world, model, ADAPTIVE), [s])
            if missing := sorted(set(splits) - set(adaptive_deltas(fits, splits))):
                log.info("%s adaptive: splits %s wait for their restarts' fits", model, missing)
        else:
            _protocol(world, model, bench, *VARIANTS[name], splits, runs / name)
            keep_records(runs / name, records_dir(world, model, name), splits)
        log.info("%s %s done on %s", model, name, describe())


def _protocol(
    world: Path, model: str, bench: Bench, cfg: AttackConfig, extras: bool, splits: list[int], out: Path
) -> None:
    protocol = ProtocolConfig(attack=cfg, splits=splits, extras=extras)
    run_protocol(world / model, world / "retrain", bench, protocol, out, vanilla=world / "vanilla")


def adaptive_deltas(folder: Path, splits: list[int]) -> dict[int, Path]:
    """Per split, the restart whose δ ended with the lowest attacker-side loss (only finished restarts count)."""
    chosen = {}
    for s in splits:
        done = [folder / f"restart{k}" / f"delta_split{s}.safetensors" for k in range(RESTARTS)]
        done = [p for p in done if p.is_file()]
        if len(done) == RESTARTS:
            chosen[s] = min(done, key=lambda p: float(load_noise(p).meta["loss"]))
    return chosen


def judged(name: str, deltas: dict[int, Path], models: dict, banks: dict, bench: Bench) -> Judged:
    """One attack's δ per split, asked every question on unseen people's held-out photos, on the method (clean, δ,
    random noise of the same ε) and on the retrain control (clean, the same δ); gains in points, mean over splits."""
    gains, controls, right_delta, right_controls = [], [], [], [[], []]
    for s, path in sorted(deltas.items()):
        noise = load_noise(path)
        group = {UNSEEN: protocol_groups(bench, attack_split(bench, seed=s), tasks=("gen",))[UNSEEN]}
        randomly = ATTACKS.get("random")(models["method"], AttackConfig(eps=noise.eps))
        rand = randomly.run(banks["method"], [], progress=False)
        asked = {"clean": None, "δ": noise, "random": rand}
        _, said = recovery_answers(models["method"], banks["method"], group, asked)
        _, ctrl = recovery_answers(models["retrain"], banks["retrain"], group, {"clean": None, "δ": noise})

        def right(answers: dict, cond: str, asked: list = group[UNSEEN]) -> list[bool]:
            return [exact_match(a, e.item.answer) for a, e in zip(answers[cond][UNSEEN], asked, strict=True)]

        rate = lambda xs: 100 * sum(xs) / max(len(xs), 1)  # noqa: E731
        gains.append(rate(right(said, "δ")) - rate(right(said, "clean")))
        controls.append(rate(right(ctrl, "δ")) - rate(right(ctrl, "clean")))
        right_delta += right(said, "δ")
        right_controls[0] += right(said, "random")
        right_controls[1] += right(ctrl, "δ")
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    return Judged(name, mean(gains), mean(controls), against_controls(right_delta, right_controls))


def every_group(world: Path, model: str, splits: list[int]) -> str:
    """The shipped, adaptive and 2ε attacks that are finished, on groups a, b and c with every control: each split's
    own record (the adaptive's from the restart it chose, kept by `keep_records`)."""
    folders = {
        "shipped": world / "noise" / model,
        "adaptive (4x steps, 5 restarts)": records_dir(world, model, ADAPTIVE),
        "2ε (reported, not judged)": records_dir(world, model, "eps32"),
    }
    found = {}
    for name, where in folders.items():
        records = [where / f"split{s}.json" for s in splits]
        if all(r.is_file() for r in records):
            found[name] = split_gains({"splits": [json.loads(r.read_text())["result"] for r in records]})
    return attack_table(found) if found else ""


def card_row(world: Path, model: str) -> dict | None:
    """The model's row of the world's report card (`sua report-card` over its audits), None before its audit."""
    card = world / "audit" / "report_card.json"
    rows = json.loads(card.read_text())["rows"] if card.is_file() else []
    return next((r for r in rows if r["model"] == model), None)


def read(world: Path, model: str, splits: list[int], seed: int) -> dict:
    """The judged attacks that are finished, their numbers, the report card's probes once the model is audited, and
    the rule's sentence."""
    shipped = {s: world / "noise" / model / f"delta_split{s}.safetensors" for s in splits}
    attacks = {"shipped": {s: p for s, p in shipped.items() if p.is_file()}}
    attacks["adaptive (4x steps, 5 restarts)"] = adaptive_deltas(fits_dir(world, model), splits)
    finished = {n: d for n, d in attacks.items() if len(d) == len(splits)}
    if not finished:
        raise SystemExit(f"robust_attacks.py: no finished attack on {model} in {world} to read")
    bench = build_bench(faithful_bench(seed))  # the models and banks once, for every attack read
    models = {"method": load_adapter(world / model), "retrain": load_adapter(world / "retrain")}
    banks = {k: ImageBank(bench, m) for k, m in models.items()}
    rows = [judged(n, d, models, banks, bench) for n, d in finished.items()]
    probes = card_row(world, model)
    pending = [n for n in attacks if n not in finished]
    said = reading(model, rows, card_probes(probes, LABELS) if probes else [], pending)
    result = {
        "model": model,
        "world": seed,
        "splits": splits,
        "attacks": [
            {
                "name": r.name,
                "gain": r.gain,
                "control_gain": r.control_gain,
                "beyond": r.beyond,
                "only_delta": r.paired.only_first,
                "only_controls": r.paired.only_second,
                "p": r.paired.p,
            }
            for r in rows
            if r.paired
        ],  # fmt: skip
        "probes": probes and {p.name: p.beyond for p in card_probes(probes, LABELS)},
        "reading": said.word,
        "sentence": said.sentence,
        "machine": describe(),
    }
    out = world / "robust_attacks" / model
    write_json(out / "reading.json", result)
    table = "\n".join(
        f"| {a['name']} | {a['gain']:+.1f} | {a['control_gain']:+.1f} | {a['beyond']:+.1f} | "
        f"{a['only_delta']} / {a['only_controls']} | {a['p']:.3g} |"
        for a in result["attacks"]
    )
    head = (
        "| attack | gain (points) | retrain control | beyond | δ only / controls only | p |\n|---|---|---|---|---|---|"
    )
    title = f"# {model}, world {seed}: unseen people's held-out photos"
    cards = "".join(f"| {name} | {beyond:+.1f} |\n" for name, beyond in (result["probes"] or {}).items())
    cards = f"\n| the report card's probe | beyond its retrain control (points) |\n|---|---|\n{cards}" if cards else ""
    groups = every_group(world, model, splits)
    groups = (
        f"\n## Every group, every control (gain over the clean photo, points, mean ± sd over splits)\n\n{groups}"
        if groups
        else ""
    )
    said_md = f"{title}\n\n{head}\n{table}\n{cards}\n**{said.word}**: {said.sentence}\n{groups}"
    atomic_write_text(out / "reading.md", said_md)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--world", type=int, default=0, help="bench seed of a faithful world (0 ships)")
    ap.add_argument("--models", nargs="+", required=True)
    order = [*VARIANTS, ADAPTIVE]  # the adaptive attack's protocols after the restarts it chooses among
    ap.add_argument("--variants", nargs="+", choices=order, default=order)
    ap.add_argument("--splits", nargs="+", type=int, default=ATTACK_SPLITS)
    ap.add_argument("--read", action="store_true", help="read the finished attacks instead of running them")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    world = world_dir(args.world)
    for model in args.models:
        if args.read:
            print(json.dumps(read(world, model, args.splits, args.world), indent=2, ensure_ascii=False))
        else:
            attack(world, model, args.variants, args.splits, args.world)


if __name__ == "__main__":
    main()
