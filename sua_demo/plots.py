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
