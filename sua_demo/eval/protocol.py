"""`sua attack-eval`: the full recovery protocol with controls and stealth, over several attacker splits.

Per split: delta is optimised on the unlearned model (attacker's images only), then measured on every
group, against clean images and random noise of the same eps. Controls: the same delta on the retrain
model (never saw the forget people) and on vanilla; and a delta optimised against the retrain model
itself, which measures how much an answer delta can "write in" on its own. Optional studies: the stealth
ablation, per-image PGD on both models (the bound on what eps can do to a seen image, and its write-in
ceiling), budget curves over eps, recovery through each purifier, and the public code's settings.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from sua_demo.attacks import ATTACKS, AttackConfig, Noise
from sua_demo.attacks.per_image import per_image_pgd
from sua_demo.attacks.presets import preset
from sua_demo.core.errors import BadValueError
from sua_demo.core.io import atomic_write_text, write_json
from sua_demo.core.machine import describe
from sua_demo.dataset.records import Bench, Task
from sua_demo.denoisers import DENOISERS, build_denoiser
from sua_demo.eval.evaluate import Scores, answer, score
from sua_demo.eval.recovery import (
    ATTACKER_FRACTION,
    FIT_TASKS,
    GROUPS,
    RETAIN_PEOPLE,
    attack_split,
    attacker_examples,
    protocol_groups,
    recovery,
    split_meta,
)
from sua_demo.eval.report import markdown
from sua_demo.eval.stealth import denoise_shift, detector_auroc, embedding_cosines, pixel_metrics
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, ImageBank
from sua_demo.models.loading import load_adapter

log = logging.getLogger(__name__)
CURVE_GROUPS = ("a_attacker_images", "b_attacker_heldout", "c_unseen_heldout", "retain_heldout")


@dataclass
class ProtocolConfig:
    attack: AttackConfig = field(default_factory=AttackConfig)
    attack_tasks: tuple[Task, ...] = FIT_TASKS  # the tasks delta is fitted on (every task is measured)
    splits: list[int] = field(default_factory=lambda: [0, 1, 2])  # >= 3 attacker/unseen splits for a mean +- sd
    attacker_fraction: float = ATTACKER_FRACTION
    retain_people: int = RETAIN_PEOPLE
    extras: bool = True  # every split: SUA without the stealth term; first split: per-image PGD on both models
    budgets: tuple[float, ...] = ()  # eps (/255) of the budget curves, on the first `study_splits` splits
    purifiers: tuple[str, ...] = ()  # denoisers whose D(x + delta) recovery is set beside x + delta
    reference: bool = False  # the public code's settings (attacks/presets.py) beside the recipe
    study_splits: int = 3  # how many splits the budget, purification and reference studies run on
    per_image_steps: int = 100  # the per-image PGD bound's steps (constant 1/255, no EOT), on the first split

    def check(self) -> None:
        """Every setting a run would trip on, refused before hours of optimisation rather than after."""
        if not self.splits:
            raise BadValueError("the protocol needs at least one attacker/unseen split (--splits >= 1)")
        if not 0 < self.attacker_fraction < 1:
            raise BadValueError(f"attacker_fraction must be between 0 and 1 (exclusive), got {self.attacker_fraction}")
        bad = [b for b in self.budgets if not 0 < b <= 255]
        if bad:
            raise BadValueError(f"budgets are eps in 1/255, each in (0, 255]; got {bad}")
        for name in self.purifiers:
            DENOISERS.get(name)  # an unknown name raises with the list of known ones


def _gain(rec: dict[str, dict[str, dict[str, float]]], cond: str, group: str, key: str = "gen_em") -> float:
    return rec[cond][group][key] - rec["clean"][group][key]


def _gen(groups: dict[str, list[Example]], names: tuple[str, ...] = CURVE_GROUPS) -> dict[str, list[Example]]:
    return {g: [e for e in groups[g] if e.item.task == "gen"] for g in names}


def stealth_report(
    adapter: VisionLanguageAdapter, bank: ImageBank, groups: dict, noises: dict[str, Noise], denoiser_name: str
) -> dict[str, Any]:
    """Pixel metrics and embedding cosines of each noise on unseen held-out photos, and the detector AUROC."""
    denoiser = build_denoiser(denoiser_name)
    x = bank.get(list({(e.person_id, e.photo): e for e in groups["c_unseen_heldout"]}.values()))
    clean_scores = denoise_shift(adapter, denoiser, x)
    out: dict[str, Any] = {"clean_cos_denoised": float((1 - clean_scores).mean())}
    for name, noise in noises.items():
        noisy = noise.apply(x)
        out[name] = {
            **pixel_metrics(x, noisy),
            **embedding_cosines(adapter, denoiser, x, noisy),
            "detector_auroc": detector_auroc(clean_scores, denoise_shift(adapter, denoiser, noisy)),
        }
    return out


@torch.inference_mode()
def purified_recovery(
    adapter: VisionLanguageAdapter, bank: ImageBank, groups: dict[str, list[Example]], noise: Noise, name: str
) -> dict[str, Scores]:
    """Scores on D(x + delta): does delta survive a purifier put in front of the model?"""
    denoiser = build_denoiser(name)
    out = {}
    for g, ex in groups.items():
        x = bank.get(ex)
        assert x is not None
        images = torch.cat([denoiser(noise.apply(x[i : i + 64])) for i in range(0, len(x), 64)])
        out[g] = score(ex, answer(adapter, bank, ex, images=images), adapter.refusals)
    return out


def per_image_bound(
    models: dict[str, VisionLanguageAdapter],
    banks: dict[str, ImageBank],
    own: list[Example],
    acfg: AttackConfig,
    cfg: ProtocolConfig,
    progress: bool,
) -> dict[str, dict[str, Any]]:
    """The upper bound a universal δ is read against: a δ per image on the attacker's own photos
    (`cfg.per_image_steps` constant steps of 1/255, no EOT; 100 by default), for the unlearned model and its
    retrain ceiling."""
    pgd_cfg = replace(acfg, eot=False, alpha_schedule="constant", alpha=1 / 255, steps=cfg.per_image_steps)
    out = {}
    for role in ("unlearned", "retrain"):
        adv = per_image_pgd(models[role], banks[role], own, pgd_cfg, progress=progress)
        out[role] = {
            "clean": score(own, answer(models[role], banks[role], own), models[role].refusals),
            "pgd": score(own, answer(models[role], banks[role], own, images=adv), models[role].refusals),
        }
    return out


RESTART_STRIDE = 1000  # seeds a split's draws apart from another restart's: far more splits than any study runs


def split_attack(attack: AttackConfig, split_seed: int) -> AttackConfig:
    """The attack as one split runs it: its draws (random start, batches, jitter) seeded by the split and by the
    attack's own seed, so that restarts of one split start apart. Seed 0, every shipped recipe's, gives the split's
    seed alone (the shipped noises' draws). The attack's seed once gave way to the split's entirely, and five
    "restarts" of a split were one run five times."""
    return replace(attack, seed=RESTART_STRIDE * attack.seed + split_seed)


def attacker_delta(
    seed: int,
    bench: Bench,
    model: VisionLanguageAdapter,
    bank: ImageBank,
    cfg: ProtocolConfig,
    out_dir: Path,
    progress: bool = True,
) -> Noise:
    """The δ one split's attacker fits on the unlearned model, saved (and resumed) as `delta_split<seed>` in
    `out_dir`: the split's first and costliest step, and all that ranking a restart needs (its attacker-side loss),
    so a study can fit many restarts and run the rest of the split only on the one it keeps."""
    split = attack_split(bench, cfg.attacker_fraction, seed)
    acfg = split_attack(cfg.attack, seed)
    return ATTACKS.get("sua")(model, acfg).run(
        bank,
        attacker_examples(bench, split, cfg.attack_tasks),
        checkpoint=out_dir / f"delta_split{seed}.safetensors",
        progress=progress,
        meta={**split_meta(split), "denoiser": acfg.denoiser},
    )


def run_split(
    seed: int,
    bench: Bench,
    models: dict[str, VisionLanguageAdapter],
    banks: dict[str, ImageBank],
    cfg: ProtocolConfig,
    out_dir: Path,
    progress: bool,
) -> dict[str, Any]:
    split = attack_split(bench, cfg.attacker_fraction, seed)
    examples = attacker_examples(bench, split, cfg.attack_tasks)
    groups = protocol_groups(bench, split, cfg.retain_people)
    acfg, meta = split_attack(cfg.attack, seed), split_meta(split)
    unl, ret = models["unlearned"], models["retrain"]
    study = seed in cfg.splits[: cfg.study_splits]

    def optimise(attack: str, target: str, name: str, config: AttackConfig = acfg) -> Noise:
        denoiser = "none" if attack == "sua_plain" else config.denoiser
        return ATTACKS.get(attack)(models[target], config).run(
            banks[target],
            examples,
            checkpoint=out_dir / f"{name}_split{seed}.safetensors",
            progress=progress,
            meta={**meta, "denoiser": denoiser},
        )

    delta = attacker_delta(seed, bench, unl, banks["unlearned"], cfg, out_dir, progress)
    rand = ATTACKS.get("random")(unl, acfg).run(banks["unlearned"], examples)
    delta_ret = optimise("sua", "retrain", "delta_retrain")
    result: dict[str, Any] = {
        "split": asdict(split),
        "unlearned": recovery(unl, banks["unlearned"], groups, {"clean": None, "sua": delta, "random": rand}),
        "retrain": recovery(ret, banks["retrain"], groups, {"clean": None, "sua": delta, "sua_on_retrain": delta_ret}),
    }
    if "vanilla" in models:
        result["vanilla"] = recovery(models["vanilla"], banks["vanilla"], groups, {"clean": None, "sua": delta})
    noises = {"sua": delta, "random": rand}
    if cfg.extras:
        noises["sua_plain"] = optimise("sua_plain", "unlearned", "delta_plain")
        result["unlearned_plain"] = recovery(
            unl, banks["unlearned"], groups, {"clean": None, "sua": noises["sua_plain"]}
        )
    if cfg.extras and seed == cfg.splits[0]:
        result["per_image_pgd"] = per_image_bound(models, banks, groups["a_attacker_images"], acfg, cfg, progress)
    if study and cfg.reference:
        # the public code's settings, in the protocol's precision (shipped artefacts are fp32 on every CPU)
        ref_cfg = replace(preset("reference"), seed=seed, precision=acfg.precision)
        ref = optimise("sua", "unlearned", "delta_reference", ref_cfg)
        result["reference"] = recovery(unl, banks["unlearned"], groups, {"clean": None, "sua": ref})
        noises["reference"] = ref
    if study and cfg.purifiers:
        curve = _gen(groups)
        result["purification"] = {
            name: purified_recovery(unl, banks["unlearned"], curve, delta, name) for name in cfg.purifiers
        }
    if study and cfg.budgets:
        result["budget"] = budget_points(seed, cfg, models, banks, groups, examples, meta, out_dir, progress, delta)
    result["stealth"] = stealth_report(unl, banks["unlearned"], groups, noises, acfg.denoiser)
    result["delta_file"] = f"delta_split{seed}.safetensors"
    return result


def budget_points(
    seed: int,
    cfg: ProtocolConfig,
    models: dict[str, VisionLanguageAdapter],
    banks: dict[str, ImageBank],
    groups: dict[str, list[Example]],
    examples: list[Example],
    meta: dict[str, Any],
    out_dir: Path,
    progress: bool,
    recipe_delta: Noise,
) -> dict[str, Any]:
    """Per eps: generation recovery on each curve group (clean and with delta) and the stealth figures."""
    unl, bank = models["unlearned"], banks["unlearned"]
    curve = _gen(groups)
    clean = recovery(unl, bank, curve, {"clean": None})["clean"]
    points: dict[str, Any] = {}
    for eps in cfg.budgets:
        if abs(eps / 255 - cfg.attack.eps) < 1e-9:
            noise = recipe_delta
        else:
            acfg = replace(split_attack(cfg.attack, seed), eps=eps / 255, alpha=cfg.attack.alpha * min(1.0, eps / 16))
            noise = ATTACKS.get("sua")(unl, acfg).run(
                bank,
                examples,
                checkpoint=out_dir / f"delta_eps{eps:g}_split{seed}.safetensors",
                progress=progress,
                meta={**meta, "denoiser": acfg.denoiser},
            )
        rec = recovery(unl, bank, curve, {"sua": noise})["sua"]
        stealth = stealth_report(unl, bank, groups, {"sua": noise}, cfg.attack.denoiser)["sua"]
        points[f"{eps:g}"] = {
            "gain": {g: rec[g]["gen_em"] - clean[g]["gen_em"] for g in curve},
            "em": {g: rec[g]["gen_em"] for g in curve},
            "psnr": stealth["psnr"],
            "ssim": stealth["ssim"],
            "detector_auroc": stealth["detector_auroc"],
        }
    return points


def _stats(values: list[float]) -> dict[str, float]:
    return {"mean": float(np.mean(values)), "sd": float(np.std(values)), "n": len(values)}


def summarise(splits: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean and sd over splits of the gains (points of generation EM) that the claims rest on."""
    rows: dict[str, list[float]] = {}

    def add(key: str, value: float, scale: float = 100) -> None:
        rows.setdefault(key, []).append(scale * value)

    for s in splits:
        for g in GROUPS:
            u = s["unlearned"]
            add(f"unlearned/{g}/clean", u["clean"][g]["gen_em"])
            add(f"unlearned/{g}/sua", u["sua"][g]["gen_em"])
            add(f"unlearned/{g}/gain_sua", _gain(u, "sua", g))
            add(f"unlearned/{g}/gain_random", _gain(u, "random", g))
            for key in ("refusal", "first_token_refusal"):
                add(f"unlearned/{g}/{key}_clean", u["clean"][g][f"gen_{key}"])
                add(f"unlearned/{g}/{key}_sua", u["sua"][g][f"gen_{key}"])
            for task, metric in (("mc", "mc_acc"), ("cloze", "cloze_em")):
                if metric in u["clean"][g]:
                    add(f"unlearned/{g}/{task}_clean", u["clean"][g][metric])
                    add(f"unlearned/{g}/{task}_gain_sua", _gain(u, "sua", g, metric))
            add(f"retrain/{g}/gain_same_delta", _gain(s["retrain"], "sua", g))
            add(f"retrain/{g}/gain_own_delta", _gain(s["retrain"], "sua_on_retrain", g))
            if "vanilla" in s:
                add(f"vanilla/{g}/clean", s["vanilla"]["clean"][g]["gen_em"])
            if "unlearned_plain" in s:
                add(f"unlearned_plain/{g}/gain_sua", _gain(s["unlearned_plain"], "sua", g))
            if "reference" in s:
                add(f"reference/{g}/gain_sua", _gain(s["reference"], "sua", g))
        for name in ("sua", "sua_plain", "reference"):
            if name in s["stealth"]:
                add(f"stealth/{name}/detector_auroc", s["stealth"][name]["detector_auroc"], scale=1)
        for name, rec in s.get("purification", {}).items():
            for g, sc in rec.items():
                add(f"purified/{name}/{g}/gain_sua", sc["gen_em"] - s["unlearned"]["clean"][g]["gen_em"])
    return {k: _stats(v) for k, v in rows.items()}


def budget_curves(splits: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Curves for plots.budget_figure: gain per group and stealth per eps, mean +- sd over the study splits."""
    runs = [s["budget"] for s in splits if "budget" in s]
    if not runs:
        return None
    eps = sorted(runs[0], key=float)
    out: dict[str, Any] = {"eps_255": [float(e) for e in eps], "splits": len(runs), "recovery": {}}
    for g in CURVE_GROUPS:
        values = [[100 * r[e]["gain"][g] for r in runs] for e in eps]
        out["recovery"][g] = {"mean": [float(np.mean(v)) for v in values], "sd": [float(np.std(v)) for v in values]}
    for key in ("detector_auroc", "psnr", "ssim"):
        values = [[r[e][key] for r in runs] for e in eps]
        name = "auroc" if key == "detector_auroc" else key
        out[name] = {"mean": [float(np.mean(v)) for v in values], "sd": [float(np.std(v)) for v in values]}
    return out


# Settings added after splits were shipped, with the value every earlier run used: at that value they are left out
# of a split's key, so the shipped splits still read back instead of running again.
ADDED_SETTINGS = {"per_image_steps": 100}


def split_key(cfg: ProtocolConfig, paths: dict[str, str | Path]) -> dict[str, Any]:
    """What a finished split is filed under: its models and every setting but the split list."""
    config = json.loads(json.dumps(asdict(cfg)))
    config.pop("splits")
    for name, value in ADDED_SETTINGS.items():  # at the value runs had before the setting existed: not in the key
        if config.get(name) == value:
            config.pop(name)
    return {"models": {k: str(v) for k, v in paths.items()}, "config": config}


def _resumed_split(
    seed: int,
    bench: Bench,
    models: dict[str, VisionLanguageAdapter],
    banks: dict[str, ImageBank],
    cfg: ProtocolConfig,
    paths: dict[str, str | Path],
    out: Path,
    progress: bool,
) -> dict[str, Any]:
    """One split's result, read back from `split{seed}.json` when an earlier run of the same settings on the same
    models finished it (a stopped build loses at most the split it was in, and its noises resume mid-run)."""
    done, key = out / f"split{seed}.json", split_key(cfg, paths)
    if done.is_file():
        saved = json.loads(done.read_text())
        if saved.get("key") == key:
            log.info("split %d: finished earlier, read from %s", seed, done)
            return saved["result"]
        log.info("split %d: %s comes from other settings; running it again", seed, done)
    t0 = time.time()
    log.info("split %d", seed)
    result = run_split(seed, bench, models, banks, cfg, out, progress)
    write_json(done, {"key": key, "result": result})
    log.info("split %d done in %.0f s on %s", seed, time.time() - t0, describe())
    return result


def run_protocol(
    unlearned: str | Path,
    retrain: str | Path,
    bench: Bench,
    cfg: ProtocolConfig,
    out_dir: str | Path,
    vanilla: str | Path | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    cfg.check()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"unlearned": unlearned, "retrain": retrain, **({"vanilla": vanilla} if vanilla else {})}
    models = {k: load_adapter(v) for k, v in paths.items()}
    banks = {k: ImageBank(bench, m) for k, m in models.items()}
    splits = [_resumed_split(seed, bench, models, banks, cfg, paths, out, progress) for seed in cfg.splits]
    report = {
        "unlearned": str(unlearned),
        "retrain": str(retrain),
        "vanilla": str(vanilla) if vanilla else None,
        "config": asdict(cfg),
        "splits": splits,
        "summary": summarise(splits),
        "budget": budget_curves(splits),
    }
    write_json(out / "report.json", report)
    atomic_write_text(out / "report.md", markdown(report))
    return report
