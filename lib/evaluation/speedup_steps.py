"""The speed-up from a cross-encoder run whole to a served compact TK, decomposed into its steps.

One number — "the product-quantised TK serves 100 candidates N× faster than BERT-cat run whole" — combines several
effects: a cheaper architecture (TK's kernels instead of attention over query and passage together, TK §3), the
passage side moved to index time (the *stored* regime), a smaller index (float16 → int8 → product-quantised codes,
Jégou et al. 2011). :func:`step_table` reads them one :class:`Step` a row from chapter 3's cost table
(:mod:`lib.evaluation.regimes`, every row on one clock, :mod:`lib.evaluation.clock`): each step's latency at each
count (``estimated``: the counts whose latency the table estimated rather than measured), its factor over the step
before and over the first (the rival), its index's bytes per passage, and per test
year its nDCG@10 with paired t-tests against the step before and against the rival (Bonferroni over every pair of
steps of the year, :func:`lib.evaluation.comparison.pairwise_tests`), "above" / "below" read from the sign of the
difference and the test together. :func:`plot_steps` draws the latencies on a log scale, each step's factor beside it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
import pandas as pd

from lib.evaluation.comparison import pairwise_tests


@dataclass(frozen=True)
class Step:
    """One step: its ``label`` in words, the cost-table row it is timed by (``model``, ``regime``, ``dtype``: "—"
    run whole) and the key of its per-query values (``run``)."""

    label: str
    model: str
    regime: str
    dtype: str
    run: str


def chain(rival: str, full_tk: str, pq: str, dtypes: Sequence[str], labels: Mapping[str, str]) -> list[Step]:
    """Chapter 3's steps: BERT-cat run whole (``rival``: what it is, in words), the full TK run whole, stored in each
    of ``dtypes`` (its runs ``<full_tk>-<dtype>``), then its ``pq`` index (run ``<full_tk>-pq``)."""
    label = labels.get(full_tk, full_tk)
    return [
        Step(f"BERT-cat ({rival}) run whole", "bert-cat", "whole", "—", "bert-cat"),
        Step(f"{label} run whole", full_tk, "whole", "—", full_tk),
        *(Step(f"{label} stored, {dtype}", full_tk, "stored", dtype, f"{full_tk}-{dtype}") for dtype in dtypes),
        Step(f"{label} stored, product-quantised", pq, "stored", "pq", f"{full_tk}-pq"),
    ]


def _cost_row(table: pd.DataFrame, step: Step) -> pd.Series:
    rows = table[(table["model"] == step.model) & (table["regime"] == step.regime) & (table["dtype"] == step.dtype)]
    if rows.empty:
        raise KeyError(
            f"the cost table has no row ({step.model!r}, {step.regime!r}, {step.dtype!r}) for step {step.label!r}"
        )
    return rows.iloc[0]


def _tested(tests: pd.DataFrame, by_run: Mapping[str, pd.Series], run: str, against: str) -> str:
    """``run`` against ``against`` in words: the verdict and its corrected p (``*``: significant)."""
    test = tests.loc[(run, against) if (run, against) in tests.index else (against, run)]
    significant = bool(test["significant"])
    delta = float(by_run[run].mean() - by_run[against].mean())
    return f"{verdict(delta, significant)} (p {float(test['p_bonferroni']):.3f}{'*' if significant else ''})"


def verdict(delta: float, significant: bool) -> str:
    """A paired test read with its sign: "above" / "below" when significant, else "no difference"."""
    return ("above" if delta > 0 else "below") if significant else "no difference"


def step_table(
    table: pd.DataFrame, steps: Sequence[Step], values: Mapping[str, Mapping[str, pd.Series]], counts: Sequence[int]
) -> pd.DataFrame:
    """One row per step of ``steps`` (the first the rival; module docstring). ``values`` maps a test year to the
    per-query nDCG@10 of each step's ``run``; ``counts`` are the candidate counts shown (the first the factors')."""
    if len(steps) < 2:
        raise ValueError(f"parameter 'steps' needs a rival and at least one step, got {len(steps)}")
    rows_of = [_cost_row(table, step) for step in steps]
    first = counts[0]
    tests = {
        year: pairwise_tests({step.run: by_run[step.run] for step in steps}).set_index(["run", "against"])
        for year, by_run in values.items()
    }
    frame = []
    for i, (step, cost) in enumerate(zip(steps, rows_of, strict=True)):
        row: dict[str, object] = {"step": step.label}
        for count in counts:
            row[f"ms for {count:,}"] = float(cost[f"ms_{count}"])
        before = rows_of[i - 1] if i else None
        row["× step before"] = float(before[f"ms_{first}"]) / float(cost[f"ms_{first}"]) if i else float("nan")
        row["× rival"] = float(rows_of[0][f"ms_{first}"]) / float(cost[f"ms_{first}"])
        row["bytes / passage"] = int(round(float(cost["bytes_per_passage"])))
        row["estimated"] = ", ".join(f"{count:,}" for count in counts if not bool(cost.get(f"measured_{count}", True)))
        for year, by_run in values.items():
            name = year.upper()
            row[f"{name} nDCG@10"] = float(by_run[step.run].mean())
            for against, column in ((steps[i - 1] if i else None, "step before"), (steps[0] if i else None, "rival")):
                if against is None or against.run == step.run:
                    row[f"{name} vs {column}"] = "—" if against is None else "same run"
                    continue
                row[f"{name} vs {column}"] = _tested(tests[year], by_run, step.run, against.run)
        frame.append(row)
    return pd.DataFrame(frame)


def plot_steps(frame: pd.DataFrame, count: int, title: str) -> plt.Figure:
    """:func:`step_table`'s latencies at ``count`` candidates, one bar a step on a log scale, each labelled with its
    milliseconds and its factor over the step before."""
    column = f"ms for {count:,}"
    figure, axis = plt.subplots(figsize=(8, 0.6 * len(frame) + 1.2))
    positions = range(len(frame))[::-1]
    axis.barh(list(positions), frame[column], color="tab:blue")
    axis.set_xscale("log")
    axis.set_yticks(list(positions), frame["step"])
    for position, (_, row) in zip(positions, frame.iterrows(), strict=True):
        factor = "" if pd.isna(row["× step before"]) else f"  ({row['× step before']:.1f}× the step before)"
        axis.text(row[column], position, f" {row[column]:,.1f} ms{factor}", va="center", fontsize=9)
    axis.set_xlabel(f"query latency for {count:,} candidates (ms, log scale)")
    axis.set_title(title)
    axis.set_xlim(right=float(frame[column].max()) * 30)
    figure.tight_layout()
    return figure


__all__ = ["Step", "chain", "plot_steps", "step_table", "verdict"]
