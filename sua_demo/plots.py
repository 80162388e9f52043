"""Plotly figures for the app and the reports: the embedding map, recovery bars and the loss curve."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

CONDITION_COLOURS = {"clean": "#2b83ba", "noisy": "#d7191c", "denoised": "#fdae61"}
GROUP_SYMBOLS = {"forget": "circle", "retain": "square", "your image": "star"}
GROUP_LABELS = {
    "a_attacker_images": "attacker's photos",
    "b_attacker_heldout": "attacker people, unseen photos",
    "c_unseen_train": "unseen people, train photos",
    "c_unseen_heldout": "unseen people, held-out photos",
    "retain_heldout": "retain people (should not move)",
}

STEALTH_CAPTION = (
    "Each point is one image embedding (vision tower → projector, mean over tokens), laid out by UMAP. "
    "A *stealthy* noise keeps every red (noisy) point next to its orange (denoised) twin, so a detector that "
    "compares an input with its denoised copy sees nothing odd; the red cloud may still sit apart from the "
    "blue (clean) one, which is where the hidden answers come back."
)


def embedding_figure(points: list[dict[str, Any]]) -> go.Figure:
    fig = go.Figure()
    for cond, colour in CONDITION_COLOURS.items():
        for group, symbol in GROUP_SYMBOLS.items():
            pts = [p for p in points if p["condition"] == cond and p["group"] == group]
            if not pts:
                continue
            big = group == "your image"
            fig.add_trace(
                go.Scattergl(
                    x=[p["x"] for p in pts],
                    y=[p["y"] for p in pts],
                    mode="markers",
                    name=f"{cond} · {group}",
                    marker={
                        "color": colour,
                        "symbol": symbol,
                        "size": 16 if big else 8,
                        "opacity": 0.85,
                        "line": {"width": 1.5 if big else 0.5, "color": "black"},
                    },
                    text=[p["who"] for p in pts],
                    hovertemplate="%{text}<br>" + cond + "<extra></extra>",
                )
            )
    fig.update_layout(
        height=460,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        legend={"orientation": "h", "y": -0.05},
        title="Image embeddings: clean, noisy, denoised (UMAP)",
        xaxis={"showticklabels": False},
        yaxis={"showticklabels": False},
    )
    return fig


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
