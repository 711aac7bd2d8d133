"""Chapter 2's ladder of pre-training depth as shown: how much pre-trained knowledge a kernel model needs.

The rungs (word vectors, static pieces, BERT's first layers, all of BERT fine-tuned, the teacher) and the
table of every rung's models are :mod:`lib.experiments.pretraining_ladder`'s; :func:`ladder_figure` draws
effectiveness against speed, and :func:`ladder_reading` answers the section's question from the numbers.
The TK that later chapters study is chosen by validation alone (:mod:`lib.experiments.tk_choice`).
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from lib.experiments.pretraining_ladder import RUNGS, beats_bm25_everywhere, rung
from lib.models.registry import model_spec


def ladder_figure(ladder: pd.DataFrame, bm25: Mapping[str, float]) -> Figure:
    """nDCG@10 re-ranking all candidates against documents per ms (log scale), one panel per test year.

    One colour per rung; a filled marker is significantly above or below BM25 (Bonferroni), a hollow one is
    not; the dashed line is BM25 (``bm25``: its nDCG@10 by year).
    """
    folds = list(ladder["set"].drop_duplicates())
    colours = dict(zip(RUNGS, sns.color_palette(n_colors=len(RUNGS)), strict=True))
    figure, axes = plt.subplots(1, len(folds), figsize=(6.2 * len(folds), 4.6), sharey=True, squeeze=False)
    for axis, fold in zip(axes[0], folds, strict=True):
        rows = ladder[ladder["set"] == fold]
        axis.axhline(bm25[fold], color="black", linestyle="--", linewidth=1, label="BM25")
        for _, row in rows.iterrows():
            colour = colours[row["rung"]]
            axis.scatter(
                row["docs/ms"], row["nDCG@10 (all)"], s=55, color=colour if row["significant (all)"] else "white",
                edgecolor=colour, linewidth=1.8, zorder=3,
            )  # fmt: skip
            axis.annotate(row["label"], (row["docs/ms"], row["nDCG@10 (all)"]), textcoords="offset points",
                          xytext=(5, 4), fontsize=7.5)  # fmt: skip
        axis.set_xscale("log")
        axis.set_title(fold.upper())
        axis.set_xlabel("documents per ms (this machine, log scale)")
    axes[0][0].set_ylabel("nDCG@10, all candidates re-ranked")
    handles = [plt.Line2D([], [], marker="o", linestyle="", color=colours[r], label=r) for r in RUNGS]
    handles.append(plt.Line2D([], [], color="black", linestyle="--", label="BM25"))
    axes[0][-1].legend(handles=handles, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8)
    return figure


def ladder_reading(ladder: pd.DataFrame, reference: str = "bert-cat") -> str:
    """The ladder's answer, generated from ``ladder``: from which rung a kernel model beats BM25 significantly
    on every test year re-ranking all candidates, the cheapest such kernel model, and its speed against
    ``reference`` (documents per ms on the same run; the issue's bar: at least 5×)."""
    kernel = [name for name in ladder["model"].drop_duplicates() if rung(name) in RUNGS[:3]]
    winners = [name for name in beats_bm25_everywhere(ladder) if name in kernel]
    speed = ladder.groupby("model")["docs/ms"].median()
    lines = []
    for step in RUNGS[:3]:
        members = [name for name in kernel if rung(name) == step]
        if not members:
            continue
        won = [model_spec(name).label for name in members if name in winners]
        lines.append(
            f"*{step}*: " + (f"{', '.join(won)} significantly above BM25 on every test year" if won
                             else "no model significantly above BM25 on every test year")
        )  # fmt: skip
    if not winners:
        best = ladder[ladder["model"].isin(kernel)].groupby("model")["Δ BM25 (all)"].min().idxmax()
        lines.append(
            f"No kernel model beats BM25 significantly on every test year; the closest is {model_spec(best).label} "
            f"(its smaller gain over the years: {ladder[ladder['model'] == best]['Δ BM25 (all)'].min():+.3f})"
            + _speed_against(best, reference, speed, effective=False)
        )
        return "; ".join(lines[:-1]) + (". " if len(lines) > 1 else "") + lines[-1]
    cheapest = max(winners, key=lambda name: speed[name])
    return (
        "; ".join(lines)
        + f". The cheapest kernel model above BM25 everywhere is {model_spec(cheapest).label}"
        + _speed_against(cheapest, reference, speed)
    )


def _speed_against(name: str, reference: str, speed: pd.Series, effective: bool = True) -> str:
    """The end of a reading's sentence: ``name``'s documents per ms against ``reference``'s and the 5× bar;
    ``effective``: whether ``name`` beats BM25 (else a fast model misses on effectiveness, not on speed)."""
    if reference not in speed.index:
        return "."
    ratio = speed[name] / speed[reference]
    if ratio < 5:
        verdict = f"{5 / ratio:.1f}× short of the 5× that would make it worth having"
    elif effective:
        verdict = "at least 5×, the speed that makes it worth having"
    else:
        verdict = "at least 5×: it misses on effectiveness, not on speed"
    return f", at {ratio:.1f}× {model_spec(reference).label}'s documents per ms ({verdict})."
