"""Chapter 2's comparisons: Table 2's first-stage rows, the t-tests against BM25 and the tables of variants.

:func:`first_stage_baselines` (the scored BM25 run, BM25+RM3 where the data folder ships it),
:func:`significance_against_bm25` (paired t-tests on nDCG@10, Bonferroni-corrected) and
:func:`variant_comparison` (one model trained on other representations or other training queries).
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from lib.core.profiles import Profile
from lib.data import held_runs, load_run
from lib.evaluation import measures as evaluation
from lib.evaluation.comparison import compare_per_query, significance_table
from lib.experiments.distillation_protocol import Protocol
from lib.experiments.first_stage_runs import SYSTEM, bm25_run
from lib.experiments.model_runs import ModelResult

#: The first stage that is re-ranked (the official BM25 top-100 from the full MS MARCO index).
FIRST_STAGE = SYSTEM
#: The shipped BM25+RM3 run, Table 2's second first-stage row where the data folder has it (the book subset).
RM3 = "bm25-rm3"
#: The labels of Table 2's first-stage rows (:func:`first_stage_baselines`).
FIRST_STAGE_LABELS = {FIRST_STAGE: "BM25", RM3: "BM25+RM3"}


def first_stage_baselines(profile: Profile, name: str) -> dict[str, dict[str, float]]:
    """Table 2's first-stage runs of judged year ``name``, by label, every candidate of every query.

    ``BM25``: the scored BM25 run (:func:`lib.experiments.first_stage_runs.bm25_run`: the data folder's, or
    chapter 1's retrieval where that folder's is unscored); ``BM25+RM3``: the data folder's run, only
    where the folder holds one (the book subset does, full MS MARCO's export does not).
    """
    runs = {FIRST_STAGE_LABELS[FIRST_STAGE]: bm25_run(profile, name)}
    if held_runs(name, (RM3,)):
        runs[FIRST_STAGE_LABELS[RM3]] = load_run(name, RM3)
    return runs


#: The ranking each t-test of :func:`significance_against_bm25` compares: the attribute of
#: :class:`lib.experiments.model_runs.ModelResult`.
SIGNIFICANCE_DEPTHS = {"tuned": "per_query", "all": "per_query_all", "+BM25": "per_query_interpolated"}


def significance_against_bm25(
    profile: Profile, protocol: Protocol, results: Mapping[tuple[str, str], ModelResult], models: list[str]
) -> pd.DataFrame:
    """Paired t-tests on nDCG@10 of each of ``models`` against BM25, Bonferroni-corrected over ``models``, for
    every test year and every depth of :data:`SIGNIFICANCE_DEPTHS` (columns ``set`` and ``depth`` first, then
    :func:`lib.evaluation.comparison.significance_table`'s). ``results`` maps ``(test year, model)`` to its result."""
    tables = []
    for fold, data in protocol.tests.items():
        bm25 = {qid: run for qid, run in bm25_run(profile, fold).items() if qid in data.queries}
        for depth, attribute in SIGNIFICANCE_DEPTHS.items():
            per_query = {"bm25": evaluation.per_query(bm25, data.qrels, ["nDCG@10"])}
            per_query.update({name: getattr(results[(fold, name)], attribute)[["nDCG@10"]] for name in models})
            frame = significance_table(compare_per_query(per_query, baseline="bm25"), "nDCG@10")
            frame.insert(0, "depth", depth)
            frame.insert(0, "set", fold)
            tables.append(frame)
    return pd.concat(tables, ignore_index=True)


def variant_comparison(column: str, runs: dict[str, dict[str, ModelResult]], metric: str) -> pd.DataFrame:
    """One row per test year and variant: nDCG@10 at the tuned depth, the depth, nDCG@10 re-ranking all,
    and the variant's best validation ``metric`` (column ``validation <metric>``: the validation set's, the
    number a choice between variants may rest on; NaN for an untrained model).

    ``runs`` maps a variant's label (the value of ``column``) to its results by test year, as
    :func:`lib.experiments.model_runs.run_model` returns them; rows follow the test years, then the labels in
    ``runs``' order.
    """
    columns = ["set", column, "nDCG@10", "depth", "nDCG@10 (all)", f"validation {metric}"]
    rows = [
        {
            "set": query_set,
            column: label,
            "nDCG@10": results[query_set].metrics_at_tuned_depth["nDCG@10"],
            "depth": results[query_set].tuned_depth,
            "nDCG@10 (all)": results[query_set].metrics_at_full_depth["nDCG@10"],
            f"validation {metric}": results[query_set].history.get(metric, pd.Series(dtype=float)).max(),
        }
        for query_set in next(iter(runs.values()), {})
        for label, results in runs.items()
    ]
    return pd.DataFrame(rows, columns=columns)
