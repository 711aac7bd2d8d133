"""Chapter 6's figures: the fine-tuning losses, and the Figure 2 analogue of the TILDE paper (§5.4): TILDE-QDL's
effectiveness over the weight α of eq. 6."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from lib.core.plotting import PALETTE


def plot_alpha_sweep(
    frame: pd.DataFrame,
    references: Mapping[tuple[str, str, str], float],
    measures: Sequence[str] = ("nDCG@10", "MAP"),
) -> Figure:
    """One panel per (measure, test set) as the paper's figure: a line per first stage over α from 0 (DL) to 1 (QL).

    ``frame`` has columns ``set``, ``first_stage``, ``alpha``, ``measure``, ``value``
    (:func:`lib.experiments.tilde_scorings.alpha_sweep` with the two labels added); ``references`` maps
    ``(set, first_stage, measure)`` to the first stage's own value, drawn as a dashed line in the
    first stage's colour.
    """
    missing = {"set", "first_stage", "alpha", "measure", "value"} - set(frame.columns)
    if missing:
        raise ValueError(f"the α-sweep frame lacks the column(s) {sorted(missing)}")
    sets = list(dict.fromkeys(frame["set"]))
    stages = list(dict.fromkeys(frame["first_stage"]))
    colours = dict(zip(stages, sns.color_palette(PALETTE, len(stages)), strict=True))
    figure, axes = plt.subplots(
        len(measures), len(sets), figsize=(4.2 * len(sets), 3.2 * len(measures)), squeeze=False, sharex=True
    )
    for row, measure in enumerate(measures):
        for column, query_set in enumerate(sets):
            axis = axes[row][column]
            for stage in stages:
                part = frame[
                    (frame["set"] == query_set) & (frame["first_stage"] == stage) & (frame["measure"] == measure)
                ]
                part = part.sort_values("alpha")
                axis.plot(part["alpha"], part["value"], marker="o", color=colours[stage], label=f"{stage} + TILDE-QDL")
                reference = references.get((query_set, stage, measure))
                if reference is not None:
                    axis.axhline(reference, color=colours[stage], linestyle="--", linewidth=1, label=f"{stage} alone")
            axis.set_title(f"{query_set.upper()}: {measure}")
            axis.set_xlabel("α (0: TILDE-DL only, 1: TILDE-QL only)" if row == len(measures) - 1 else "")
            axis.set_ylabel(measure if column == 0 else "")
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=max(1, len(labels)), bbox_to_anchor=(0.5, -0.04))
    figure.tight_layout(rect=(0, 0.05, 1, 1))
    return figure


def plot_training_losses(curves: pd.DataFrame, steps: int) -> Figure:
    """A line per variant: the loss per pair over the steps (log scale), smoothed by a rolling mean over a
    twentieth of ``steps``. ``curves`` is :func:`lib.chapters.tilde_tables.loss_curves`."""
    figure, axis = plt.subplots(figsize=(6.5, 3.4))
    for label, part in curves.groupby("variant", sort=False):
        smooth = part["loss"].rolling(max(1, steps // 20), min_periods=1).mean()
        axis.plot(part["step"], smooth, label=label)
    axis.set_yscale("log")
    axis.set_xlabel("step")
    axis.set_ylabel("loss per pair (smoothed)")
    axis.legend(fontsize="small")
    return figure


__all__ = ["plot_alpha_sweep", "plot_training_losses"]
