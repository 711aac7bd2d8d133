"""Has a TILDE model learned to read its passages? Two diagnostics of ``P(t|d)`` (TILDE paper §3.2, eq. 4).

TILDE-QL can only rank if the passage likelihoods ``log P(t|d)`` depend on the passage:

- :func:`passage_dependence` — how much ``log P(t|d)`` changes from passage to passage (the mean over the
  kept pieces of its standard deviation across passages); :func:`dependence_table` gives it per model;
- :func:`mean_rank_correlation` — whether a query's scores follow a property of its candidates;
  :func:`candidate_features` gives the two properties the book looks at (how many of the query's cleaned
  pieces a candidate contains, its length in pieces) and :func:`correlation_table` the mean Spearman's ρ
  between each model's TILDE-QL scores (eq. 4, recomputed in float32) and each property.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from lib.core.types import Run
from lib.models.tilde import Tilde
from lib.models.tilde_vocabulary import TargetVocabulary
from lib.representations.bert import WordPieceTokenizer


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


def sample_passages(run: Run, limit: int = 256) -> list[str]:
    """The first ``limit`` distinct candidates of ``run``, query by query in its order."""
    return list(dict.fromkeys(pid for qid in run for pid in run[qid]))[:limit]


def dependence_table(
    models: Mapping[str, Tilde], pieces: Sequence[Sequence[str]], vocabulary: TargetVocabulary
) -> pd.DataFrame:
    """:func:`passage_dependence` of each model (``{label: model}``) over the passages ``pieces``; columns ``model``,
    ``spread``."""
    keep = vocabulary.mask().numpy()
    return pd.DataFrame(
        [
            {"model": label, "spread": passage_dependence(model.piece_log_probs(pieces, "passage").numpy(), keep)}
            for label, model in models.items()
        ]
    )


def candidate_features(
    run: Run, queries: Mapping[str, str], texts: Mapping[str, str], tokenizer: WordPieceTokenizer,
    vocabulary: TargetVocabulary,
) -> tuple[dict[str, list[str]], dict[str, dict[str, int]], dict[str, dict[str, int]]]:  # fmt: skip
    """Every candidate's word pieces, and per query and candidate: how many of the query's cleaned pieces it
    contains, and its length in pieces."""
    candidate_texts = {p: texts[p] for q in run for p in run[q]}
    pieces = dict(zip(candidate_texts, tokenizer.pieces(list(candidate_texts.values())), strict=True))
    matches, lengths = {}, {}
    for qid, candidates in run.items():
        wanted = set(vocabulary.clean(tokenizer.pieces([queries[qid]])[0]).tolist())
        matches[qid] = {p: len(wanted & set(pieces[p])) for p in candidates}
        lengths[qid] = {p: len(pieces[p]) for p in candidates}
    return pieces, matches, lengths


def ql_scores(
    model: Tilde, run: Run, queries: Mapping[str, str], pieces: Mapping[str, list[str]],
    tokenizer: WordPieceTokenizer, vocabulary: TargetVocabulary,
) -> dict[str, dict[str, float]]:  # fmt: skip
    """TILDE-QL (eq. 4) of every candidate of ``run``, from ``model``'s float32 ``log P(t|d)``, query by query."""
    scores = {}
    for qid, candidates in run.items():
        pids = list(candidates)
        log_probs = model.piece_log_probs([pieces[p] for p in pids], "passage").numpy()
        terms = vocabulary.clean(tokenizer.pieces([queries[qid]])[0])
        scores[qid] = dict(zip(pids, log_probs[:, terms].sum(axis=1).tolist(), strict=True))
    return scores


def correlation_table(
    models: Mapping[str, Tilde], run: Run, queries: Mapping[str, str], texts: Mapping[str, str],
    tokenizer: WordPieceTokenizer, vocabulary: TargetVocabulary,
) -> pd.DataFrame:  # fmt: skip
    """Per model (``{label: model}``): mean Spearman's ρ of its TILDE-QL scores of ``run``'s candidates with the
    query pieces they contain and with their length (:func:`candidate_features`)."""
    pieces, matches, lengths = candidate_features(run, queries, texts, tokenizer, vocabulary)
    rows = []
    for label, model in models.items():
        ql = ql_scores(model, run, queries, pieces, tokenizer, vocabulary)
        rows.append(
            {
                "model": label,
                "ρ with query pieces contained": mean_rank_correlation(ql, matches),
                "ρ with passage length": mean_rank_correlation(ql, lengths),
            }
        )
    return pd.DataFrame(rows)


__all__ = [
    "candidate_features",
    "correlation_table",
    "dependence_table",
    "mean_rank_correlation",
    "passage_dependence",
    "ql_scores",
    "sample_passages",
]
