"""Chapter 3's speed readings, roofline figure and findings, from the benchmark's tables.

The tables are computed in :mod:`lib.evaluation`: the TK-2 / BERT-Base ratios of every committed benchmark file
(:func:`lib.evaluation.speed_benchmark.ratio_table`) and the roofline table
(:func:`lib.evaluation.roofline.roofline_table`), from the rows of
:func:`lib.evaluation.speed_benchmark.run_benchmark` (this build's run, or the JSON files committed under
``benchmarks/results/``). :func:`docs_per_ms_table` and :func:`plot_docs_per_ms` show the benchmark's throughput and
latencies beside the paper's Table 2.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from lib.evaluation.comparison import order_steps
from lib.evaluation.speed_benchmark import FAST, SLOW

#: The TK paper's speed-up of TK-2 over BERT-Base (§3.3, Table 2: 4 against 0.1 documents per ms).
PAPER_RATIO = 40.0


def _setting_text(row: pd.Series) -> str:
    return f"{row['dtype']}, {row['batching']}, {row['execution']}, batch {row['batch']}"


def latency_cell(row: pd.Series, count: int) -> str:
    """A benchmark row's latency of ``count`` candidates with its caveats: "est." when estimated from the throughput,
    "rep." when the query's candidates were repeated to reach the count."""
    notes = [note for note, flag in (("est.", not row[f"latency_{count}_measured"]),
                                     ("rep.", row[f"latency_{count}_repeated"])) if flag]  # fmt: skip
    return f"{row[f'latency_{count}_ms']:,.1f}" + (f" ({', '.join(notes)})" if notes else "")


def docs_per_ms_table(speed_table: pd.DataFrame, paper_docs_per_ms: Mapping[str, float | None]) -> pd.DataFrame:
    """The benchmark's results (``speed_table``: a row per timed architecture, indexed by name) as chapter 3 shows
    them: parameters, docs/ms here, the latencies of 100 and 1,000 candidates (:func:`latency_cell`) and the paper's
    Table 2 docs/ms (``paper_docs_per_ms`` by name; None where the paper has none)."""
    return pd.DataFrame(
        {
            "architecture": speed_table["label"],
            "parameters (M)": speed_table["parameters"] / 1e6,
            "docs/ms (here)": speed_table["docs_per_ms"],
            "ms for 100": [latency_cell(row, 100) for _, row in speed_table.iterrows()],
            "ms for 1,000": [latency_cell(row, 1000) for _, row in speed_table.iterrows()],
            "docs/ms (paper, GPU 2019)": [paper_docs_per_ms.get(name) for name in speed_table.index],
        },
        index=speed_table.index,
    )


def plot_docs_per_ms(table: pd.DataFrame) -> Figure:
    """:func:`docs_per_ms_table`'s throughput here beside the paper's, one bar pair per architecture (log axis)."""
    bars = table.melt(
        id_vars="architecture", value_vars=["docs/ms (here)", "docs/ms (paper, GPU 2019)"], var_name="measured",
        value_name="docs/ms",
    ).dropna()  # fmt: skip
    figure, axis = plt.subplots(figsize=(8, 0.45 * len(table) + 1.2))
    sns.barplot(data=bars, y="architecture", x="docs/ms", hue="measured", ax=axis)
    axis.set_xscale("log")
    axis.set_xlabel("documents re-ranked per millisecond (log scale)")
    axis.set_ylabel("")
    axis.legend(title="", loc="lower right")
    return figure


def ratio_reading(table: pd.DataFrame) -> str:
    """Per device: TK-2 before (rank order, float32, eager) and at its fastest, and the ratios to BERT-Base."""
    if table.empty:
        return "*No committed run timed both TK-2 and BERT-Base.*"
    sentences = []
    for device, runs in table.groupby("device", sort=True):
        fastest = runs.loc[runs["TK-2 docs/ms"].idxmax()]
        best_ratio = runs.loc[runs["TK-2 / BERT-Base"].idxmax()]
        text = (
            f"**{device}**: TK-2 at its fastest scores {fastest['TK-2 docs/ms']:.3g} documents per ms "
            f"({_setting_text(fastest)}; {fastest['TK-2 / BERT-Base']:.0f}× BERT-Base timed alike)"
        )
        before = runs[
            (runs["batching"] == "rank order") & (runs["dtype"] == "float32") & (runs["execution"] == "eager")
        ]
        if not before.empty:
            slowest = before.loc[before["TK-2 docs/ms"].idxmin()]
            text += (
                f", {fastest['TK-2 docs/ms'] / slowest['TK-2 docs/ms']:.1f}× its rank-order float32 eager speed "
                f"({slowest['TK-2 docs/ms']:.3g}, {slowest['TK-2 / BERT-Base']:.0f}× BERT-Base, file {slowest['file']})"
            )
        reached = int((runs["TK-2 / BERT-Base"] >= PAPER_RATIO).sum())
        text += (
            f". The largest ratio is {best_ratio['TK-2 / BERT-Base']:.0f}× ({_setting_text(best_ratio)}); "
            f"{reached} of {len(runs)} settings reach the paper's {PAPER_RATIO:.0f}×."
        )
        sentences.append(text)
    return "\n\n".join(sentences)


def plot_roofline(table: pd.DataFrame, peaks: Mapping[str, float]) -> Figure:
    """Achieved GFLOP/s per architecture (bars, log scale) under the measured matmul peak of each dtype (lines)."""
    figure, ax = plt.subplots(figsize=(8, 0.45 * len(table) + 1.5))
    labels = [
        f"{name} ({dtype})" if table["dtype"].nunique() > 1 else name
        for name, dtype in zip(table.index, table["dtype"], strict=True)
    ]
    ax.barh(labels, table["achieved GFLOP/s"], color="tab:blue")
    for dtype, peak in peaks.items():
        ax.axvline(peak, color="black", linestyle="--" if dtype == "float32" else ":", linewidth=1.2)
        ax.annotate(f"matmul peak, {dtype}", (peak, 1.0), xycoords=("data", "axes fraction"), rotation=90,
                    ha="right", va="top", fontsize=9)  # fmt: skip
    for y, (achieved, percent) in enumerate(zip(table["achieved GFLOP/s"], table["% of peak"], strict=True)):
        ax.annotate(
            f"{percent:.0f} %", (achieved, y), xytext=(4, 0), textcoords="offset points", va="center", fontsize=9
        )
    ax.set_xscale("log")
    ax.invert_yaxis()
    ax.set_xlabel("achieved GFLOP/s (matrix products and attention; log scale)")
    ax.set_title("How much of the machine's arithmetic each model uses")
    return figure


def roofline_reading(table: pd.DataFrame) -> str:
    """Which model comes closest to the roof, and TK-2 against BERT-Base in FLOPs and in time."""
    closest = table["% of peak"].idxmax()
    text = f"{closest} comes closest to the roof ({table.loc[closest, '% of peak']:.0f} % of the matmul peak)"
    if table.loc[closest, "% of peak"] > 100:
        text += (
            ", above 100 % because the peak is the best square matrix product of the sizes the benchmark "
            "times, a lower bound on what the machine can do, and this model's larger products ran faster still"
        )
    if {FAST, SLOW} <= set(table["model"]):
        fast = table[table["model"] == FAST].iloc[0]
        slow = table[table["model"] == SLOW].iloc[0]
        flop_ratio = slow["GFLOP / document"] / fast["GFLOP / document"]
        time_ratio = fast["docs/ms"] / slow["docs/ms"]
        text += (
            f". BERT-Base does {flop_ratio:.0f}× TK-2's floating-point work per document but takes only "
            f"{time_ratio:.0f}× its time: TK-2 runs at {fast['% of peak']:.0f} % of the peak, BERT-Base at "
            f"{slow['% of peak']:.0f} %. A small model's matrix products are too small to keep the machine busy, "
            "and its element-wise work (masks, layer norms, kernel pooling) weighs more, so the speed-up in time "
            "stays below the speed-up in FLOPs"
            if time_ratio < flop_ratio
            else f". BERT-Base does {flop_ratio:.0f}× TK-2's work per document and takes {time_ratio:.0f}× its "
            "time: TK-2 keeps the machine at least as busy as BERT-Base"
        )
    return text + "."


def bf16_reading(table: pd.DataFrame, measure: str = "nDCG@10") -> str:
    """What bf16 did to the scores and the measure, per test set (the rows of :func:`precision_effect`)."""
    parts = []
    for query_set, row in table.iterrows():
        exact, reduced = row[f"{measure} (float32)"], row[f"{measure} (bf16)"]
        parts.append(
            f"on {query_set.upper()} the scores move by at most {row['max_abs_difference']:.3g} "
            f"(mean {row['mean_abs_difference']:.2g}, on a score range of {row['score_range']:.3g}), "
            f"{100 * row['swapped_fraction']:.2g} % of the candidate pairs of a query swap places, and {measure} "
            f"goes from {exact:.3f} to {reduced:.3f}"
        )
    return "In bf16, " + "; ".join(parts) + "."


def budget_ms(value: float, decimals: int = 0) -> str:
    """A budget in ms as the readings print it: ``decimals`` decimals, at least one under 10 ms; ``∞``."""
    if not math.isfinite(value):
        return "∞"
    return f"{value:,.{decimals}f}" if value >= 10 else f"{value:.{max(decimals, 1)}f}"


def leading_ranges(spans: pd.DataFrame, name: str) -> str:
    """The budget ranges (ms) over which ``name`` is (among) the best, from
    :func:`lib.evaluation.time_budget.leading_spans`: ``"1–20, 50–∞"``, ``"never"``, more than three counted (``"8
    ranges between 87–98 and 476–511"``). Under 10 ms one decimal; ends that would print alike get more (not 13–13)."""

    def span(start: float, end: float) -> str:
        decimals = next(d for d in range(4) if d == 3 or budget_ms(start, d) != budget_ms(end, d))
        return f"{budget_ms(start, decimals)}–{budget_ms(end, decimals)}"

    own = spans[spans["model"] == name]
    ranges = [span(start, end) for start, end in zip(own["from_ms"], own["to_ms"], strict=True)]
    counted = f"{len(ranges)} ranges between {ranges[0]} and {ranges[-1]}" if len(ranges) > 3 else ""
    return counted or ", ".join(ranges) or "never"


def leads_reading(leads: Mapping[str, str], measure: str = "nDCG@10") -> str:
    """One sentence from ``leads`` (test year → :func:`leading_ranges` of one model), without its full stop:
    where the model leads."""
    return "On " + "; on ".join(
        f"{year.upper()} {measure} it is (among) the best at budgets of {spans} ms" if spans != "never"
        else f"{year.upper()} {measure} it leads at no budget"
        for year, spans in leads.items()
    )  # fmt: skip


#: A step of a proposed order in words, by (higher, significant).
STEP = {(True, True): "significantly higher than {}", (True, False): "higher than {}, not significantly",
        (False, True): "not higher than {}", (False, False): "not higher than {}"}  # fmt: skip


def order_reading(values: Mapping[str, Sequence[pd.Series]], labels: Sequence[str]) -> str:
    """Whether the paper's order holds, as tested: ``values`` maps a test year to one per-query series per model of
    ``labels`` (the paper's order, weakest first). Each step from a model to the next is a paired two-tailed t-test
    (:func:`lib.evaluation.comparison.order_steps`, Bonferroni over every pair of the year's models); the order
    holds where every step is higher and significantly so."""
    sentences = []
    for year, series in values.items():
        steps = order_steps(dict(zip(labels, series, strict=True)))
        texts = [f"{row['stronger']} {STEP[row['higher'], row['significant']].format(row['weaker'])} "
                 f"(p = {row['p_bonferroni']:.3f})" for row in steps.to_dict("records")]  # fmt: skip
        holds = bool((steps["higher"] & steps["significant"]).all())
        means = ", ".join(f"{label} {float(s.mean()):.3f}" for label, s in zip(labels, series, strict=True))
        sentences.append(f"{year.upper()} {means}: {'; '.join(texts)} — " + ("holds" if holds else
                         "does not hold as tested"))  # fmt: skip
    return "; ".join(sentences) + " (paired t-tests, Bonferroni over the year's pairs)."


def speed_order_sentence(
    paper_speeds: Mapping[str, float], measured: Mapping[str, float], labels: Mapping[str, str]
) -> str:
    """Whether the paper's order of the architectures by speed (``paper_speeds``: its docs/ms) holds in the
    ``measured`` docs/ms, naming every pair the measurement swaps; one sentence without its full stop."""
    paper_order = sorted(paper_speeds, key=lambda name: -paper_speeds[name])
    swapped = [f"{labels[a]} / {labels[b]}" for index, a in enumerate(paper_order) for b in paper_order[index + 1 :]
               if measured[a] < measured[b]]  # fmt: skip
    holds = "holds on this machine" if not swapped else f"does not fully hold here (swapped: {'; '.join(swapped)})"
    return f"The paper's ordering of the architectures by speed {holds}"


def speed_finding(order_sentence: str, ratio: float, depth_100: Mapping[str, int]) -> str:
    """The reading's speed bullet: :func:`speed_order_sentence`, TK-2 against BERT-Base (``ratio``) and how many
    candidates each re-ranks in 100 ms (``depth_100``, by "tk2" and "bert-cat"), against the paper's."""
    return (
        f"- **Speed.** {order_sentence}; TK-2 is {ratio:.0f}× faster than BERT-Base measured in the same run "
        f"(the paper: 40×). In 100 ms per query TK-2 re-ranks {depth_100['tk2']} candidates here and a "
        f"BERT-Base-sized BERT-cat {depth_100['bert-cat']} (the paper, on a GPU: all 1,000 against 10)."
    )


def depth_finding(below_at_full: Sequence[str], pairs: int, max_depth: int) -> str:
    """The reading's depth bullet: the model–year pairs (of ``pairs``) that end below BM25 re-ranking all
    ``max_depth`` candidates (``below_at_full``), and whether more depth mostly hurts."""
    return (
        f"- **Effectiveness by depth.** Re-ranking all {max_depth} candidates ends below BM25's nDCG@10 for "
        f"{len(below_at_full)} of {pairs} model–year pairs"
        + (f" ({', '.join(below_at_full)})" if below_at_full else "")
        + ": at book scale, more depth — and so more time — "
        + ("mostly hurts." if len(below_at_full) > pairs / 2 else "does not mostly hurt.")
    )


def budget_finding(never: Sequence[str], first_set: str, best: str, at_100: str) -> str:
    """The reading's budget bullet: where no re-ranker ever beats BM25 (``never``), the best at any budget on
    ``first_set``'s nDCG@10 and the best at 100 ms in the paper's situation (``at_100``)."""
    return (
        "- **Under a budget.** Measures and sets on which no re-ranker is ever strictly better than BM25 at any "
        f"budget: {', '.join(never) if never else 'none'}. The best at any budget on {first_set.upper()} nDCG@10 is "
        f"{best}; at 100 ms, in the paper's situation, {at_100}."
    )


def chosen_tk_finding(label: str, leads: Mapping[str, str]) -> str:
    """The reading's bullet on the TK chosen on validation: where it leads (:func:`leads_reading`)."""
    return f"- **The TK chosen on validation, {label}.** {leads_reading(leads)} (the book's own speeds, chapter 2)."


def order_finding(
    max_depth: int, tk_label: str, values: Mapping[str, Sequence[pd.Series]], labels: Sequence[str]
) -> str:
    """The reading's bullet on the paper's order of effectiveness (:func:`order_reading`), ``tk_label`` as TK."""
    return (
        f"- **The paper's order** (KNRM < Conv-KNRM < TK < BERT-cat, nDCG@10 re-ranking all {max_depth}), with "
        f"{tk_label} as TK: " + order_reading(values, labels)
    )


#: The reading's last bullet: what the method shows whatever the data.
MECHANISM_FINDING = (
    "- **The mechanism stands; the outcome is the data's.** Figure 2's argument — a faster model reaches "
    "deeper in the same time, and depth buys effectiveness only where the model beats the first stage at "
    "that depth — is what the method computes, exactly. The paper's conclusion (TK the best choice up to "
    "about 200 ms) rests on TK and BERT trained on MS MARCO's hundreds of thousands of queries; the `paper` "
    "profile runs the same code at that scale on a GPU."
)
