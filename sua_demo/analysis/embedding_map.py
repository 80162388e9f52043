"""The stealth picture: clean, noisy and denoised image embeddings on one 2-D map, as pure functions.

A stealthy noise keeps each noisy embedding next to its denoised twin (a detector that compares an input
with its denoised copy sees nothing odd), while it may move the pair away from the clean embedding, which
is where hidden answers come back. The map is fitted once on a bench sample (UMAP), and a user's image is
placed on it with the fitted reducer.

The figure is zoomed to where the bench's dots are, its axes say that only distances mean something, and the
visitor's photo is drawn last (on top) as big stars with its name written beside them; `describe` says the same
in words, so a reader who cannot see the figure learns where the photo landed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

CONDITIONS = ("clean", "noisy", "denoised")
COLOURS = {"clean": "#2b83ba", "noisy": "#d7191c", "denoised": "#fdae61"}
SYMBOLS = {"forget": "circle", "retain": "square"}
LEGEND_NAMES = {"clean": "clean", "noisy": "with δ", "denoised": "δ, denoised"}  # short: a legend row is 400 px
HOVER_NAMES = {"clean": "clean", "noisy": "with δ", "denoised": "with δ, then denoised"}
GROUP_NAMES = {"forget": "forget people", "retain": "retain people"}
VISITOR_GROUP = "yours"
VISITOR_TRACE = "chosen photo"
AXIS_TITLES = (
    "map axis 1 · nearby dots = similar embeddings",
    "map axis 2 · the units have no meaning",
)
# How tightly the layout may pack dots: at 0.3 each person's photos piled into one blob, hiding the clean, noisy
# and denoised dots under one another; 0.8 spreads each blob enough to see them, and keeps who sits next to whom.
MIN_DIST = 0.8
INNER_QUANTILES = (0.02, 0.98)  # the box nearly all of the bench's dots fall in
MARGIN = 0.15  # room around that box, as a share of its width
LABEL_CHARS = 38  # the photo's name on the figure; the captions carry it in full
# Visitor star sizes: drawn largest first, so stars that land on one another stay visible as rings.
STAR_SIZES = {"denoised": 26, "clean": 20, "noisy": 13}


@dataclass
class EmbeddingMap:
    """A fitted reducer and the 2-D points of the bench sample, one per (photo, condition)."""

    reducer: Any
    points: list[dict[str, Any]]

    def place(self, embeddings: np.ndarray, who: str = "your photo") -> list[dict[str, Any]]:
        """(3, D) clean, noisy and denoised embeddings of one image -> three points on this map."""
        xy = self.reducer.transform(embeddings)
        return [
            {"x": float(x), "y": float(y), "condition": c, "group": VISITOR_GROUP, "who": who}
            for (x, y), c in zip(xy, CONDITIONS, strict=True)
        ]


def fit_map(embeddings: np.ndarray, labels: list[tuple[str, str]], seed: int = 0) -> EmbeddingMap:
    """`embeddings` (3n, D): n clean, then n noisy, then n denoised; `labels` n (group, who) pairs."""
    import umap  # noqa: PLC0415  (a slow import; only the map needs it)

    n = len(labels)
    if embeddings.shape[0] != 3 * n:
        raise ValueError(f"expected {3 * n} embeddings (3 conditions x {n} images), got {embeddings.shape[0]}")
    reducer = umap.UMAP(n_neighbors=15, min_dist=MIN_DIST, random_state=seed, n_jobs=1)
    xy = reducer.fit_transform(embeddings)
    points = [
        {"x": float(xy[c * n + i, 0]), "y": float(xy[c * n + i, 1]), "condition": cond, "group": g, "who": who}
        for c, cond in enumerate(CONDITIONS)
        for i, (g, who) in enumerate(labels)
    ]
    return EmbeddingMap(reducer, points)


def bench_points(points: list[dict[str, Any]], condition: str | None = None) -> list[dict[str, Any]]:
    """The bench sample's points (forget and retain people), of one condition or all: the map's backdrop."""
    return [p for p in points if p["group"] in SYMBOLS and condition in (None, p["condition"])]


def visitor_points(points: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The visitor's photo by condition; complete (all three) or empty, since a half path means nothing."""
    yours = {p["condition"]: p for p in points if p["group"] == VISITOR_GROUP}
    return yours if len(yours) == len(CONDITIONS) else {}


def _xy(points: list[dict[str, Any]]) -> np.ndarray:
    """(n, 2) coordinates, so distances and quantiles are one numpy call."""
    return np.array([[p["x"], p["y"]] for p in points], dtype=float).reshape(-1, 2)


def view_range(
    points: list[dict[str, Any]], quantiles: tuple[float, float] = INNER_QUANTILES, margin: float = MARGIN
) -> tuple[tuple[float, float], tuple[float, float]]:
    """The (x, y) ranges the figure shows: the box holding the middle of the bench's dots, plus a margin, stretched
    to take in every visitor point.

    Why not let the plot fit every dot: the map's layout sometimes throws a few dots far from the rest, and fitting
    them shrinks the cloud a reader looks at into a corner. So the range comes from quantiles of the bench's dots
    (by default the middle 96 % on each axis) plus a margin of 15 % of that box; dots beyond it are left out of
    view (they stay in the figure's data and `describe` counts them). The visitor's three points are the reason
    the page exists, so the range always grows to hold them, with half a margin of room for their stars.
    """
    bench, yours = _xy(bench_points(points)), _xy(list(visitor_points(points).values()))
    source = bench if len(bench) else yours
    if not len(source):
        return (-1.0, 1.0), (-1.0, 1.0)
    lo, hi = np.quantile(source, quantiles[0], axis=0), np.quantile(source, quantiles[1], axis=0)
    span = np.maximum(hi - lo, 1e-6 + 1e-3 * np.abs(hi))  # a single dot still gets a box of its own
    lo, hi = lo - margin * span, hi + margin * span
    if len(yours):
        pad = 0.5 * margin * span
        lo, hi = np.minimum(lo, yours.min(axis=0) - pad), np.maximum(hi, yours.max(axis=0) + pad)
    return (float(lo[0]), float(hi[0])), (float(lo[1]), float(hi[1]))


def out_of_view(points: list[dict[str, Any]], ranges: tuple[tuple[float, float], tuple[float, float]]) -> int:
    """How many bench dots fall outside `ranges`: the text says so, since the figure cannot show them."""
    xy = _xy(bench_points(points))
    (x0, x1), (y0, y1) = ranges
    inside = (xy[:, 0] >= x0) & (xy[:, 0] <= x1) & (xy[:, 1] >= y0) & (xy[:, 1] <= y1)
    return int((~inside).sum())


def short_label(who: str, limit: int = LABEL_CHARS) -> str:
    """The photo's name as the figure writes it: cut with an ellipsis so it never runs off a narrow plot."""
    return who if len(who) <= limit else who[: limit - 1].rstrip() + "…"


def figure(points: list[dict[str, Any]], title: str = "", height: int = 420) -> go.Figure:
    """Colour by condition, shape by forget/retain; the visitor's photo as big stars with arrows and its name, on
    top; zoomed by `view_range`, with axis titles that say only distances matter."""
    fig = go.Figure()
    for cond in CONDITIONS:
        pts = bench_points(points, cond)
        fig.add_trace(
            go.Scatter(
                x=[p["x"] for p in pts],
                y=[p["y"] for p in pts],
                mode="markers",
                name=LEGEND_NAMES[cond],
                marker={
                    "color": COLOURS[cond],
                    "symbol": [SYMBOLS[p["group"]] for p in pts],
                    "size": 8,
                    "opacity": 0.75,
                    "line": {"width": 0.5, "color": "black"},
                },
                text=[p["who"] for p in pts],
                hovertemplate="%{text}<br>" + HOVER_NAMES[cond] + "<extra></extra>",
            )
        )
    for group, symbol in SYMBOLS.items():  # shape legend, without points of its own
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                name=GROUP_NAMES[group],
                marker={"symbol": symbol, "color": "#777", "size": 8},
            )
        )
    ranges = view_range(points)
    _add_visitor(fig, visitor_points(points), ranges)
    fig.update_layout(
        height=height,
        margin={"l": 30, "r": 10, "t": 36 if title else 10, "b": 10},
        legend={"orientation": "h", "x": 0, "y": -0.1, "yanchor": "top", "font": {"size": 11}},
        title={"text": title, "font": {"size": 14}, "x": 0.02} if title else None,
        xaxis={"title": {"text": AXIS_TITLES[0], "font": {"size": 11}}, "range": list(ranges[0])},
        yaxis={"title": {"text": AXIS_TITLES[1], "font": {"size": 11}}, "range": list(ranges[1])},
        plot_bgcolor="#f7f7f7",
    )
    fig.update_xaxes(showticklabels=False, zeroline=False)
    fig.update_yaxes(showticklabels=False, zeroline=False)
    return fig


def _add_visitor(
    fig: go.Figure, yours: dict[str, dict[str, Any]], ranges: tuple[tuple[float, float], tuple[float, float]]
) -> None:
    """The visitor's photo, added last so it is drawn over the bench: stars, arrows clean → noisy → denoised, and
    a boxed label with its name, set toward the middle of the view so it stays inside the plot."""
    if not yours:
        return
    order = sorted(CONDITIONS, key=lambda c: -STAR_SIZES[c])  # largest first: stacked stars read as rings
    who = yours["clean"]["who"]
    fig.add_trace(
        go.Scatter(
            x=[yours[c]["x"] for c in order],
            y=[yours[c]["y"] for c in order],
            mode="markers",
            name=VISITOR_TRACE,
            marker={
                "symbol": "star",
                "size": [STAR_SIZES[c] for c in order],
                "color": [COLOURS[c] for c in order],
                "line": {"width": 2, "color": "black"},
            },
            text=[f"{who}: {HOVER_NAMES[c]}" for c in order],
            hovertemplate="%{text}<extra></extra>",
        )
    )
    path = [yours[c] for c in CONDITIONS]
    for a, b in zip(path, path[1:], strict=False):
        fig.add_annotation(
            x=b["x"], y=b["y"], ax=a["x"], ay=a["y"], xref="x", yref="y", axref="x", ayref="y",
            showarrow=True, arrowhead=3, arrowwidth=2, arrowcolor="#333", text="",
        )  # fmt: skip
    (x0, x1), (y0, y1) = ranges
    anchor = yours["noisy"]
    right_half, top_half = anchor["x"] > (x0 + x1) / 2, anchor["y"] > (y0 + y1) / 2
    fig.add_annotation(
        x=anchor["x"], y=anchor["y"], xref="x", yref="y", text=f"<b>{short_label(who)}</b>",
        showarrow=True, arrowhead=0, arrowwidth=1, arrowcolor="#333",
        ax=-50 if right_half else 50, ay=40 if top_half else -40,  # pixels, toward the middle of the plot
        xanchor="right" if right_half else "left", font={"size": 12, "color": "#111"},
        bgcolor="rgba(255,255,255,0.9)", bordercolor="#333", borderwidth=1, borderpad=3,
        name="visitor label",
    )  # fmt: skip


def _compare(value: float, average: float) -> str:
    """'closer than average' and friends: the words a reader needs beside two distances."""
    if average <= 0:
        return "the bench average is 0"
    ratio = value / average
    if ratio < 0.8:
        return "closer than average"
    if ratio > 1.25:
        return "farther than average"
    return "about average"


def describe(points: list[dict[str, Any]]) -> str:
    """A text alternative for the map that reads on its own: how far noisy points sit from their denoised twins
    and from clean on average, and, when a photo was chosen, its name, its own two distances against those
    averages, and the bench photo it lands nearest."""
    by = {c: bench_points(points, c) for c in CONDITIONS}
    yours = visitor_points(points)
    if not by["clean"] and not yours:
        return "No points."
    parts: list[str] = []
    twin = moved = None
    if by["clean"]:
        xy = {c: _xy(by[c]) for c in CONDITIONS}
        twin = float(np.linalg.norm(xy["noisy"] - xy["denoised"], axis=1).mean())
        moved = float(np.linalg.norm(xy["noisy"] - xy["clean"], axis=1).mean())
        every = _xy(bench_points(points))
        extent = float((every.max(axis=0) - every.min(axis=0)).max())
        parts.append(
            f"Map of {len(by['clean'])} bench photos in 3 conditions (clean, with δ, with δ then denoised): a noisy "
            f"point lies on average {twin:.2f} map units from its denoised twin and {moved:.2f} from its clean "
            f"original; the whole map spans about {extent:.1f} units."
        )
        hidden = out_of_view(points, view_range(points))
        if hidden:
            parts.append(f"{hidden} outlying bench dots lie outside the zoomed view.")
    if yours:
        parts.append(_describe_visitor(yours, by["clean"], twin, moved))
    return " ".join(parts)


def _describe_visitor(
    yours: dict[str, dict[str, Any]], clean: list[dict[str, Any]], twin: float | None, moved: float | None
) -> str:
    """The sentences about the chosen photo: its name, its two distances, and its nearest clean bench photo."""
    p = {c: np.array([yours[c]["x"], yours[c]["y"]]) for c in CONDITIONS}
    own_twin = float(np.linalg.norm(p["noisy"] - p["denoised"]))
    own_moved = float(np.linalg.norm(p["noisy"] - p["clean"]))
    who = yours["clean"]["who"]
    name = "Your photo" if who == "your photo" else f"The chosen photo, {who},"
    if twin is None or moved is None:
        return (
            f"{name} is drawn as big stars: its noisy point sits {own_twin:.2f} map units from its denoised twin "
            f"and {own_moved:.2f} from its clean point."
        )
    text = (
        f"{name} is drawn as big stars: its noisy point sits {own_twin:.2f} map units from its denoised twin "
        f"(bench average {twin:.2f}, {_compare(own_twin, twin)}) and {own_moved:.2f} from its clean point "
        f"(bench average {moved:.2f}, {_compare(own_moved, moved)})."
    )
    gaps = np.linalg.norm(_xy(clean) - p["clean"], axis=1)
    near = int(gaps.argmin())
    nearest, gap = clean[near]["who"], float(gaps[near])
    if nearest == who:  # a bench photo placed afresh lands near, not exactly on, its own dot
        return text + f" Its clean point lands {gap:.2f} units from this same photo's own dot in the bench sample."
    return text + f" Its clean point lands nearest to the clean dot of {nearest}, {gap:.2f} units away."
