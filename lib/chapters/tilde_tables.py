"""Chapter 6's result tables: the ablation (TILDE paper Table 3), the α sweep (Figure 2), index size (§3.2).

- :func:`ablation` — every variant of :mod:`lib.training.tilde_variants` scored by TILDE-QL, TILDE-DL and
  TILDE-QDL (α = 0.5), plus the paper's row that mixes QL of the L_QL model with DL of the L_DL
  model; paired t-tests against the paper's model (BiQDL, TILDE-QDL), Bonferroni-corrected as the
  paper's significance tests (:func:`lib.evaluation.measures.significance`).
- :func:`alpha_sweep` — eq. 6 for every α of a grid, from one scoring pass.
- :func:`index_size` — bytes per passage and what they make for a whole collection.
- :func:`passage_dependence` — how much ``log P(t|d)`` changes from passage to passage, and
  :func:`mean_rank_correlation` — whether a query's scores follow a property of its candidates
  (how many of the query's pieces they contain, their length): the diagnostics of a model that has
  not learned to read its input.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from lib.evaluation import measures as evaluation
from lib.reranking.tilde_scoring import TildeScores, check_alpha
from lib.training.tilde_variants import MAIN_VARIANT, VARIANTS

Run = Mapping[str, Mapping[str, float]]
Qrels = Mapping[str, Mapping[str, int]]

#: The three scorings of the paper and the α of eq. 6 each uses (TILDE-QDL: α = 0.5, as Table 2).
SCORINGS: dict[str, float] = {"TILDE-QL": 1.0, "TILDE-DL": 0.0, "TILDE-QDL": 0.5}
#: The ablation row that mixes two models, as the paper's "L_QL, L_DL" row.
SEPARATE_LOSSES = "L_QL + L_DL (two models)"
#: MS MARCO passage v1's size: what the index would hold for the full collection.
MS_MARCO_PASSAGES = 8_841_823


def scoring_runs(scores: TildeScores, first_stage: Run) -> dict[str, dict[str, dict[str, float]]]:
    """The first stage re-ranked by each of :data:`SCORINGS` (TILDE-DL and -QDL need DL scores)."""
    names = SCORINGS if scores.dl is not None else {"TILDE-QL": 1.0}
    return {name: scores.rerank(first_stage, alpha) for name, alpha in names.items()}


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
    baseline = (VARIANTS[MAIN_VARIANT].label, "TILDE-QDL")
    per_query = {key: evaluation.per_query(run, qrels, list(measures)) for key, run in runs.items()}
    table = pd.DataFrame(
        [{"loss": loss, "scoring": scoring, **per_query[(loss, scoring)].mean().to_dict()} for loss, scoring in runs]
    )
    for measure in measures:
        named = {f"{loss} | {scoring}": frame[measure] for (loss, scoring), frame in per_query.items()}
        tests = evaluation.significance(named, baseline=" | ".join(baseline)).set_index("system")
        keys = [f"{loss} | {scoring}" for loss, scoring in runs]
        table[f"p {measure}"] = [tests["p_bonferroni"].get(key, np.nan) for key in keys]
        table[f"significant {measure}"] = [bool(tests["significant"].get(key, False)) for key in keys]
    return table


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


def index_size(bytes_per_passage: float, log_prob_bytes_per_passage: int, passages: int) -> pd.DataFrame:
    """Bytes per passage, and gigabytes for the book's indexed ``passages`` and for all of MS MARCO."""
    if passages < 0 or bytes_per_passage < 0:
        raise ValueError("the passage count and bytes per passage must not be negative")
    rows = [
        ("the book's index", passages),
        ("MS MARCO passage (8.8M)", MS_MARCO_PASSAGES),
    ]
    return pd.DataFrame(
        [
            {
                "collection": name,
                "passages": count,
                "bytes per passage": bytes_per_passage,
                "of which log-probabilities": log_prob_bytes_per_passage,
                "GB": count * bytes_per_passage / 1e9,
            }
            for name, count in rows
        ]
    )


def passage_dependence(log_probs: np.ndarray, keep: np.ndarray) -> float:
    """The mean over kept pieces of the standard deviation of ``log P(t|d)`` across passages (rows).

    0 means the model predicts the same distribution whatever the passage: its ranking can then only
    come from rounding and ties. ``log_probs`` is ``[passages, vocab]``; ``keep`` the target mask.
    """
    log_probs = np.asarray(log_probs, dtype=np.float64)
    if log_probs.ndim != 2 or log_probs.shape[0] < 2:
        raise ValueError(f"need a [passages >= 2, vocab] matrix, got shape {log_probs.shape}")
    if keep.shape != (log_probs.shape[1],):
        raise ValueError(f"the mask has shape {keep.shape}, the matrix {log_probs.shape}")
    return float(log_probs[:, keep].std(axis=0).mean())


def mean_rank_correlation(scores: Run, feature: Run) -> float:
    """The mean over queries of Spearman's ρ between a query's candidate scores and a feature of them.

    Queries where either side is constant (ρ undefined) are skipped; none left gives ``nan``. A
    candidate of ``scores`` without a feature value is a ``KeyError`` naming it.
    """
    values = []
    for qid, candidates in scores.items():
        pids = list(candidates)
        missing = [pid for pid in pids if pid not in feature.get(qid, {})]
        if missing:
            raise KeyError(f"query {qid!r}: no feature value for candidates {missing[:5]}")
        left = np.array([candidates[pid] for pid in pids], dtype=np.float64)
        right = np.array([feature[qid][pid] for pid in pids], dtype=np.float64)
        if len(pids) < 2 or np.ptp(left) == 0 or np.ptp(right) == 0:
            continue
        values.append(stats.spearmanr(left, right).statistic)
    return float(np.mean(values)) if values else float("nan")


__all__ = [
    "MS_MARCO_PASSAGES",
    "SCORINGS",
    "SEPARATE_LOSSES",
    "ablation",
    "alpha_sweep",
    "index_size",
    "mean_rank_correlation",
    "passage_dependence",
    "scoring_runs",
]
