"""The stealth picture: clean, noisy and denoised image embeddings on one 2-D map, as pure functions.

A stealthy noise keeps each noisy embedding next to its denoised twin (a detector that compares an input
with its denoised copy sees nothing odd), while it may move the pair away from the clean embedding, which
is where hidden answers come back. The map is fitted once on a bench sample (UMAP), and a user's image is
placed on it with the fitted reducer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

CONDITIONS = ("clean", "noisy", "denoised")
COLOURS = {"clean": "#2b83ba", "noisy": "#d7191c", "denoised": "#fdae61"}
SYMBOLS = {"forget": "circle", "retain": "square"}

CAPTION = (
    "Each dot is one photo as the model sees it (its image embedding), laid out in 2-D. "
    "Blue: the clean photo. Red: with δ. Orange: δ, then denoised. "
    "A stealthy δ keeps every red dot on its orange twin, so a detector that compares a photo with its "
    "denoised copy sees nothing odd; the red and orange pair may still sit away from the blue dot, which is "
    "where the hidden answers come back. Circles: forget people; squares: retain people; the star and arrows: "
    "your photo, clean → with δ → denoised."
)


@dataclass
class EmbeddingMap:
    """A fitted reducer and the 2-D points of the bench sample, one per (photo, condition)."""

    reducer: Any
    points: list[dict[str, Any]]

    def place(self, embeddings: np.ndarray, who: str = "your photo") -> list[dict[str, Any]]:
        """(3, D) clean, noisy and denoised embeddings of one image -> three points on this map."""
        xy = self.reducer.transform(embeddings)
        return [
            {"x": float(x), "y": float(y), "condition": c, "group": "yours", "who": who}
            for (x, y), c in zip(xy, CONDITIONS, strict=True)
        ]


def fit_map(embeddings: np.ndarray, labels: list[tuple[str, str]], seed: int = 0) -> EmbeddingMap:
    """`embeddings` (3n, D): n clean, then n noisy, then n denoised; `labels` n (group, who) pairs."""
    import umap  # noqa: PLC0415  (a slow import; only the map needs it)

    n = len(labels)
    if embeddings.shape[0] != 3 * n:
        raise ValueError(f"expected {3 * n} embeddings (3 conditions x {n} images), got {embeddings.shape[0]}")
    reducer = umap.UMAP(n_neighbors=15, min_dist=0.3, random_state=seed, n_jobs=1)
    xy = reducer.fit_transform(embeddings)
    points = [
        {"x": float(xy[c * n + i, 0]), "y": float(xy[c * n + i, 1]), "condition": cond, "group": g, "who": who}
        for c, cond in enumerate(CONDITIONS)
        for i, (g, who) in enumerate(labels)
    ]
    return EmbeddingMap(reducer, points)


def figure(points: list[dict[str, Any]], title: str = "", height: int = 420) -> go.Figure:
    """Colour by condition, shape by forget/retain: 3 + 2 legend entries; the user's image as stars and arrows."""
    fig = go.Figure()
    for cond in CONDITIONS:
        pts = [p for p in points if p["condition"] == cond and p["group"] in SYMBOLS]
        fig.add_trace(
            go.Scatter(
                x=[p["x"] for p in pts],
                y=[p["y"] for p in pts],
                mode="markers",
                name=cond,
                marker={
                    "color": COLOURS[cond],
                    "symbol": [SYMBOLS[p["group"]] for p in pts],
                    "size": 8,
                    "opacity": 0.8,
                    "line": {"width": 0.5, "color": "black"},
                },
                text=[p["who"] for p in pts],
                hovertemplate="%{text}<br>" + cond + "<extra></extra>",
            )
        )
    for group, symbol in SYMBOLS.items():  # shape legend, without points of its own
        fig.add_trace(
            go.Scatter(
                x=[None], y=[None], mode="markers", name=group, marker={"symbol": symbol, "color": "#777", "size": 8}
            )
        )
    yours = {p["condition"]: p for p in points if p["group"] == "yours"}
    if len(yours) == len(CONDITIONS):
        path = [yours[c] for c in CONDITIONS]
        fig.add_trace(
            go.Scatter(
                x=[p["x"] for p in path],
                y=[p["y"] for p in path],
                mode="markers",
                name="this photo (clean → noisy → denoised)",
                marker={
                    "symbol": "star",
                    "size": 18,
                    "color": [COLOURS[c] for c in CONDITIONS],
                    "line": {"width": 1.5},
                },
                text=[f"{p['who']}: {p['condition']}" for p in path],
                hovertemplate="%{text}<extra></extra>",
            )
        )
        for a, b in zip(path, path[1:], strict=False):
            fig.add_annotation(
                x=b["x"], y=b["y"], ax=a["x"], ay=a["y"], xref="x", yref="y", axref="x", ayref="y",
                showarrow=True, arrowhead=3, arrowwidth=2, arrowcolor="#333", text="",
            )  # fmt: skip
    fig.update_layout(
        height=height,
        margin={"l": 10, "r": 10, "t": 40 if title else 10, "b": 10},
        legend={"orientation": "h", "y": -0.02},
        title=title or None,
        xaxis={"showticklabels": False},
        yaxis={"showticklabels": False},
    )
    return fig


def describe(points: list[dict[str, Any]]) -> str:
    """A text alternative for the map: how far noisy points sit from their denoised twins and from clean."""
    by = {c: [p for p in points if p["condition"] == c and p["group"] in SYMBOLS] for c in CONDITIONS}
    if not by["clean"]:
        return "No points."
    xy = {c: np.array([[p["x"], p["y"]] for p in by[c]]) for c in CONDITIONS}
    twin = float(np.linalg.norm(xy["noisy"] - xy["denoised"], axis=1).mean())
    moved = float(np.linalg.norm(xy["noisy"] - xy["clean"], axis=1).mean())
    return (
        f"Map of {len(by['clean'])} bench photos in 3 conditions: a noisy point lies on average {twin:.2f} map "
        f"units from its denoised twin and {moved:.2f} from its clean original."
    )
