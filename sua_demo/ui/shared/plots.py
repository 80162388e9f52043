"""Plotly figures for the app and the reports: recovery bars, budget curves and the loss curve (the embedding map
lives in analysis/embedding_map.py)."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

GROUP_LABELS = {
    "a_attacker_images": "attacker's photos",
    "b_attacker_heldout": "attacker people, held-out photos",
    "c_unseen_train": "unseen people, train photos",
    "c_unseen_heldout": "unseen people, held-out photos",
    "retain_heldout": "retain people (should not move)",
}


def recovery_figure(rec: dict[str, dict[str, dict[str, float]]], key: str = "gen_em") -> go.Figure:
    """Grouped bars: one group per protocol row, one bar per condition (clean, noise, random)."""
    fig = go.Figure()
    colours = {"clean": "#2b83ba", "noise": "#d7191c", "random": "#999999"}
    for cond, rows in rec.items():
        names = list(rows)
        fig.add_trace(
            go.Bar(
                x=[GROUP_LABELS.get(g, g) for g in names],
                y=[100 * rows[g][key] for g in names],
                name=cond,
                marker_color=colours.get(cond),
                text=[f"{100 * rows[g][key]:.0f}" for g in names],
                textposition="outside",
            )
        )
    fig.update_layout(
        barmode="group",
        height=420,
        yaxis={"title": "generation exact match (%)", "range": [0, 105]},
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        title="Recovery of forgotten answers",
    )
    return fig


def loss_figure(history: list[tuple[int, float]], total: int) -> go.Figure:
    fig = go.Figure(go.Scatter(x=[s for s, _ in history], y=[v for _, v in history], mode="lines"))
    fig.update_layout(
        height=260,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        title="attack loss",
        xaxis={"title": "step", "range": [0, max(total, 1)]},
        yaxis={"title": "loss"},
    )
    return fig


def budget_figure(curves: dict[str, Any]) -> go.Figure:
    """Gain over clean (generation exact match, points, mean ± sd over splits) and detector AUROC against eps.

    `curves`: {"eps_255": [...], "recovery": {group: {"mean": [...], "sd": [...]}}, "auroc": {"mean", "sd"}}.
    """
    from plotly.subplots import make_subplots

    eps = curves["eps_255"]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("gain with δ over clean (points)", "detector AUROC"))
    for group, c in curves["recovery"].items():
        fig.add_trace(
            go.Scatter(
                x=eps,
                y=c["mean"],
                error_y={"type": "data", "array": c["sd"], "visible": True},
                mode="lines+markers",
                name=GROUP_LABELS.get(group, group),
            ),
            row=1,
            col=1,
        )
    a = curves.get("auroc")
    if a:
        fig.add_trace(
            go.Scatter(
                x=eps, y=a["mean"], error_y={"type": "data", "array": a["sd"], "visible": True},
                mode="lines+markers", name="detector AUROC", line={"color": "black"},
            ),
            row=1, col=2,
        )  # fmt: skip
    fig.update_xaxes(title_text="ε (/255)")
    fig.update_yaxes(title_text="exact match, δ − clean (points)", zeroline=True, row=1, col=1)
    fig.update_layout(height=380, margin={"l": 10, "r": 10, "t": 40, "b": 10}, legend={"orientation": "h", "y": -0.25})
    return fig


def _by_label(models: dict[str, Any], model: str, group: str, value: Any) -> dict[str, list[float]]:
    """label (a tower size, a number of attacker people) -> value(point) over one model's points on one group."""
    out: dict[str, list[float]] = {}
    for p in models.get(model, {}).get(group, {}).get("points", []):
        out.setdefault(p["size"], []).append(value(p))
    return out


def _mean_line(fig: go.Figure, xs: dict[str, float], name: str, by_label: dict[str, list[float]], colour: str,
               dash: str = "solid", hover: str = "%{text}") -> None:  # fmt: skip
    """One trace: the mean of each label's values at its x, the standard deviation as its error bar."""
    import numpy as np

    labels = [k for k in xs if by_label.get(k)]
    fig.add_trace(go.Scatter(
        x=[xs[k] for k in labels], y=[float(np.mean(by_label[k])) for k in labels], name=name,
        error_y={"type": "data", "array": [float(np.std(by_label[k])) for k in labels]},
        text=labels, mode="lines+markers", line={"color": colour, "dash": dash},
        hovertemplate=hover + ": %{y:+.1f} points<extra>" + name + "</extra>",
    ))  # fmt: skip


def _gain_lines(fig: go.Figure, xs: dict[str, float], models: dict[str, Any], hover: str) -> None:
    """δ's gain (IDK on unseen people's held-out photos and on the attacker's photos, GradDiff on unseen people's)
    and IDK's best control on unseen people, per label."""
    unseen, own = "c_unseen_heldout", "a_attacker_images"
    gain, best = (lambda p: p["gain"]), (lambda p: max(p["controls"].values()))
    _mean_line(fig, xs, "IDK, δ: unseen people, held-out photos", _by_label(models, "idk", unseen, gain), "#d7191c",
               hover=hover)  # fmt: skip
    _mean_line(fig, xs, "IDK, δ: the attacker's photos", _by_label(models, "idk", own, gain), "#fdae61", hover=hover)
    _mean_line(fig, xs, "IDK, best control: unseen people, held-out", _by_label(models, "idk", unseen, best),
               "#999999", hover=hover)  # fmt: skip
    _mean_line(fig, xs, "GradDiff, δ: unseen people, held-out photos", _by_label(models, "grad_diff", unseen, gain),
               "#2b83ba", hover=hover)  # fmt: skip


def scale_figure(trend: dict[str, Any]) -> go.Figure:
    """docs/scale.md's picture from scale.write_trend's trend.json: against the vision tower's parameters (log),
    δ's gain on unseen people's held-out photos and on the attacker's photos, the best control's on the same
    questions, and the pixel and image-token ceilings; mean ± sd over world × split points (splits for ceilings)."""
    import numpy as np

    params, fig = trend["parameters"], go.Figure()
    _gain_lines(fig, params, trend["models"], "tower %{text}")
    for site, colour in (("pixels", "#1a9641"), ("image tokens", "#7b3294")):
        _mean_line(fig, params, f"IDK ceiling, any {site}: unseen held-out",
                   {s: c[site] for s, c in trend["ceilings"].items()}, colour, "dot", "tower %{text}")  # fmt: skip
    fig.update_layout(
        height=440,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        title="Does δ reach people it never saw more often with a larger vision tower?",
        xaxis={  # every size of the study in view, measured or not, so a missing size reads as not yet there
            "title": "vision tower parameters",
            "type": "log",
            "range": [np.log10(min(params.values())) - 0.15, np.log10(max(params.values())) + 0.15],
            "tickvals": list(params.values()),
            "ticktext": [f"{s}: {n / 1e6:.2f} M" for s, n in params.items()],
        },
        yaxis={"title": "gain over the clean photo (points)"},
        legend={"orientation": "h", "y": -0.25},
    )
    return fig


def people_figure(people: dict[str, Any]) -> go.Figure:
    """docs/scale.md's second axis from scale.write_people's people.json: against the number of people δ is fitted
    on (the rest of the 15 forget people unseen), the same lines as the size picture; mean ± sd over world × split."""
    xs = {k: float(k) for k in people["unseen"]}
    fig = go.Figure()
    _gain_lines(fig, xs, people["models"], "%{text} attacker people")
    fig.update_layout(
        height=400,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        title=f"Does δ reach people it never saw more often when fitted on more people? (tower {people['size']})",
        xaxis={
            "title": "people δ is fitted on",
            "tickvals": list(xs.values()),
            "ticktext": [f"{k} ({n} unseen)" for k, n in people["unseen"].items()],
        },
        yaxis={"title": "gain over the clean photo (points)"},
        legend={"orientation": "h", "y": -0.25},
    )
    return fig
