"""report.json -> report.md: the recovery protocol's figures as tables a person reads (JSON first, then this)."""

from __future__ import annotations

from typing import Any

from sua_demo.eval.recovery import GROUPS

LABELS = {
    "a_attacker_images": "a: attacker's photos",
    "b_attacker_heldout": "b: attacker people, held-out photos",
    "c_unseen_train": "c: unseen people, train photos",
    "c_unseen_heldout": "c: unseen people, held-out photos",
    "retain_heldout": "retain people, held-out photos",
}


def _f(s: dict[str, Any], key: str, signed: bool = False) -> str:
    v = s.get(key)
    if v is None:
        return "–"
    sign = "+" if signed else ""
    return f"{v['mean']:{sign}.1f} ± {v['sd']:.1f}" if v["n"] > 1 else f"{v['mean']:{sign}.1f}"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def markdown(report: dict[str, Any]) -> str:
    s, a = report["summary"], report["config"]["attack"]
    n = len(report["splits"])
    lines = [
        f"# SUA recovery report: {report['unlearned']}",
        "",
        f"eps = {a['eps'] * 255:.0f}/255, {a['steps']} steps (alpha {a['alpha'] * 255:g}/255, {a['alpha_schedule']}), "
        f"batch {a['batch_size']}, loss {a['loss']}, EOT {a['eot']}, denoiser {a['denoiser']}, stealth weight "
        f"{a['stealth_weight']:g}, fitted on {'/'.join(report['config']['attack_tasks'])}; precision {a['precision']}. "
        f"{n} attacker/unseen split(s). Generation exact match, points; mean ± sd over splits.",
        "",
        "| group | vanilla | clean | with δ | gain | random-noise gain | refusal clean → δ "
        "| first-token refusal clean → δ | same δ on retrain | δ optimised on retrain |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for g in GROUPS:
        u = f"unlearned/{g}"
        lines.append(
            f"| {LABELS[g]} | {_f(s, f'vanilla/{g}/clean')} | {_f(s, u + '/clean')} | {_f(s, u + '/sua')} "
            f"| {_f(s, u + '/gain_sua', True)} | {_f(s, u + '/gain_random', True)} "
            f"| {_f(s, u + '/refusal_clean')} → {_f(s, u + '/refusal_sua')} "
            f"| {_f(s, u + '/first_token_refusal_clean')} → {_f(s, u + '/first_token_refusal_sua')} "
            f"| {_f(s, f'retrain/{g}/gain_same_delta', True)} | {_f(s, f'retrain/{g}/gain_own_delta', True)} |"
        )
    lines += [
        "",
        "## Other tasks (gain with δ, points)",
        "",
        "| group | MC clean | MC gain | cloze clean | cloze gain |",
    ]
    lines.append("|---|---|---|---|---|")
    for g in GROUPS:
        u = f"unlearned/{g}"
        lines.append(
            f"| {LABELS[g]} | {_f(s, u + '/mc_clean')} | {_f(s, u + '/mc_gain_sua', True)} "
            f"| {_f(s, u + '/cloze_clean')} | {_f(s, u + '/cloze_gain_sua', True)} |"
        )
    lines += _stealth(report) + _ablation(report) + _per_image(report) + _budget(report)
    lines += _purification(report) + _reference(report)
    return "\n".join(lines) + "\n"


def _stealth(report: dict[str, Any]) -> list[str]:
    st = report["splits"][0]["stealth"]
    lines = [
        "",
        "## Stealth (first split, unseen people's held-out photos)",
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
    return lines


def _ablation(report: dict[str, Any]) -> list[str]:
    s = report["summary"]
    if "unlearned_plain/a_attacker_images/gain_sua" not in s:
        return []
    n = s["unlearned_plain/a_attacker_images/gain_sua"]["n"]
    auroc = {k: s[f"stealth/{k}/detector_auroc"] for k in ("sua", "sua_plain")}
    return [
        "",
        f"## The stealth term ({n} split(s))",
        "",
        "| | " + " | ".join(LABELS[g] for g in GROUPS) + " | detector AUROC |",
        "|---|" + "---|" * (len(GROUPS) + 1),
        "| gain with the term | "
        + " | ".join(_f(s, f"unlearned/{g}/gain_sua", True) for g in GROUPS)
        + f" | {auroc['sua']['mean']:.3f} ± {auroc['sua']['sd']:.3f} |",
        "| gain without it | "
        + " | ".join(_f(s, f"unlearned_plain/{g}/gain_sua", True) for g in GROUPS)
        + f" | {auroc['sua_plain']['mean']:.3f} ± {auroc['sua_plain']['sd']:.3f} |",
    ]


def _per_image(report: dict[str, Any]) -> list[str]:
    s0 = report["splits"][0]
    if "per_image_pgd" not in s0:
        return []
    p = s0["per_image_pgd"]
    uni = s0["unlearned"]["sua"]["a_attacker_images"]
    lines = [
        "",
        "## Per-image PGD: the upper bound on the attacker's photos (first split), and its write-in ceiling",
        "",
        "One δ per image (100 sign steps of 1/255, same ε, no EOT), every task. On the retrain control it measures "
        "how much an image-specific δ can write in about people the model never knew.",
        "",
        "| model | task | clean | universal δ | per-image δ |",
        "|---|---|---|---|---|",
    ]
    for role in ("unlearned", "retrain"):
        for metric, label in (("gen_em", "generation EM"), ("mc_acc", "multiple choice"), ("cloze_em", "cloze EM")):
            universal = uni[metric] if role == "unlearned" else s0["retrain"]["sua"]["a_attacker_images"][metric]
            lines.append(
                f"| {role} | {label} | {_pct(p[role]['clean'][metric])} | {_pct(universal)} "
                f"| {_pct(p[role]['pgd'][metric])} |"
            )
    return lines


def _budget(report: dict[str, Any]) -> list[str]:
    b = report.get("budget")
    if not b:
        return []
    groups = list(b["recovery"])
    lines = [
        "",
        f"## Budget curves ({b['splits']} split(s); gain with δ in points, mean ± sd)",
        "",
        "| ε (/255) | " + " | ".join(LABELS[g] for g in groups) + " | PSNR dB | SSIM | detector AUROC |",
        "|---|" + "---|" * (len(groups) + 3),
    ]
    for i, eps in enumerate(b["eps_255"]):
        cells = [f"{b['recovery'][g]['mean'][i]:+.1f} ± {b['recovery'][g]['sd'][i]:.1f}" for g in groups]
        cells += [f"{b['psnr']['mean'][i]:.1f}", f"{b['ssim']['mean'][i]:.3f}", f"{b['auroc']['mean'][i]:.3f}"]
        lines.append(f"| {eps:g} | " + " | ".join(cells) + " |")
    return lines


def _purification(report: dict[str, Any]) -> list[str]:
    s = report["summary"]
    names = sorted({k.split("/")[1] for k in s if k.startswith("purified/")})
    if not names:
        return []
    groups = [g for g in GROUPS if f"purified/{names[0]}/{g}/gain_sua" in s]
    lines = [
        "",
        "## Does δ survive purification? (gain in points on D(x + δ), beside x + δ)",
        "",
        "| input | " + " | ".join(LABELS[g] for g in groups) + " |",
        "|---|" + "---|" * len(groups),
        "| x + δ | " + " | ".join(_f(s, f"unlearned/{g}/gain_sua", True) for g in groups) + " |",
    ]
    for name in names:
        lines.append(
            f"| {name}(x + δ) | " + " | ".join(_f(s, f"purified/{name}/{g}/gain_sua", True) for g in groups) + " |"
        )
    return lines


def _reference(report: dict[str, Any]) -> list[str]:
    s = report["summary"]
    if "reference/a_attacker_images/gain_sua" not in s:
        return []
    au = {k: s.get(f"stealth/{k}/detector_auroc") for k in ("sua", "reference")}
    return [
        "",
        "## The public code's settings beside this recipe (gain in points)",
        "",
        "reference: ε 12/255, sign steps of 1/255, batch 6, 1000 iterations, no EOT, CE on x+δ and D(x+δ), the "
        "cosine term at weight 0.7 without gradient, DnCNN.",
        "",
        "| recipe | " + " | ".join(LABELS[g] for g in GROUPS) + " | detector AUROC |",
        "|---|" + "---|" * (len(GROUPS) + 1),
        "| this recipe | " + " | ".join(_f(s, f"unlearned/{g}/gain_sua", True) for g in GROUPS)
        + f" | {au['sua']['mean']:.3f} |",
        "| reference | " + " | ".join(_f(s, f"reference/{g}/gain_sua", True) for g in GROUPS)
        + f" | {au['reference']['mean']:.3f} |",
    ]  # fmt: skip
