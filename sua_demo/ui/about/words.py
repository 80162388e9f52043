"""The About tab: what SUA is, the controls, the ethics, and the shipped figures read from the shipped reports
(so the page can never quote a number the files do not hold)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sua_demo.core import shipped

INTRO = """
## What this is
Unlearning fine-tunes a multimodal LLM so that it stops revealing facts about people in photos.
**SUA (Stealthy Unlearning Attack)** tests whether the facts are gone or only hidden: one *universal*
noise pattern δ, ‖δ‖∞ ≤ ε, optimised on a few forget-set photos, is added to any photo. If the unlearned
model then answers again, the knowledge was still in the weights.

**Stealth.** The attack also keeps the model's embedding of x+δ close to that of a *denoised* x+δ, so a
detector that compares an input with its denoised copy sees little (the embedding map shows it).

## The controls, and why they matter
A noise could also *write* an answer into the image. Every figure is therefore read against:
- **random noise** of the same ε (should change nothing);
- **the same δ on the retrain control**, a model that never saw the forget people (should stay at chance);
- **a δ optimised against the retrain control itself**, which measures how much δ can write in on its own;
- **people δ never saw** (marked *unseen by δ*): recovery there is the paper's generalisation claim,
  measured rather than assumed.
"""

ETHICS = """
## Ethics
The 100 people here are fictitious: faces drawn by a program, names and facts sampled at random.
Point the tool at real models only to *audit* unlearning you are responsible for, or that its owners
asked you to test. Do not use it to extract personal data about real people.
"""

ROWS = (
    ("a_attacker_images", "the attacker's own photos"),
    ("b_attacker_heldout", "held-out photos of the attacker's people"),
    ("c_unseen_heldout", "held-out photos of people δ never saw"),
    ("retain_heldout", "retain people (should not move)"),
)


def _fmt(s: dict[str, Any], key: str) -> str:
    v = s.get(key)
    return f"{v['mean']:+.1f} ± {v['sd']:.1f}" if v else "–"


WORLD_WORDS = {
    "first": "the first world: 64-pixel photos, a vision tower trained on these people and changed by unlearning",
    "faithful": "the faithful world: 112-pixel photos, a vision tower and projector pretrained on other people and "
    "frozen as LLaVA's are, people learned and unlearned in the language model only",
}


def shipped_figures(noise_root: Path, world: str = "first") -> str:
    """A table per shipped demo model from its report.json: gain with δ and its controls, in points."""
    parts = [f"## The shipped figures of this world\nThis page serves {WORLD_WORDS.get(world, world)}."]
    for model in shipped.DEMO:
        path = noise_root / model / "report.json"
        if not path.is_file():
            continue
        report = json.loads(path.read_text())
        s, n = report["summary"], len(report["splits"])
        parts += [
            f"\n**{shipped.label(model)}** ({n} attacker/unseen splits; generation exact match, gain over clean in "
            "points)\n",
            "| group | δ | random noise | same δ on retrain | δ optimised on retrain |",
            "|---|---|---|---|---|",
        ]
        for g, label in ROWS:
            parts.append(
                f"| {label} | {_fmt(s, f'unlearned/{g}/gain_sua')} | {_fmt(s, f'unlearned/{g}/gain_random')} "
                f"| {_fmt(s, f'retrain/{g}/gain_same_delta')} | {_fmt(s, f'retrain/{g}/gain_own_delta')} |"
            )
    worlds = noise_root / "worlds.md"
    if worlds.is_file():  # each model's section headed by its readable name
        text = worlds.read_text().split("\n", 2)[-1]
        for model in shipped.MODELS:
            text = text.replace(f"\n## {model}\n", f"\n### {shipped.label(model)}\n")
        parts += ["\n## Across worlds (other bench seeds)\n", text]
    return "\n".join(parts)


def study_files(studies: Path, study: str, key: str = "files") -> list[Path]:
    """The result files a study's entry in checkpoints/studies/manifest.json names, that exist: the page quotes a
    study only through its manifest, so moving or adding a run is one line there, not a change of code."""
    manifest = studies / "manifest.json"
    if not manifest.is_file():
        return []
    names = json.loads(manifest.read_text()).get("studies", {}).get(study, {}).get(key, [])
    return [studies / n for n in names if (studies / n).is_file()]


def _unseen_gain(runs: list[dict[str, Any]], model: str, cond: str) -> float:
    """Gain on unseen people's held-out photos, in points: the mean over worlds of each world's mean over splits."""
    per_world = [
        sum(s[cond]["c"]["gen_em"] - s["clean"]["c"]["gen_em"] for s in r[model]["splits"].values())
        / len(r[model]["splits"])
        for r in runs
    ]
    return sum(per_world) / len(per_world)


def ceiling_figures(studies: Path, world: str = "first") -> str:
    """Why δ brings unseen people back so little, from the offsets study's converged fits, one file a world (the
    manifest's "ceiling" for the first world, "faithful_ceiling" for the faithful one): the served world's figures
    lead, the other world's follow, each named (empty where they are absent)."""
    found = {
        "first": [json.loads(f.read_text()) for f in study_files(studies, "offsets", "ceiling")],
        "faithful": [json.loads(f.read_text()) for f in study_files(studies, "offsets", "faithful_ceiling")],
    }
    served = world if found.get(world) else next((w for w, runs in found.items() if runs), None)
    if served is None:
        return ""
    runs = found[served]
    idk_in, idk_out = _unseen_gain(runs, "idk", "offset_input"), _unseen_gain(runs, "idk", "offset_output")
    control = ""
    if all("retrain" in r for r in runs):
        control = f"; the retrain control gains {_unseen_gain(runs, 'retrain', 'offset_output'):+.1f}"
    splits = len(runs[0]["idk"]["splits"])
    where = "In this world" if served == world else f"In the {served} world (this page serves the {world} one)"
    text = f"""
## What limits δ on people it never saw
{where}, one additive pattern of any size at the vision tower's input, which is what every pixel δ is there,
brings the IDK model's unseen people back by only **{idk_in:+.1f}** points. The same kind of change made to
the image tokens the language model reads brings back **{idk_out:+.1f}**{control}: the forgotten facts are still
in the weights, behind the vision tower, mostly out of reach of pixels
(the offsets study: {len(runs)} world{"s" if len(runs) != 1 else ""}, {splits} splits each).
"""
    for other, other_runs in found.items():
        if other != served and other_runs:
            o_in = _unseen_gain(other_runs, "idk", "offset_input")
            o_out = _unseen_gain(other_runs, "idk", "offset_output")
            text += f"\nIn the {other} world the same study reads {o_in:+.1f} at the input, {o_out:+.1f} on the "
            text += "image tokens.\n"
    return text


TWO_WORLDS = """
## Why there are two worlds
SUA Lab ships two worlds of the same 100 fictitious people. **The faithful world** (the default) is built the
way LLaVA is: a vision tower and projector pretrained on other people and then frozen, the people learned and
unlearned in the language model only. **The first world** (64-pixel photos) trains its small vision tower on
the people themselves, so unlearning rewrites the tower too; it came first, and its findings are kept beside
the faithful ones for comparison. Each page, figure and export names the world it comes from. To serve the
other one, start the app with the environment variable SUA_WORLD set to first (or faithful); the command line
tool follows the same variable.
"""


def measured(audit_json: Path) -> str:
    """How this was measured, in words: the machine a shipped audit names, said as a person would."""
    import re

    machine = json.loads(audit_json.read_text()).get("machine", "") if audit_json.is_file() else ""
    found = re.match(r"CPU: (.+?), (\d+) cores", machine)
    where = f"a {found[2]}-core {found[1]} processor" if found else "an ordinary CPU"
    return (
        "\n## How this was measured\nEvery figure on this page was computed by running the shipped models, on "
        f"{where}, in 32-bit floating point; nothing is typed in by hand. Each figure is an average over several "
        "choices of which forget people the attacker uses, and where the spread is shown it is the standard "
        "deviation between those choices.\n"
    )


def about_markdown(noise_root: Path, world: str = "first", audit_root: Path | None = None) -> str:
    """About for the served world: its figures, the ceiling study, how it was measured, the ethics."""
    from sua_demo.engine import CHECKPOINTS

    studies = CHECKPOINTS / "studies"
    audit_json = (audit_root or noise_root.parent / "audit") / shipped.DEFAULT / "audit.json"
    parts = [INTRO, shipped_figures(noise_root, world), ceiling_figures(studies, world), TWO_WORLDS,
             measured(audit_json), ETHICS]  # fmt: skip
    return "\n".join(parts)


def scale_words(trend: dict[str, Any]) -> str:
    """What the size study has measured so far, in words, above its picture."""
    from sua_demo.engine import Trend

    pts = trend["models"]["idk"]["c_unseen_heldout"]["points"]
    worlds = {s: len({p["world"] for p in pts if p["size"] == s}) for s in trend["parameters"]}
    sizes = [f"{s} ({n} world{'s' if n > 1 else ''} × 3 splits)" for s, n in worlds.items() if n]
    said = trend["models"]["idk"]["c_unseen_heldout"]["trend"]
    sentence = Trend(**said).sentence("For IDK, δ's reach to unseen people") if said else "Nothing attacked yet."
    return (
        "### Does δ reach more unseen people with a larger vision tower?\n\n"
        "The same world built with vision towers of other sizes (64 wide and 2 layers, today's 128 and 4, 256 and "
        "8), each attacked the same way with every control. Tower sizes attacked so far: "
        f"{', '.join(sizes)}. {sentence}"
    )


def people_words(people: dict[str, Any]) -> str:
    """What the second axis has measured so far (δ fitted on fewer or more people), in words, above its picture."""
    from sua_demo.engine import Trend

    sentence = Trend(**people["models"]["idk"]["c_unseen_heldout"]["trend"]).sentence(
        "For IDK, δ's reach to unseen people"
    )
    counts = ", ".join(f"{k} ({n} unseen)" for k, n in people["unseen"].items())
    return (
        "### Does δ reach more unseen people when it is fitted on more people?\n\n"
        f"Today's tower, the attack fitted on {counts} of the 15 people the model was asked to forget, each with "
        f"every control. {sentence}"
    )


def _reading(root: Path, model: str) -> dict[str, Any] | None:
    path = root / "robust_attacks" / model / "reading.json"
    return json.loads(path.read_text()) if path.is_file() else None


def _attack_cell(found: dict[str, Any], name: str) -> str:
    row = next((a for a in found["attacks"] if a["name"].startswith(name)), None)
    return "not run yet" if row is None else f"{row['beyond']:+.1f} (p = {row['p']:.2g})"


def _leaks(found: dict[str, Any], margin: float) -> dict[str, float]:
    return {name: beyond for name, beyond in (found.get("probes") or {}).items() if beyond > margin}


def robust_words(models: Path, margin: float = 5.0) -> str | None:
    """Robust unlearning (docs/robust.md) in words and one table, from each model's reading (studies/robust_attacks.py
    --read) and the cost benchmark's file: what the defence fixed and what it did not. None before any robust model
    was read."""
    found = {m: _reading(models, m) for m in (*shipped.DEMO, *shipped.ROBUST)}
    if not any(found[m] for m in shipped.ROBUST):
        return None
    lines = [
        "### Can unlearning resist SUA? Trained against a universal noise",
        "",
        "Each demo method unlearned again with a universal δ moved against it at every step, read by a rule written "
        f"down before any attack: *robust to SUA* if every judged attack brings back at most {margin:g} "
        "points more than on the retrain control on unseen people's held-out photos (and the paired test finds no "
        "recovery); *removed* only if every probe of the report card stays within that margin too.",
        "",
        "| model | shipped δ, beyond retrain | adaptive δ (4x steps, 5 restarts) | probes that bring it back | reading"
        " |",
        "|---|---|---|---|---|",
    ]
    for model, said in found.items():
        if said is None:
            continue
        leaks = ", ".join(f"{name} {beyond:+.1f}" for name, beyond in _leaks(said, margin).items())
        probes = leaks or ("none" if said.get("probes") else "not audited yet")
        lines.append(f"| {shipped.label(model)} | {_attack_cell(said, 'shipped')} | {_attack_cell(said, 'adaptive')} "
                     f"| {probes} | **{said['reading']}** |")  # fmt: skip
    lines += ["", *_fixed(found, margin), *_cost(models)]
    return "\n".join(lines) + "\n"


def _fixed(found: dict[str, Any], margin: float) -> list[str]:
    """Per robust model, beside its plain method, in words: what the shipped δ does now, the probes that still bring
    the knowledge back, and those that did on the plain method and no longer do."""
    out = []
    for robust, plain in zip(shipped.ROBUST, shipped.DEMO, strict=True):
        mine, theirs = found.get(robust), found.get(plain)
        if not mine or not theirs or not mine.get("probes"):
            continue
        now, before = _leaks(mine, margin), _leaks(theirs, margin)
        row = next(a for a in mine["attacks"] if a["name"] == "shipped")
        said = f"**{shipped.short_label(robust)}**: on unseen people the shipped δ brings back {row['beyond']:+.1f} "
        said += f"points more than on the retrain control (p = {row['p']:.2g})"
        said += f"; still brought back by {', '.join(now)}." if now else "; no probe brings it back."
        fixed = [p for p in before if p not in now]
        if fixed:
            said += f" Against {shipped.short_label(plain)}, it no longer gives back {', '.join(fixed)}."
        out += [said, ""]
    return out


def _cost(models: Path) -> list[str]:
    path = models / "robust_cost.json"
    if not path.is_file():
        return []
    cost = json.loads(path.read_text())
    ratios = ", ".join(f"{shipped.short_label(m)} {c['ratio']:.1f}x" for m, c in cost["methods"].items())
    cpu = cost["cpu"].split(",")[0].removeprefix("CPU: ")
    return [f"The defence's cost: seconds per unlearning step against plain unlearning, {ratios} ({cpu})."]
