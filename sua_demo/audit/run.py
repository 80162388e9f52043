"""`sua audit MODEL`: every audit method on the same forget people and facts, over attacker/unseen splits, with its
control; audit.json first, then audit.md and the figure from it."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from sua_demo.attacks import load_noise
from sua_demo.audit.base import AUDITS, AuditContext, run_method
from sua_demo.core.config import shown_path
from sua_demo.core.io import atomic_write_text, write_json
from sua_demo.core.machine import describe
from sua_demo.core.shipped import label
from sua_demo.dataset.records import Bench
from sua_demo.eval.recovery import attack_split
from sua_demo.models import load_adapter
from sua_demo.models.examples import ImageBank

log = logging.getLogger(__name__)
# Every method, in the report's order (the rows of audit.md, the panels of the figure): the labels' order, the
# one place it is kept. Not the registry's order, which follows the import line in audit/__init__.py, that is the
# alphabet of the file names.
LABELS = {
    "clean": "clean photo", "text_only": "text only (name in the question)", "rephrased": "rephrased questions",
    "sua": "SUA δ", "random_noise": "random noise (same ε)", "quant8": "8-bit weights", "quant4": "4-bit weights",
    "relearn5": "relearn 5 steps", "relearn20": "relearn 20 steps", "relearn50": "relearn 50 steps",
    "soft_prompt1": "soft prompt, 1 vector", "soft_prompt5": "soft prompt, 5 vectors",
    "typographic": "name written in the photo", "rephrased_image": "rephrased image (unseen pose and light)",
}  # fmt: skip
METHODS = tuple(LABELS)


def _stats(values: list[float]) -> dict[str, float]:
    return {"mean": float(np.mean(values)), "sd": float(np.std(values)), "n": len(values)}


def summarise(runs: list[dict[str, Any]], uses_split: bool) -> dict[str, Any]:
    """One method's figures over splits: its gain, its control's gain, the gap, em and clean, per group."""
    out: dict[str, Any] = {"uses_split": uses_split}
    for key, role, part in (("gain", "unlearned", "gain"), ("control_gain", "retrain", "gain"),
                            ("em", "unlearned", "em"), ("clean", "unlearned", "clean")):  # fmt: skip
        out[key] = {g: _stats([r[role][part][g] for r in runs]) for g in runs[0][role][part]}
    out["above_control"] = {g: _stats([r["above_control"][g] for r in runs]) for g in runs[0]["above_control"]}
    return out


def run_audit(
    unlearned: str | Path,
    retrain: str | Path,
    bench: Bench,
    noise_dir: str | Path | None,
    out: str | Path | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Load both models, then `audit_models` (its options: splits, methods, people, progress, quick)."""
    models = {}
    for role, path in (("unlearned", unlearned), ("retrain", retrain)):
        adapter = load_adapter(path)
        models[role] = (adapter, ImageBank(bench, adapter))
    return audit_models(models, bench, noise_dir, out, names=(shown_path(unlearned), shown_path(retrain)), **options)


class EnoughForNow(Exception):
    """Raised by an audit's `on_progress` to end it early (a caller's time bound): the report keeps the methods
    finished so far and says it is partial."""


def _go_on(on_progress: Callable[[int], None] | None, done: int) -> bool:
    """Tell `on_progress` how far the audit is; False if it asks the audit to end there (EnoughForNow)."""
    if on_progress is not None:
        try:
            on_progress(done)
        except EnoughForNow:
            return False
    return True


def audit_models(
    models: dict[str, tuple[Any, ImageBank]],
    bench: Bench,
    noise_dir: str | Path | None,
    out: str | Path | None = None,
    splits: tuple[int, ...] = (0, 1, 2),
    methods: tuple[str, ...] = METHODS,
    people: list[int] | None = None,
    progress: bool = True,
    quick: bool = False,
    names: tuple[Any, Any] = ("unlearned", "retrain"),
    on_progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Per method and split: em and gain over clean for the unlearned model and its control, and the gain above
    the control; summarised as mean +- sd over splits. States (recovered / not / refused) from the first split.
    `models`: {"unlearned": (adapter, bank), "retrain": (adapter, bank)}, e.g. the app's loaded sessions.
    `on_progress(done)` after each method and split, for a page's clock (which weighs them by AuditMethod.work);
    it may raise EnoughForNow to end the audit there."""
    t0 = time.time()
    unlearned, retrain = names
    runs: dict[str, list[dict[str, Any]]] = {m: [] for m in methods}
    groups: dict[str, str] = {}  # the first split's group of every person asked: the states come from that split
    bar, done, complete = tqdm(total=len(methods) * len(splits), desc="audit", disable=not progress), 0, True
    for seed in splits:
        path = Path(noise_dir) / f"delta_split{seed}.safetensors" if noise_dir else None
        noise = load_noise(path, models["unlearned"][0].image_size) if path and path.is_file() else None
        ctx = AuditContext(bench, models, attack_split(bench, seed=seed), noise, people=people, quick=quick)
        groups = groups or {str(e.person_id): ctx.group_of(e.person_id) for e in ctx.asked()}
        for name in methods:
            if name not in ("sua", "random_noise") or noise is not None:  # else no delta was shipped for this split
                runs[name].append({"split": seed, **run_method(name, ctx)})
            bar.update()
            done += 1
            complete = _go_on(on_progress, done)
            if not complete:
                break
        if not complete:
            break
    bar.close()
    summary = {name: summarise(rs, AUDITS.get(name).uses_split) for name, rs in runs.items() if rs}
    report = {
        "unlearned": str(unlearned),
        "retrain": str(retrain),
        "splits": list(splits),
        "people": people,
        "summary": summary,
        "states": {name: rs[0]["states"] for name, rs in runs.items() if rs},
        "groups": groups,
        "runs": runs,
        "seconds": round(time.time() - t0, 1),
        "complete": complete,
        "machine": describe(),
    }
    if out is not None:
        out = Path(out)
        write_json(out / "audit.json", report)
        atomic_write_text(out / "audit.md", markdown(report))
    log.info("audit of %s in %.0f s on %s", unlearned, report["seconds"], report["machine"])
    return report


def markdown(report: dict[str, Any], page: bool = False) -> str:
    """The audit as a table with its reading. `page`: for the page, in words only (the model's readable name, how
    many splits rather than which, no machine line: how it was measured is said once, in About)."""

    def f(s: dict[str, float] | None) -> str:
        if s is None:
            return "–"
        return f"{s['mean']:+.1f} ± {s['sd']:.1f}" if s["n"] > 1 else f"{s['mean']:+.1f}"

    name, n = Path(str(report["unlearned"])).name, len(report["splits"])
    splits = f"over {n} attacker split{'s' * (n != 1)}" if page else f"splits {report['splits']}"
    control = "" if page else f" ({Path(str(report['retrain'])).name})"
    lines = [
        f"# Residual-knowledge audit: {label(name) if page else name}",
        "",
        f"Generation exact match on held-out photos, gain over the clean question in points (text only: the "
        f"question without a photo, read against the photo question of the same facts); {splits} "
        f"(mean ± sd where a method depends on the split). The control is the same method on the "
        f"retrain model{control}, which never saw the forget people; 'above control' is the difference.",
        "",
        "| method | unseen people: gain | its control | above control | attacker's people: gain | its control "
        "| retain: gain |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, s in report["summary"].items():
        g, c, a = s["gain"], s["control_gain"], s["above_control"]
        lines.append(
            f"| {LABELS.get(name, name)} | {f(g.get('unseen_people'))} | {f(c.get('unseen_people'))} "
            f"| **{f(a.get('unseen_people'))}** | {f(g.get('attacker_people'))} | {f(c.get('attacker_people'))} "
            f"| {f(g.get('retain'))} |"
        )
    if not page:
        lines += ["", f"{report['seconds']:.0f} s on {report.get('machine', 'this machine')}."]
    return "\n".join(lines) + "\n"


def audit_figure(report: dict[str, Any]) -> Any:
    """People x facts per method: recovered (green), not (light) or refused (dark), first split; blank where a
    method does not ask that fact (text only names the person in the question, so it has no name question)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    states = report["states"]
    groups = report.get("groups", {})
    names = [m for m in states if m != "clean"]
    keys = {k for n in names for k in states[n]}
    people = sorted({int(k.split("/")[0]) for k in keys}, key=lambda p: (groups.get(str(p)) == "retain", p))
    facts = sorted({k.split("/")[1] for k in keys})
    short = {"attacker_people": "attacker", "unseen_people": "unseen", "retain": "retain"}
    rows_shown = [f"#{p} {short.get(groups.get(str(p), ''), '')}".strip() for p in people]
    code = {"refused": 0, "not": 1, "recovered": 2}
    cols = min(4, len(names))
    rows = -(-len(names) // cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[LABELS.get(n, n) for n in names],
                        horizontal_spacing=0.03, vertical_spacing=0.08)  # fmt: skip
    for i, name in enumerate(names):
        z = [[code.get(states[name].get(f"{p}/{f}", ""), None) for f in facts] for p in people]
        fig.add_trace(
            go.Heatmap(z=z, x=facts, y=rows_shown, zmin=0, zmax=2, showscale=False, hoverongaps=False,
                       colorscale=[[0, "#444"], [0.5, "#ddd"], [1, "#2ca25f"]],
                       hovertemplate="%{y} %{x}<extra>" + name + "</extra>"),
            row=i // cols + 1, col=i % cols + 1,
        )  # fmt: skip
    fig.update_yaxes(autorange="reversed", tickmode="array", tickvals=rows_shown, tickfont={"size": 9})
    fig.update_yaxes(showticklabels=False)
    for r in range(1, rows + 1):
        fig.update_yaxes(showticklabels=True, row=r, col=1)
    fig.update_layout(height=max(260, 14 * len(people) + 60) * rows, margin={"l": 10, "r": 10, "t": 60, "b": 10},
                      title="recovered (green) · not (light) · refused (dark) · blank: not asked; forget people "
                            "(attacker / unseen by δ, first split) above retain people")  # fmt: skip
    return fig
