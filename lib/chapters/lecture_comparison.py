"""Chapter 8: the lecture's models side by side (lecture 8, slides 16–27 and 30–33).

- :data:`ARCHITECTURES` — per model, what an index stores per passage and what runs at query time
  (slide 27's columns, in words);
- :func:`effectiveness_table` — each test year's nDCG@10 and paired test per model (slide 11's table, and the first
  columns of the next);
- :func:`comparison_table` — effectiveness, latency and storage in one table (chapter 8 passes each model's query
  latency and bytes per passage from chapter 3's clock, :func:`lib.experiments.regime_costs.query_time`, and joins
  its peak GPU memory from :func:`lib.evaluation.regimes.gpu_memory`); :func:`projection_view` — the same in five
  columns, for a projector;
- :func:`whole_latency` — chapter 3's run-whole latencies, for slide 14's picture;
- :func:`plot_tradeoff` — nDCG@10 against query latency (log axis), chapter 3's budgets marked, PreTTR's
  splits as a dial on the same axes (:func:`label_offsets` keeps nearly coinciding models' labels apart);
- :func:`monotone_reading` — whether TK-Sparse's λ sweep removes more words with every larger λ;
- :func:`prettr_reading` — the adopted PreTTR split against the same split untrained, BERT-cat and BM25.

TK-Sparse's contextualised stopwords (slide 33) are analysed in :mod:`lib.analyses.stopword_gate`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import pandas as pd

from lib.core import paths
from lib.core.profiles import Profile
from lib.core.types import JudgedSet
from lib.data import read_run
from lib.evaluation.measures import evaluate
from lib.experiments.model_runs import ALL_CANDIDATES, ModelResult

#: How far (nDCG@10) below BERT-cat a split PreTTR may be for the lecture's claim to hold (issue target, slide 19).
PRETTR_MARGIN = 0.05

#: Per model: (what an index stores per passage, what runs at query time for each query).
ARCHITECTURES: dict[str, tuple[str, str]] = {
    "bm25": ("an inverted index (the first stage itself)", "the first stage only: no re-ranking"),
    "bert-cat": ("the text only", "all BERT layers on every (query, passage) pair"),
    "prettr": (
        "a vector per word piece after the first k layers",
        "the first k layers on the query; the last layers on every pair",
    ),
    "colbert": ("a small vector per word piece (all layers)", "BERT on the query; max-sim with every passage"),
    "tk2": ("a vector per word (TK's contextualisation)", "TK's layers on the query; kernels on every passage"),
    "tk2-sparse": ("a vector per word the gate keeps", "TK's layers on the query; kernels on the kept words"),
    **{
        f"tk{n}-pieces": (
            "a vector per word piece (TK's layers on static pieces)",
            "TK's layers on the query; kernels on every passage",
        )
        for n in (1, 2, 3)
    },
    **{
        f"tk-bert{n}": (
            f"a vector per word piece (BERT's first {n} layers)",
            f"BERT's first {n} layers on the query; kernels on every passage",
        )
        for n in (1, 2, 3, 6)
    },
    "bi-encoder": ("one vector per passage", "BERT on the query; one dot product per passage"),
    "tilde-qdl": ("a log-probability per vocabulary piece", "BERT on the query; a look-up per query piece"),
    "tildev2": ("a weight per passage word piece", "the query's pieces; a look-up per piece (no network)"),
}


def effectiveness_table(effectiveness: Mapping[str, pd.DataFrame], labels: Mapping[str, str]) -> pd.DataFrame:
    """Per model of ``labels`` (name → row label, in row order) and test set of ``effectiveness``
    (:func:`lib.evaluation.comparison.compare`'s frames), its ``<SET> nDCG@10`` and, where the frame has a
    baseline, ``<SET> p vs <baseline>`` (the corrected paired test, ``*`` where significant); a model missing from a
    set has an empty cell there."""
    rows = []
    for name, label in labels.items():
        row: dict[str, object] = {"model": label}
        for query_set, means in effectiveness.items():
            if name in means.index:
                row[f"{query_set.upper()} nDCG@10"] = float(means.loc[name, "nDCG@10"])
                row.update(_p_against_baseline(means, name, query_set))
        rows.append(row)
    table = pd.DataFrame(rows).set_index("model")
    return table[sorted(c for c in table.columns if c.endswith("nDCG@10") or " p vs " in c)]


def comparison_table(
    effectiveness: Mapping[str, pd.DataFrame],
    latency: pd.DataFrame,
    storage: Mapping[str, float],
    labels: Mapping[str, str],
) -> pd.DataFrame:
    """Slide 27's table for the book: one row per model, :func:`effectiveness_table`'s columns, then the latencies
    and what an index stores.

    ``latency``: columns ``model``, ``candidates``, ``ms`` (the query-time latency); ``storage``: bytes per passage
    by model. Rows follow ``labels``' order; a model missing from a source has an empty cell there.
    """
    rows = []
    for name, label in labels.items():
        row: dict[str, object] = {"model": label}
        for count, group in latency[latency["model"] == name].groupby("candidates"):
            row[f"ms for {count}"] = float(group["ms"].iloc[0])
        row["bytes per passage"] = storage.get(name)
        stored, at_query_time = ARCHITECTURES.get(name, ("", ""))
        row["stored per passage"], row["at query time"] = stored, at_query_time
        rows.append(row)
    costs = pd.DataFrame(rows).set_index("model")
    latencies = [c for c in costs.columns if c.startswith("ms for")]
    return effectiveness_table(effectiveness, labels).join(
        costs[latencies + ["bytes per passage", "stored per passage", "at query time"]]
    )


def whole_latency(regimes: pd.DataFrame, count: int) -> pd.DataFrame:
    """Chapter 3's cost table of the two regimes (``regimes``) reduced to its run-whole latencies at ``count``
    candidates, one row per model (``model``, ``candidates``, ``ms``): :func:`comparison_table`'s ``latency`` for slide
    14's picture."""
    whole = regimes[regimes["regime"] == "whole"].drop_duplicates("model")
    return pd.DataFrame({"model": whole["model"], "candidates": count, "ms": whole[f"ms_{count}"].astype(float)})


def projection_view(table: pd.DataFrame, count: int) -> pd.DataFrame:
    """:func:`comparison_table`'s table in five columns, for a projector: each year's nDCG@10 (``*`` where its test
    against the baseline is significant), the query-time latency of ``count`` candidates, bytes per passage and the
    first device's peak GPU memory (when the table has one)."""
    view = pd.DataFrame(index=table.index)
    for column in sorted(c for c in table.columns if c.endswith(" nDCG@10")):
        year = column.split()[0]
        tests = next((c for c in table.columns if c.startswith(f"{year} p vs ")), None)
        marks = table[tests].astype(str).str.endswith("*") if tests else pd.Series(False, index=table.index)
        view[column] = [
            "" if pd.isna(value) else f"{value:.3f}{'*' if mark else ''}"
            for value, mark in zip(table[column], marks, strict=True)
        ]
    view[f"ms / {count}"] = [f"{value:,.1f}" if pd.notna(value) else "" for value in table[f"ms for {count}"]]
    view["bytes / passage"] = [f"{value:,.0f}" if pd.notna(value) else "" for value in table["bytes per passage"]]
    gpu = [c for c in table.columns if c.startswith("peak GPU MiB")]
    if gpu:
        view[gpu[0].replace("peak GPU MiB", "GPU MiB")] = [
            f"{value:,.0f}" if pd.notna(value) else "" for value in table[gpu[0]]
        ]
    return view


def _p_against_baseline(means: pd.DataFrame, name: str, query_set: str) -> dict[str, str]:
    """The cell ``<SET> p vs <baseline>`` of a :func:`lib.evaluation.comparison.compare` frame with a baseline: the
    corrected p with ``*`` where significant, "—" for the baseline itself; nothing without a baseline."""
    baseline, correction = means.attrs.get("baseline"), means.attrs.get("correction")
    if baseline is None:
        return {}
    column = f"{query_set.upper()} p vs {baseline}"
    if name == baseline:
        return {column: "—"}
    p_value, significant = means.loc[name, f"nDCG@10 p_{correction}"], means.loc[name, "nDCG@10 significant"]
    return {column: f"{p_value:.3f}{'*' if significant else ''}"}


def label_offsets(
    latencies: Sequence[float], values: Sequence[float], near: tuple[float, float] = (0.15, 0.05)
) -> list[tuple[int, int]]:
    """Text offsets (points) for the labels of points at ``latencies`` (log axis) and ``values``: above right,
    or below right when an earlier point lies within ``near`` — (decades of latency, share of the values'
    range) — so that two nearly coinciding models (TK-2 and TK-Sparse) keep readable labels."""
    span = (max(values) - min(values)) or 1.0
    offsets: list[tuple[int, int]] = []
    for index, (latency, value) in enumerate(zip(latencies, values, strict=True)):
        crowded = any(
            abs(math.log10(latency) - math.log10(latencies[other])) < near[0]
            and abs(value - values[other]) < near[1] * span
            and offsets[other][1] > 0
            for other in range(index)
        )
        offsets.append((6, -12) if crowded else (6, 4))
    return offsets


def plot_tradeoff(
    table: pd.DataFrame,
    effectiveness: str,
    latency: str,
    budgets: Sequence[float],
    title: str,
    dial: pd.DataFrame | None = None,
) -> plt.Figure:
    """nDCG@10 (``effectiveness`` column) against query latency (``latency`` column, log axis), one point per
    model, with vertical lines at the time ``budgets`` (ms). Models without a latency are left out.

    ``dial``: one model's settings on the same axes, joined by a line — PreTTR's splits, indexed by ``k``
    with the same two columns — each point labelled ``k=…``."""
    shown = table.dropna(subset=[effectiveness, latency])
    if shown.empty:
        raise ValueError(f"no model has both {effectiveness!r} and {latency!r}")
    figure, axis = plt.subplots(figsize=(7.5, 4.5))
    for budget in budgets:
        axis.axvline(budget, color="0.8", linestyle=":", linewidth=1, zorder=0)
        axis.text(budget, 1.0, f"{budget:g} ms", transform=axis.get_xaxis_transform(), rotation=90,
                  va="top", ha="right", fontsize=7, color="0.5")  # fmt: skip
    colours = itertools.cycle(plt.rcParams["axes.prop_cycle"].by_key()["color"])
    offsets = label_offsets(shown[latency].tolist(), shown[effectiveness].tolist())
    for (label, row), colour, offset in zip(shown.iterrows(), colours, offsets, strict=False):
        axis.scatter(row[latency], row[effectiveness], s=60, color=colour, zorder=3)
        axis.annotate(label, (row[latency], row[effectiveness]), textcoords="offset points", xytext=offset, fontsize=9)
    if dial is not None:
        line = dial.dropna(subset=[effectiveness, latency])
        axis.plot(line[latency], line[effectiveness], marker="o", markersize=4, color="0.45", linewidth=1, zorder=2)
        for k, row in line.iterrows():
            axis.annotate(f"k={k}", (row[latency], row[effectiveness]), textcoords="offset points", xytext=(4, -10),
                          fontsize=7, color="0.35")  # fmt: skip
    axis.set_xscale("log")
    axis.set_xlabel(f"query latency, {latency.removeprefix('ms for ')} candidates (ms, log scale)")
    axis.set_ylabel(effectiveness)
    axis.set_title(title)
    figure.tight_layout()
    return figure


def monotone_reading(sweep: pd.DataFrame) -> str:
    """Whether TK-Sparse's sweep (``sweep``: a row per removal target with ``target`` and ``removed (validation
    passages)``, other rows without a target ignored) is monotone — each larger target removing at least the share of
    the one before — and where it is not."""
    rows = sweep.dropna(subset=["target"]).sort_values("target")
    shares = list(zip(rows["target"], rows["removed (validation passages)"], strict=True))
    breaks = [(low, high) for low, high in itertools.pairwise(shares) if high[1] < low[1]]
    listed = ", ".join(f"target {target:.0%}: {share:.0%}" for target, share in shares)
    if not breaks:
        return f"The sweep is monotone: each larger target removes at least the share of the one before ({listed})."
    where = "; ".join(f"target {high[0]:.0%} removes {high[1]:.0%}, less than target {low[0]:.0%}'s {low[1]:.0%}"
                      for low, high in breaks)  # fmt: skip
    return f"The sweep is not monotone: {where} ({listed})."


def mono_duo_reading(table: pd.DataFrame, measure: str) -> str:
    """Chapter 8's reading of :func:`lib.experiments.mono_duo.mono_duo_table`: per year, mono-duo's ``measure``
    against mono's with the test's verdict, and what the duo step costs per query."""
    sentences = []
    for row in table.to_dict("records"):
        verdict = (
            ("significantly higher than" if row["delta"] > 0 else "significantly lower than")
            if row["significant"] else "not significantly different from"
        )  # fmt: skip
        sentences.append(
            f"On {row['year']} mono-duo's {measure} ({row[f'mono-duo {measure}']:.3f}) is {verdict} mono BERT-cat's "
            f"({row[f'mono {measure}']:.3f}; paired t-test over {row['queries']} queries, p = {row['p']:.3f})."
        )
    sentences.append(
        f"The duo step costs {int(table['duo passes / query'].iloc[0])} passes per query, "
        f"{table['duo ms / query'].median():,.0f} ms per query (the median over the years' per-query medians)."
    )
    return " ".join(sentences)


def tradeoff_reading(table: pd.DataFrame, candidates: int, teacher: str) -> str:
    """The comparison table in one reading (``table``: :func:`comparison_table`'s, a "BM25" row, a "DL19 p vs
    bert-cat" column): the student with the highest DL19 nDCG@10 (the ``teacher`` row left out) and its test against
    BERT-cat, the fastest at ``candidates`` candidates, and BM25's bar."""
    best = table["DL19 nDCG@10"].drop(["BM25", teacher], errors="ignore").idxmax()
    p = str(table.loc[best, "DL19 p vs bert-cat"])
    tested = "it is BERT-cat" if p == "—" else f"against BERT-cat p = {p} ({'' if '*' in p else 'not '}significant)"
    fastest = table[f"ms for {candidates}"].dropna().idxmin()
    return (
        f"On DL19 the highest nDCG@10 among the students here is **{best}**'s ({tested}; the teacher, {teacher}, is "
        f"a reference); the fastest at {candidates} candidates is **{fastest}**. BM25 scores nDCG@10 "
        f"{table.loc['BM25', 'DL19 nDCG@10']:.3f}: a re-ranker above it is worth its latency, one below it is not, "
        "whatever its speed."
    )


def prettr_reading(
    results: Mapping[str, ModelResult],
    sweep: pd.DataFrame,
    split: int,
    validation: str,
    tests: Mapping[str, JudgedSet],
    profile: Profile,
) -> str:
    """Chapter 8's reading of the PreTTR it adopted (lecture 8, slides 17–19): split ``split`` of chapter 2's BERT-cat,
    fine-tuned (``results``, one :class:`ModelResult` per test year) against the same split untrained on validation
    (``sweep``, :func:`lib.evaluation.split_sweep.split_sweep`; ``validation`` its validation column), and on the
    test years against BERT-cat and BM25, re-ranking every candidate; and whether the lecture's claim holds: a late
    split stays at or above BM25 on every year and within :data:`PRETTR_MARGIN` nDCG@10 of BERT-cat on the first."""
    first = next(iter(results.values()))
    untrained = float(sweep.loc[split, validation])
    lines = [
        f"**PreTTR split at k = {split}, fine-tuned from chapter 2's BERT-cat.** On the validation queries "
        f"({validation.split(' ', 1)[-1]}) "
        f"the split weights score {untrained:.3f} untrained and {first.training.best_metric:.3f} after fine-tuning "
        f"(best step {first.best_step})"
        + (": fine-tuning did not improve on the untrained split." if first.training.best_metric <= untrained else ".")
    ]
    above_bm25, gaps = True, []
    for name, test in tests.items():
        tuned = results[name].metrics_at_full_depth["nDCG@10"]
        bm25 = evaluate(test.run, test.qrels)["nDCG@10"]
        bert_cat_run = read_run(paths.run_path(profile.name, name, "bert-cat" + ALL_CANDIDATES))
        bert_cat = evaluate(bert_cat_run, test.qrels)["nDCG@10"]
        above_bm25 &= tuned >= bm25
        gaps.append(bert_cat - tuned)
        lines.append(f"{name.upper()}, all candidates: {tuned:.3f} (BERT-cat {bert_cat:.3f}, BM25 {bm25:.3f}).")
    close = gaps[0] <= PRETTR_MARGIN
    verdict = "holds" if above_bm25 and close else "does not hold"
    lines.append(
        f"It is {'at or above BM25 on every year' if above_bm25 else 'below BM25 on at least one year'} and "
        f"{'no more' if close else 'more'} than {PRETTR_MARGIN} below BERT-cat on {next(iter(tests)).upper()}: "
        f"the lecture's claim that a late split keeps most of BERT-cat's effectiveness {verdict} here."
    )
    return "\n\n".join(lines)
