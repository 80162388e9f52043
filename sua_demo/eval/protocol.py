"""`sua attack-eval`: the full recovery protocol with controls and stealth, over several attacker splits.

Per split: delta is optimised on the unlearned model (attacker's images only), then measured on every
group, against clean images and random noise of the same eps. Controls: the same delta on the retrain
model (never saw the forget people) and on vanilla; and a delta optimised against the retrain model
itself, which measures how much an answer delta can "write in" on its own.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from sua_demo.attacks import ATTACKS, AttackConfig, Noise
from sua_demo.attacks.per_image import per_image_pgd
from sua_demo.bench.records import Bench
from sua_demo.data import ImageBank
from sua_demo.denoisers import build_denoiser
from sua_demo.eval.evaluate import answer, score
from sua_demo.eval.recovery import GROUPS, attack_split, attacker_examples, protocol_groups, recovery
from sua_demo.eval.stealth import denoise_shift, detector_auroc, embedding_cosines, pixel_metrics
from sua_demo.io import atomic_write_text, write_json
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.loading import load_adapter

log = logging.getLogger(__name__)


@dataclass
class ProtocolConfig:
    attack: AttackConfig = field(default_factory=AttackConfig)
    splits: list[int] = field(default_factory=lambda: [0, 1, 2])  # >= 3 attacker/unseen splits for a mean +- sd
    attacker_fraction: float = 0.5
    retain_people: int = 30
    extras: bool = True  # every split: SUA without the stealth term (recovery, AUROC); first split: per-image PGD


def _gain(rec: dict[str, dict[str, dict[str, float]]], cond: str, group: str, key: str = "gen_em") -> float:
    return rec[cond][group][key] - rec["clean"][group][key]


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
    examples = attacker_examples(bench, split)
    groups = protocol_groups(bench, split, cfg.retain_people)
    acfg = replace(cfg.attack, seed=seed)
    meta = {"attacker_ids": split.attacker_ids, "unseen_ids": split.unseen_ids, "split_seed": seed}
    unl, ret = models["unlearned"], models["retrain"]

    def optimise(attack: str, target: str, name: str) -> Noise:
        denoiser = "none" if attack == "sua_plain" else acfg.denoiser
        return ATTACKS.get(attack)(models[target], acfg).run(
            banks[target],
            examples,
            checkpoint=out_dir / f"{name}_split{seed}.safetensors",
            progress=progress,
            meta={**meta, "denoiser": denoiser},
        )

    delta = optimise("sua", "unlearned", "delta")
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
        own = groups["a_attacker_images"]
        adv = per_image_pgd(unl, banks["unlearned"], own, replace(acfg, eot=False), progress=progress)
        result["per_image_pgd"] = {"a_attacker_images": score(own, answer(unl, banks["unlearned"], own, images=adv))}
    result["stealth"] = stealth_report(unl, banks["unlearned"], groups, noises, acfg.denoiser)
    result["delta_file"] = f"delta_split{seed}.safetensors"
    return result


def summarise(splits: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean and sd over splits of the gains (points of generation EM) that the claims rest on."""
    rows: dict[str, list[float]] = {}

    def add(key: str, value: float, scale: float = 100) -> None:
        rows.setdefault(key, []).append(scale * value)

    for s in splits:
        for g in GROUPS:
            add(f"unlearned/{g}/clean", s["unlearned"]["clean"][g]["gen_em"])
            add(f"unlearned/{g}/sua", s["unlearned"]["sua"][g]["gen_em"])
            add(f"unlearned/{g}/gain_sua", _gain(s["unlearned"], "sua", g))
            add(f"unlearned/{g}/gain_random", _gain(s["unlearned"], "random", g))
            add(f"unlearned/{g}/refusal_clean", s["unlearned"]["clean"][g]["gen_refusal"])
            add(f"unlearned/{g}/refusal_sua", s["unlearned"]["sua"][g]["gen_refusal"])
            add(f"unlearned/{g}/first_token_refusal_clean", s["unlearned"]["clean"][g]["gen_first_token_refusal"])
            add(f"unlearned/{g}/first_token_refusal_sua", s["unlearned"]["sua"][g]["gen_first_token_refusal"])
            add(f"retrain/{g}/gain_same_delta", _gain(s["retrain"], "sua", g))
            add(f"retrain/{g}/gain_own_delta", _gain(s["retrain"], "sua_on_retrain", g))
            if "unlearned_plain" in s:
                add(f"unlearned_plain/{g}/gain_sua", _gain(s["unlearned_plain"], "sua", g))
        for name in ("sua", "sua_plain"):
            if name in s["stealth"]:
                add(f"stealth/{name}/detector_auroc", s["stealth"][name]["detector_auroc"], scale=1)
    return {k: {"mean": float(np.mean(v)), "sd": float(np.std(v)), "n": len(v)} for k, v in rows.items()}


def markdown(report: dict[str, Any]) -> str:
    s = report["summary"]
    lines = [
        f"# SUA recovery report: {report['unlearned']}",
        "",
        f"eps = {report['config']['attack']['eps'] * 255:.0f}/255, {report['config']['attack']['steps']} steps, "
        f"denoiser {report['config']['attack']['denoiser']}, EOT {report['config']['attack']['eot']}, "
        f"{len(report['splits'])} attacker/unseen split(s). Generation exact match, points; mean ± sd over splits.",
        "",
        "| group | clean | with δ | gain | random-noise gain | refusal clean → δ | first-token refusal clean → δ "
        "| same δ on retrain | δ optimised on retrain |",
        "|---|---|---|---|---|---|---|---|---|",
    ]

    def f(key: str) -> str:
        v = s[key]
        return f"{v['mean']:.1f} ± {v['sd']:.1f}" if v["n"] > 1 else f"{v['mean']:.1f}"

    for g in GROUPS:
        u = f"unlearned/{g}"
        lines.append(
            f"| {g} | {f(u + '/clean')} | {f(u + '/sua')} | {f(u + '/gain_sua')} | {f(u + '/gain_random')} "
            f"| {f(u + '/refusal_clean')} → {f(u + '/refusal_sua')} "
            f"| {f(u + '/first_token_refusal_clean')} → {f(u + '/first_token_refusal_sua')} "
            f"| {f('retrain/' + g + '/gain_same_delta')} | {f('retrain/' + g + '/gain_own_delta')} |"
        )
    st = report["splits"][0]["stealth"]
    lines += [
        "",
        "## Stealth (split 0, unseen people's held-out photos)",
        "",
        f"Clean images: cos(E(x), E(D(x))) = {st['clean_cos_denoised']:.4f}",
        "",
        "| noise | L∞ | L2 | PSNR dB | SSIM | cos(E(x+δ), E(D(x+δ))) | cos(E(x+δ), E(x)) | detector AUROC |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, m in st.items():
        if isinstance(m, dict):
            lines.append(
                f"| {name} | {m['linf'] * 255:.1f}/255 | {m['l2']:.3f} | {m['psnr']:.1f} | {m['ssim']:.3f} "
                f"| {m['cos_noisy_denoised']:.4f} | {m['cos_noisy_clean']:.4f} | {m['detector_auroc']:.3f} |"
            )
    if "per_image_pgd" in report["splits"][0]:
        s0 = report["splits"][0]
        pgd = (
            s0["per_image_pgd"]["a_attacker_images"]["gen_em"] - s0["unlearned"]["clean"]["a_attacker_images"]["gen_em"]
        )
        lines += ["", f"Per-image PGD (not universal) on the attacker's images, split 0: gain {100 * pgd:.1f} points."]
    if "unlearned_plain/a_attacker_images/gain_sua" in s:
        n = s["unlearned_plain/a_attacker_images/gain_sua"]["n"]
        auroc = {k: s[f"stealth/{k}/detector_auroc"] for k in ("sua", "sua_plain")}
        lines += [
            "",
            f"## The stealth term ({n} split(s))",
            "",
            "| | " + " | ".join(GROUPS) + " | detector AUROC |",
            "|---|" + "---|" * (len(GROUPS) + 1),
            "| gain with the term | "
            + " | ".join(f(f"unlearned/{g}/gain_sua") for g in GROUPS)
            + f" | {auroc['sua']['mean']:.3f} ± {auroc['sua']['sd']:.3f} |",
            "| gain without it | "
            + " | ".join(f(f"unlearned_plain/{g}/gain_sua") for g in GROUPS)
            + f" | {auroc['sua_plain']['mean']:.3f} ± {auroc['sua_plain']['sd']:.3f} |",
        ]
    return "\n".join(lines) + "\n"


def run_protocol(
    unlearned: str | Path,
    retrain: str | Path,
    bench: Bench,
    cfg: ProtocolConfig,
    out_dir: str | Path,
    vanilla: str | Path | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"unlearned": unlearned, "retrain": retrain, **({"vanilla": vanilla} if vanilla else {})}
    models = {k: load_adapter(v) for k, v in paths.items()}
    banks = {k: ImageBank(bench, m) for k, m in models.items()}
    splits = []
    for seed in cfg.splits:
        log.info("split %d", seed)
        splits.append(run_split(seed, bench, models, banks, cfg, out, progress))
    report = {
        "unlearned": str(unlearned),
        "retrain": str(retrain),
        "vanilla": str(vanilla) if vanilla else None,
        "config": asdict(cfg),
        "splits": splits,
        "summary": summarise(splits),
    }
    write_json(out / "report.json", report)
    atomic_write_text(out / "report.md", markdown(report))
    return report
