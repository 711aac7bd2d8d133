"""Chapter 2's ladder of pre-training depth: how much pre-trained knowledge a kernel model needs to beat BM25.

The TK paper's TK (§3) contextualises GloVe vectors with small Transformer layers learned from 40M
triples. At book scale the same TK stays level with BM25, so chapter 2 climbs a ladder of starting
points, each rung one more step of pre-trained knowledge, with everything else fixed (chapter 2's
protocol, Margin-MSE from the same teacher, the same validation and test queries):

1. **word vectors** — KNRM, Conv-KNRM, TK-1/2/3 on GloVe (TK's own layers learned from scratch);
2. **static pieces** — the same models on static word-piece vectors distilled from the starting BERT's
   outputs (:mod:`lib.representations.piece_vectors`);
3. **BERT's first layers** — TK whose contextualiser is the starting BERT's first 1, 2, 3 or all layers
   (:mod:`lib.models.tk_bert`);
4. **all of BERT, fine-tuned** — ColBERT and BERT-cat;
5. **the teacher** — the bi-encoder itself, zero-shot.

:func:`ladder_table` puts every rung's models in one table (both test years, the tuned depth and all
candidates, the t-test against BM25, documents per ms on the same run), :func:`ladder_figure` draws
effectiveness against speed, and :func:`ladder_reading` answers the section's question from the numbers.
The TK that later chapters study is chosen by validation alone (:mod:`lib.experiments.tk_choice`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from lib.experiments.tk_choice import is_tk
from lib.models.registry import model_spec

#: The rungs in order of pre-trained knowledge, as the table and the figure name them.
RUNGS: tuple[str, ...] = (
    "word vectors",
    "static pieces",
    "BERT's first layers",
    "all of BERT, fine-tuned",
    "teacher (zero-shot)",
)


def rung(name: str) -> str:
    """The rung of registry model ``name`` (:data:`RUNGS`), from its tokenizer family and whether it is a TK."""
    spec = model_spec(name)
    if spec.zero_shot:
        return RUNGS[4]
    if spec.family == "word":
        return RUNGS[0]
    if spec.family == "pieces":
        return RUNGS[1]
    return RUNGS[2] if is_tk(name) else RUNGS[3]


def ladder_table(
    table: pd.DataFrame, significance: pd.DataFrame, models: Sequence[str], validation: Mapping[str, float]
) -> pd.DataFrame:
    """One row per test year and model of ``models`` (in rung order, then ``models``' order).

    ``table`` has chapter 2's Table 2 columns (``set``, ``model``, ``nDCG@10``, ``depth``, ``nDCG@10 (all)``,
    ``docs/ms``) and a ``BM25`` row per year; ``significance`` the t-tests against BM25
    (``set``, ``depth`` — ``"all"`` and ``"tuned"`` are read —, ``system``, ``p_bonferroni``, ``significant``);
    ``validation`` each trained model's best validation measure (NaN or missing: zero-shot).
    """
    order = sorted(models, key=lambda name: (RUNGS.index(rung(name)), list(models).index(name)))
    rows = []
    for fold in table["set"].drop_duplicates():
        by_model = table[table["set"] == fold].set_index("model")
        tests = significance[significance["set"] == fold].set_index(["depth", "system"])
        bm25 = float(by_model.loc["BM25", "nDCG@10"])
        for name in order:
            rows.append({
                "set": fold,
                "model": name,
                "label": model_spec(name).label,
                "rung": rung(name),
                "nDCG@10 (tuned)": float(by_model.loc[name, "nDCG@10"]),
                "depth": int(by_model.loc[name, "depth"]),
                "nDCG@10 (all)": float(by_model.loc[name, "nDCG@10 (all)"]),
                "Δ BM25 (all)": float(by_model.loc[name, "nDCG@10 (all)"]) - bm25,
                "p (all)": float(tests.loc[("all", name), "p_bonferroni"]),
                "significant (all)": bool(tests.loc[("all", name), "significant"]),
                "p (tuned)": float(tests.loc[("tuned", name), "p_bonferroni"]),
                "docs/ms": float(by_model.loc[name, "docs/ms"]),
                "validation": float(validation.get(name, math.nan)),
            })  # fmt: skip
    return pd.DataFrame(rows)


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


def beats_bm25_everywhere(ladder: pd.DataFrame) -> list[str]:
    """The models significantly above BM25 re-ranking all candidates on every test year of ``ladder``."""
    above = ladder[ladder["significant (all)"] & (ladder["Δ BM25 (all)"] > 0)]
    years = ladder["set"].nunique()
    counts = above.groupby("model")["set"].nunique()
    return [name for name in ladder["model"].drop_duplicates() if counts.get(name, 0) == years]


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
