"""TILDE's three scorings, TILDE-QL, -DL and -QDL (TILDE eq. 4–6), and the runs they make of first-stage candidates.

- :func:`scoring_runs` — the first stage re-ranked by each scoring.
- :func:`alpha_sweep` and :func:`best_alpha` — eq. 6 for every α of a grid (TILDE Figure 2), from one scoring
  pass, and the best α per test set and first stage.
- :func:`storage_precision` — what float16 storage of the index does (§3.2): tied candidates and TILDE-QL's
  nDCG@10 at each precision.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from lib.core.types import Qrels, Run
from lib.evaluation import measures as evaluation
from lib.reranking.tilde_runs import tied_share
from lib.reranking.tilde_scoring import TildeScores, check_alpha

#: The three scorings of the paper and the α of eq. 6 each uses (TILDE-QDL: α = 0.5, as Table 2).
SCORINGS: dict[str, float] = {"TILDE-QL": 1.0, "TILDE-DL": 0.0, "TILDE-QDL": 0.5}


def scoring_runs(scores: TildeScores, first_stage: Run) -> dict[str, dict[str, dict[str, float]]]:
    """The first stage re-ranked by each of :data:`SCORINGS` (TILDE-DL and -QDL need DL scores)."""
    names = SCORINGS if scores.dl is not None else {"TILDE-QL": 1.0}
    return {name: scores.rerank(first_stage, alpha) for name, alpha in names.items()}


def alpha_sweep(
    scores: TildeScores,
    first_stage: Run,
    qrels: Qrels,
    alphas: Sequence[float],
    measures: Sequence[str] = ("nDCG@10", "MAP"),
) -> pd.DataFrame:
    """Figure 2: each measure of TILDE-QDL at every α (eq. 6); long format ``alpha, measure, value``."""
    if not alphas:
        raise ValueError("parameter 'alphas' is empty")
    rows = []
    for alpha in alphas:
        metrics = evaluation.evaluate(scores.rerank(first_stage, check_alpha(float(alpha))), qrels, list(measures))
        rows += [{"alpha": float(alpha), "measure": measure, "value": metrics[measure]} for measure in measures]
    return pd.DataFrame(rows)


def best_alpha(sweeps: pd.DataFrame, measure: str = "nDCG@10") -> pd.DataFrame:
    """Per ``set`` and ``first_stage`` of an :func:`alpha_sweep` frame: the α with the highest ``measure``
    (the smallest α among equals)."""
    best = (
        sweeps[sweeps["measure"] == measure]
        .sort_values(["set", "first_stage", "value", "alpha"], ascending=[True, True, False, True])
        .groupby(["set", "first_stage"], sort=False)
        .head(1)
    )
    return (
        best.rename(columns={"alpha": "best α", "value": f"{measure} at best α"})
        .drop(columns="measure")
        .set_index(["set", "first_stage"])
    )


def storage_precision(
    scores: Mapping[str, Mapping[str, TildeScores]], first_stages: Mapping[str, Run], qrels: Mapping[str, Qrels]
) -> pd.DataFrame:
    """Per test set and index precision (``scores[set][precision]``, of ``first_stages[set]``'s candidates):
    the share of candidates tied with another of the same query, and nDCG@10 of TILDE-QL."""
    rows = []
    for test_set, by_precision in scores.items():
        for dtype, precision_scores in by_precision.items():
            reranked = precision_scores.rerank(first_stages[test_set], 1.0)
            rows.append(
                {
                    "test set": test_set.upper(),
                    "index": dtype,
                    "tied candidates": tied_share(precision_scores.ql),
                    "TILDE-QL nDCG@10": evaluation.evaluate(reranked, qrels[test_set], ["nDCG@10"])["nDCG@10"],
                }
            )
    return pd.DataFrame(rows)
