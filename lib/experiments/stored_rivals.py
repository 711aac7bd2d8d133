"""The stored regime's budget curves with every stored rival (chapter 8, lecture 8 slide 27): TK against ColBERT.

Chapter 3 draws the TK paper's Figure 2 (§5.2) in two regimes, but only with chapter 2's models; the lecture compares
TK with the stored rivals it trains in chapter 8 — ColBERT, PreTTR, TK-Sparse. :func:`stored_frame` draws each test
year's stored-regime curves for every model of one cost table on one clock (chapter 3's rows and chapter 8's own,
:func:`lib.experiments.regime_costs.model_rows`): each model at its cheapest stored index's fixed cost per query and
speed (a model that cannot store runs whole, :func:`lib.experiments.regime_costs.regime_costs`), its effectiveness at
every depth from its run over every candidate. :func:`crossing_tests` tests two models (a TK against ColBERT) at each
budget of a grid (:func:`lib.evaluation.time_budget.budget_grid`) by a paired t-test over the year's judged queries,
Bonferroni over the budgets (:func:`lib.evaluation.time_budget.paired_at_budgets`), and :func:`crossing_reading` says
per budget range which is ahead, and whether the test shows it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from lib.core.types import Qrels, Run
from lib.evaluation import time_budget
from lib.experiments.regime_costs import regime_costs

#: The measure the curves and tests read.
MEASURE = "nDCG@10"


def stored_frame(table: pd.DataFrame, runs: Mapping[str, Run], first_stage: Run, qrels: Qrels,
                 counts: Sequence[int]) -> pd.DataFrame:  # fmt: skip
    """The stored regime's budget curves of every model of ``runs`` (its scores of every candidate of ``first_stage``)
    at its cost in ``table`` (a cost table with ``counts``' latencies), BM25 as the model that never re-ranks: a
    :func:`lib.evaluation.time_budget.budget_curves` frame at every breakpoint."""
    missing = [name for name in runs if name not in set(table["model"])]
    if missing:
        raise KeyError(f"the cost table has no row for {', '.join(missing)}")
    costs = regime_costs(table, counts)["stored"]
    speeds = {name: costs[name].docs_per_ms for name in runs}
    fixed = {name: costs[name].fixed_ms for name in runs}
    judged = {qid: ranked for qid, ranked in first_stage.items() if qid in qrels}
    curves = {name: time_budget.depth_curve(judged, run, qrels, [MEASURE]) for name, run in runs.items()}
    budgets = time_budget.breakpoints(speeds, {name: int(curve.index.max()) for name, curve in curves.items()}, fixed)
    curves["bm25"] = time_budget.first_stage_curve(next(iter(curves.values())))
    return time_budget.budget_curves(curves, speeds, budgets, fixed)


def crossing_tests(table: pd.DataFrame, runs: Mapping[str, Run], first_stage: Run, qrels: Qrels,
                   counts: Sequence[int], pair: tuple[str, str], budgets: Sequence[float]) -> pd.DataFrame:  # fmt: skip
    """``pair``'s two models (model, rival) in the stored regime under each of ``budgets``: each re-ranks the depth its
    cost reaches, a paired t-test over the judged queries, Bonferroni over the budgets
    (:func:`lib.evaluation.time_budget.paired_at_budgets`' rows)."""
    costs = regime_costs(table, counts)["stored"]
    judged = {qid: ranked for qid, ranked in first_stage.items() if qid in qrels}
    return time_budget.paired_at_budgets(
        judged, {name: runs[name] for name in pair}, {name: (costs[name].fixed_ms, costs[name].docs_per_ms)
                                                      for name in pair}, qrels, budgets, MEASURE,
    )  # fmt: skip


def crossing_reading(tests: pd.DataFrame, labels: Mapping[str, str]) -> str:
    """:func:`crossing_tests`' rows in words, one clause per run of consecutive budgets with the same verdict: which
    model is ahead there (or neither) and whether the paired test shows it."""
    if tests.empty:
        return "No budget was tested."
    model, rival = (labels.get(tests[column].iloc[0], tests[column].iloc[0]) for column in ("model", "rival"))

    def verdict(row: pd.Series) -> str:
        if row["model depth"] == 0 and row["rival depth"] == 0:
            return "neither re-ranks (both are BM25)"
        ahead = model if row["delta"] > 0 else rival if row["delta"] < 0 else None
        if ahead is None:
            return "they tie"
        return f"{ahead} is ahead{'' if row['significant'] else ', not significantly'}"

    verdicts = [verdict(row) for _, row in tests.iterrows()]
    clauses, start = [], 0
    for end in range(1, len(verdicts) + 1):
        if end == len(verdicts) or verdicts[end] != verdicts[start]:
            low, high = tests["budget_ms"].iloc[start], tests["budget_ms"].iloc[end - 1]
            span = f"{low:g} ms" if low == high else f"{low:g}–{high:g} ms"
            clauses.append(f"{span}: {verdicts[start]}")
            start = end
    return f"{model} against {rival}, stored, by budget — " + "; ".join(clauses) + "."


__all__ = ["MEASURE", "crossing_reading", "crossing_tests", "stored_frame"]
