"""The Figure 2 analogue of the TK paper (§5.2): effectiveness over the time budget, one curve per model.

As in the paper's figure, a filled marker shows each model's best result (annotated with the number of
documents it re-ranks there) and the curve continues dotted where more time brings nothing better — on the test year
that is hindsight (the paper draws its figure so), so beside it a hollow diamond shows the operating point validation
chooses (the re-ranking depth chapter 2 tuned on validation, at the budget that first reaches it);
the first stage (BM25) is the flat grey line. Curves are step functions, drawn as such, over a
logarithmic budget axis (the models' speeds differ by orders of magnitude).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from lib.core.plotting import PALETTE


def _best_budget(group: pd.DataFrame, measure: str) -> tuple[float, float, int]:
    """The smallest budget at which a model's curve reaches its maximum: (budget, value, depth)."""
    values = group[measure].to_numpy()
    index = int((values >= values.max() - 1e-12).argmax())
    row = group.iloc[index]
    return float(row["budget_ms"]), float(row[measure]), int(row["depth"])


def _draw_curves(
    ax: plt.Axes,
    frame: pd.DataFrame,
    measure: str,
    colours: Mapping[str, tuple],
    labels: Mapping[str, str],
    limits: tuple[float, float],
    references: Sequence[str] = (),
    chosen_depths: Mapping[str, int] | None = None,
) -> None:
    """Each model's step curve of ``measure`` on ``ax``, solid to its best (marked, annotated with its depth) and
    dotted after, and a hollow diamond where it first reaches its depth of ``chosen_depths`` (validation's); a model of
    ``references`` (the teacher) is drawn dashed and grey-toned, without a marker."""
    left, right = limits
    for model in dict.fromkeys(frame["model"]):
        group = frame[frame["model"] == model].sort_values("budget_ms")
        budgets = [max(b, left) for b in group["budget_ms"]] + [right]
        values = [*group[measure], group[measure].iloc[-1]]
        colour, label = colours[model], labels.get(model, model)
        if model in references:
            ax.plot(budgets, values, drawstyle="steps-post", color=colour, linestyle="--", alpha=0.7, label=label)
            continue
        budget, value, depth = _best_budget(group, measure)
        solid = [(b, v) for b, v in zip(budgets, values, strict=True) if b <= max(budget, left)]
        dotted = [(b, v) for b, v in zip(budgets, values, strict=True) if b >= max(budget, left)]
        ax.plot(*zip(*solid, strict=True), drawstyle="steps-post", color=colour, label=label)
        ax.plot(*zip(*dotted, strict=True), drawstyle="steps-post", color=colour, linestyle=":")
        ax.plot([max(budget, left)], [value], marker="o", color=colour, markersize=6)
        ax.annotate(str(depth), (max(budget, left), value), textcoords="offset points", xytext=(3, 4), fontsize=8,
                    color=colour)  # fmt: skip
        if chosen_depths and model in chosen_depths:
            reached = group[group["depth"] >= min(chosen_depths[model], int(group["depth"].max()))].iloc[0]
            ax.plot([max(float(reached["budget_ms"]), left)], [float(reached[measure])], marker="D", markersize=7,
                    markerfacecolor="none", markeredgecolor=colour, linestyle="")  # fmt: skip
    ax.set_xscale("log")
    ax.set_xlim(left, right)
    ax.set_xlabel("time budget per query (ms, log scale)")
    ax.set_ylabel(measure)


def _limits(frames: Sequence[pd.DataFrame]) -> tuple[float, float]:
    positive = pd.concat([frame[frame["budget_ms"] > 0] for frame in frames])
    if positive.empty:
        raise ValueError("the frame holds no positive budget: nothing to draw on a logarithmic axis")
    return positive["budget_ms"].min() / 1.5, positive["budget_ms"].max() * 1.5


def plot_budget_curves(
    frame: pd.DataFrame,
    measures: Sequence[str],
    first_stage: Mapping[str, float],
    labels: Mapping[str, str] | None = None,
    title: str | None = None,
    first_stage_label: str = "BM25 (first stage)",
    chosen_depths: Mapping[str, int] | None = None,
) -> Figure:
    """One panel per measure of a :func:`lib.evaluation.time_budget.budget_curves` frame evaluated at its breakpoints.

    ``first_stage`` gives the first stage's value of each measure (the flat line); ``labels`` the
    legend name of each model; ``chosen_depths`` each model's re-ranking depth chosen on validation (its hollow
    diamond; the legend then names both markers).
    """
    models = list(dict.fromkeys(frame["model"]))
    colours = dict(zip(models, sns.color_palette(PALETTE, len(models)), strict=True))
    limits = _limits([frame])
    figure, axes = plt.subplots(1, len(measures), figsize=(5.2 * len(measures), 4.2), squeeze=False)
    for ax, measure in zip(axes[0], measures, strict=True):
        ax.axhline(first_stage[measure], color="0.45", linestyle="--", linewidth=1.2, label=first_stage_label)
        _draw_curves(ax, frame, measure, colours, labels or {}, limits, chosen_depths=chosen_depths)
    handles, names = axes[0][-1].get_legend_handles_labels()
    if chosen_depths:
        handles += [
            plt.Line2D([], [], marker="o", color="0.3", linestyle=""),
            plt.Line2D([], [], marker="D", markerfacecolor="none", markeredgecolor="0.3", linestyle=""),
        ]
        names += ["best on this test year (hindsight)", "depth chosen on validation"]  # fmt: skip
    axes[0][-1].legend(handles, names, loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False)
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    return figure


def plot_regimes(
    frames: Mapping[str, pd.DataFrame],
    measure: str,
    first_stage: float,
    labels: Mapping[str, str],
    teacher: str | None = None,
    title: str | None = None,
) -> Figure:
    """One panel per regime (``frames``: regime → :func:`lib.evaluation.time_budget.budget_curves` frame), the same
    models in the same colours on a shared budget axis, BM25 as the flat line; ``teacher`` (the model the students
    learned from) dashed, a reference and not a contestant."""
    models = list(dict.fromkeys(model for frame in frames.values() for model in frame["model"]))
    colours = dict(zip(models, sns.color_palette(PALETTE, len(models)), strict=True))
    limits = _limits(list(frames.values()))
    figure, axes = plt.subplots(1, len(frames), figsize=(5.6 * len(frames), 4.4), squeeze=False, sharey=True)
    for ax, (regime, frame) in zip(axes[0], frames.items(), strict=True):
        ax.axhline(first_stage, color="0.45", linestyle="--", linewidth=1.2, label="BM25 (first stage)")
        _draw_curves(ax, frame, measure, colours, labels, limits, references=(teacher,) if teacher else ())
        ax.set_title(regime)
    axes[0][-1].legend(loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False)
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    return figure
