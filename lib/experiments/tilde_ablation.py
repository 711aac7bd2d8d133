"""TILDE's ablation (TILDE paper Table 3): every fine-tuning variant under every scoring, against the paper's model.

Every variant of :mod:`lib.training.tilde_variants` scores the first stage's candidates by TILDE-QL, TILDE-DL
and TILDE-QDL (α = 0.5, :mod:`lib.experiments.tilde_scorings`), plus the paper's row that mixes QL of the L_QL
model with DL of the L_DL model; each row is tested against the paper's model (BiQDL, TILDE-QDL) by paired
t-tests, Bonferroni-corrected as the paper's significance tests (§4.4, :mod:`lib.evaluation.comparison`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from lib.core.types import Qrels, Run
from lib.evaluation import measures as evaluation
from lib.evaluation.comparison import compare_per_query
from lib.experiments.tilde_scorings import SCORINGS, scoring_runs
from lib.reranking.tilde_scoring import TildeScores
from lib.training.tilde_variants import MAIN_VARIANT, VARIANTS

#: The ablation row that mixes two models, as the paper's "L_QL, L_DL" row.
SEPARATE_LOSSES = "L_QL + L_DL (two models)"


def ablation(
    scores: Mapping[str, TildeScores],
    first_stage: Run,
    qrels: Qrels,
    measures: Sequence[str] = ("nDCG@10", "MAP"),
) -> pd.DataFrame:
    """Table 3: one row per (loss, scoring), the measures' means and Bonferroni-corrected p-values.

    ``scores`` maps variant names (:data:`lib.training.tilde_variants.VARIANTS`) to their TILDE scores of
    ``first_stage``'s candidates; it must hold the main variant, the baseline of every test. The
    "two models" row appears when both ``ql`` and ``dl`` are present. Columns: ``loss``,
    ``scoring``, each measure, ``p <measure>`` (paired t-test against BiQDL/TILDE-QDL, Bonferroni
    over the table's other rows) and ``significant <measure>`` (p < 0.05 after correction).
    """
    if MAIN_VARIANT not in scores:
        raise KeyError(f"the ablation needs the paper's model {MAIN_VARIANT!r}; got {sorted(scores)}")
    runs: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
    for name, variant_scores in scores.items():
        for scoring, run in scoring_runs(variant_scores, first_stage).items():
            runs[(VARIANTS[name].label, scoring)] = run
    if "ql" in scores and "dl" in scores:
        mixed = TildeScores(scores["ql"].ql, scores["dl"].dl)
        runs[(SEPARATE_LOSSES, "TILDE-QDL")] = mixed.rerank(first_stage, SCORINGS["TILDE-QDL"])
    baseline = " | ".join((VARIANTS[MAIN_VARIANT].label, "TILDE-QDL"))
    per_query = {" | ".join(key): evaluation.per_query(run, qrels, list(measures)) for key, run in runs.items()}
    compared = compare_per_query(per_query, baseline)
    table = pd.DataFrame([{"loss": loss, "scoring": scoring} for loss, scoring in runs])
    table[list(measures)] = compared[list(measures)].to_numpy()
    for measure in measures:
        table[f"p {measure}"] = compared[f"{measure} p_bonferroni"].to_numpy()
        table[f"significant {measure}"] = compared[f"{measure} significant"].to_numpy()
    return table
