"""Figures of the query analysis (TK paper §5.3) and of TK's interpretation (§6), in the book's style.

- :func:`plot_inertia_curve` — the elbow method: k-means inertia over k, the chosen k marked.
- :func:`plot_query_map` — the 2-D PCA map of the queries coloured by cluster, cluster ids at their
  medians, optionally a subset (the TREC DL queries) drawn on top.
- :func:`plot_match_matrix` — the cosine match matrix ``M`` of one pair (eq. 4) as a heatmap.

Each returns its matplotlib Figure (save it with :func:`lib.core.plotting.save_figure`); call
:func:`lib.core.plotting.set_style` once before plotting.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from lib.analyses.explain_tk import PairExplanation
from lib.analyses.query_clusters import QueryMap
from lib.core.plotting import PALETTE


def plot_inertia_curve(curve: pd.Series, chosen_k: int | None = None) -> Figure:
    """Inertia (y) over k (x) from :func:`lib.analyses.query_clusters.inertia_curve`; ``chosen_k`` as a dashed line."""
    if curve.empty:
        raise ValueError("parameter 'curve' is empty: nothing to plot")
    if chosen_k is not None and chosen_k not in curve.index:
        raise ValueError(f"parameter 'chosen_k' ({chosen_k}) is not a k of the curve")
    figure, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(curve.index, curve.to_numpy(), marker="o", markersize=4)
    if chosen_k is not None:
        ax.axvline(chosen_k, linestyle="--", color="grey")
        ax.annotate(f"elbow: k = {chosen_k}", (chosen_k, curve[chosen_k]), xytext=(8, 8), textcoords="offset points")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set(xlabel="number of clusters k", ylabel="k-means inertia", title="Elbow method")
    return figure


def plot_query_map(
    query_map: QueryMap,
    labels: np.ndarray,
    highlight: np.ndarray | None = None,
    highlight_label: str = "TREC DL query",
    point_size: float = 6.0,
) -> Figure:
    """The queries on their first two principal components, coloured by cluster id (``labels``).

    Cluster ids are written at each cluster's median point. ``highlight`` (a boolean mask over the
    queries, e.g. the TREC DL queries) draws those queries on top, larger and outlined in black.
    """
    points = query_map.points
    labels = np.asarray(labels)
    if labels.shape != (len(points),):
        raise ValueError(f"parameter 'labels' must have one label per point ({len(points)}), got shape {labels.shape}")
    if highlight is not None:
        highlight = np.asarray(highlight, dtype=bool)
        if highlight.shape != (len(points),):
            raise ValueError(f"parameter 'highlight' must be a mask over the {len(points)} points")
    clusters = np.unique(labels)
    palette = dict(
        zip(clusters, sns.color_palette(PALETTE if len(clusters) <= 10 else "husl", len(clusters)), strict=True)
    )
    figure, ax = plt.subplots(figsize=(8, 6))
    frame = pd.DataFrame({"pc1": points[:, 0], "pc2": points[:, 1], "cluster": labels})
    sns.scatterplot(
        data=frame,
        x="pc1",
        y="pc2",
        hue="cluster",
        palette=palette,
        s=point_size,
        linewidth=0,
        alpha=0.6,
        legend=False,
        ax=ax,
    )
    if highlight is not None and highlight.any():
        shown = frame[highlight]
        ax.scatter(
            shown["pc1"],
            shown["pc2"],
            c=[palette[c] for c in shown["cluster"]],
            s=point_size * 6,
            edgecolors="black",
            linewidths=0.8,
        )
        marker = Line2D([], [], marker="o", linestyle="", markerfacecolor="white", markeredgecolor="black")
        ax.legend(handles=[marker], labels=[highlight_label], loc="best")
    for cluster in clusters:
        centre = frame[frame["cluster"] == cluster][["pc1", "pc2"]].median()
        ax.text(
            centre["pc1"],
            centre["pc2"],
            str(cluster),
            ha="center",
            va="center",
            fontsize=8,
            fontweight="bold",
            bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": palette[cluster], "alpha": 0.8},
        )
    first, second = (100 * ratio for ratio in query_map.explained_variance_ratio)
    ax.set(
        xlabel=f"PC 1 ({first:.0f}% of the variance)",
        ylabel=f"PC 2 ({second:.0f}% of the variance)",
        title="Queries by cluster (mean TK query vectors, PCA)",
    )
    return figure


def plot_match_matrix(explanation: PairExplanation, max_passage_tokens: int | None = None) -> Figure:
    """The cosine match matrix of one pair (eq. 4): query tokens as rows, passage tokens as columns.

    The colour scale is fixed to [−1, 1] (diverging, white at 0); ``max_passage_tokens`` cuts the
    passage after that many tokens to keep the figure readable.
    """
    if max_passage_tokens is not None and max_passage_tokens < 1:
        raise ValueError(f"parameter 'max_passage_tokens' must be >= 1 or None, got {max_passage_tokens}")
    match = explanation.match[:, :max_passage_tokens]
    passage_tokens = explanation.passage_tokens[: match.shape[1]]
    width = min(2.5 + 0.22 * match.shape[1], 30.0)
    height = 2.2 + 0.35 * match.shape[0]
    figure, ax = plt.subplots(figsize=(width, height))
    sns.heatmap(
        match,
        vmin=-1.0,
        vmax=1.0,
        center=0.0,
        cmap="vlag",
        xticklabels=passage_tokens,
        yticklabels=explanation.query_tokens,
        cbar_kws={"label": "cosine", "shrink": 0.8},
        ax=ax,
    )
    ax.tick_params(axis="x", labelrotation=90, labelsize=7)
    ax.tick_params(axis="y", labelrotation=0)
    ax.set(xlabel="passage token", ylabel="query token", title="Cosine match matrix M (eq. 4)")
    return figure
