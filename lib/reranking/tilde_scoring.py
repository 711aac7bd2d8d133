"""TILDE's scores: TILDE-QL (eq. 4), TILDE-DL (eq. 5), TILDE-QDL (eq. 6), and re-ranking a first stage.

- :func:`ql_scores` — ``TILDE-QL(q|d) = Σ_{t ∈ q} log P(t|d)``: the query's target pieces (cleaned,
  **duplicates counted**) gathered from each passage's pre-computed row and summed. No neural network
  at query time, only the tokenizer.
- :func:`dl_scores` — ``TILDE-DL(d|q) = (1/|d|) Σ_{t ∈ d} log P(t|q)``: the **mean** over the
  passage's stored target pieces of the query's log-probabilities (one BERT pass on the query).
  |d| counts the passage's target pieces (duplicates counted). A passage without any target piece
  (e.g. only stopwords and symbols) has no mean; it gets the lowest log-probability of the query's
  vector, as if it were made of the least likely piece — finite, and ranked last by DL.
- :func:`qdl_scores` — ``α · QL + (1 − α) · DL``; α = 1 is TILDE-QL, α = 0 TILDE-DL.
- :func:`score_run` scores a first-stage run once and keeps QL and DL per candidate
  (:class:`TildeScores`), so that any α — a sweep from 0 to 1 — is a cheap combination
  (:meth:`TildeScores.combine`) and :meth:`TildeScores.rerank` gives the re-ranked run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from tqdm import tqdm  # the plain text bar: tqdm.auto needs ipywidgets, which the book does not install

from lib.core.types import Run, ranking_from_run
from lib.models.tilde import Tilde
from lib.models.tilde_vocabulary import TargetVocabulary
from lib.representations.bert import WordPieceTokenizer
from lib.reranking.scoring import rerank
from lib.reranking.tilde_index import TildeIndex


def ql_scores(log_probs: np.ndarray, rows: np.ndarray, query_terms: np.ndarray) -> np.ndarray:
    """TILDE-QL of the passages at ``rows`` of ``log_probs`` (``[passages, vocab]``): ``float32 [len(rows)]``.

    ``query_terms`` are the query's target piece ids; a piece occurring twice counts twice. A query
    without target pieces scores 0 everywhere.
    """
    rows = np.asarray(rows, dtype=np.int64)
    query_terms = np.asarray(query_terms, dtype=np.int64)
    if query_terms.size == 0:
        return np.zeros(rows.size, dtype=np.float32)
    gathered = log_probs[rows[:, None], query_terms[None, :]]
    return gathered.astype(np.float32).sum(axis=1)


def dl_scores(query_log_probs: np.ndarray, terms: np.ndarray, offsets: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """TILDE-DL of the passages at ``rows``: the mean of ``query_log_probs`` over each passage's pieces.

    Passage ``r``'s pieces are ``terms[offsets[r]:offsets[r+1]]`` (the index layout). A passage
    without pieces gets ``min(query_log_probs)`` (module doc). ``float32 [len(rows)]``.
    """
    rows = np.asarray(rows, dtype=np.int64)
    starts, ends = offsets[rows], offsets[rows + 1]
    lengths = ends - starts
    # Position k of candidate i's pieces is starts[i] + k: one flat gather for all candidates.
    first = np.cumsum(lengths) - lengths
    positions = np.repeat(starts - first, lengths) + np.arange(int(lengths.sum()))
    values = np.asarray(query_log_probs, dtype=np.float64)[np.asarray(terms[positions], dtype=np.int64)]
    sums = np.bincount(np.repeat(np.arange(rows.size), lengths), weights=values, minlength=rows.size)
    floor = float(np.min(query_log_probs))
    return np.where(lengths > 0, sums / np.maximum(lengths, 1), floor).astype(np.float32)


def qdl_scores(ql: np.ndarray, dl: np.ndarray, alpha: float) -> np.ndarray:
    """TILDE-QDL (eq. 6): ``α · ql + (1 − α) · dl``; exactly ``ql`` at α = 1 and ``dl`` at α = 0."""
    check_alpha(alpha)
    if alpha == 1.0:
        return np.asarray(ql)
    if alpha == 0.0:
        return np.asarray(dl)
    return alpha * np.asarray(ql) + (1.0 - alpha) * np.asarray(dl)


def check_alpha(alpha: float) -> float:
    """``alpha`` if it is in [0, 1], else a ``ValueError`` naming the parameter."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"parameter 'alpha' must be in [0, 1], got {alpha!r}")
    return float(alpha)


def query_terms(tokenizer: WordPieceTokenizer, vocabulary: TargetVocabulary, query: str) -> np.ndarray:
    """The query's target pieces (whole query, cleaned, duplicates kept): TILDE-QL's only query-time work."""
    return vocabulary.clean(tokenizer.pieces([query])[0])


def query_log_probs(model: Tilde, tokenizer: WordPieceTokenizer, query: str) -> np.ndarray:
    """``log P(t|q)`` for every piece: TILDE-DL's one BERT pass on the query, ``float32 [vocab]``."""
    return model.log_probs(tokenizer, [query], "query")[0].numpy()


@dataclass
class TildeScores:
    """TILDE-QL and TILDE-DL of every scored candidate (:func:`score_run`); ``dl`` is ``None`` without a model."""

    ql: dict[str, dict[str, float]]
    dl: dict[str, dict[str, float]] | None

    def combine(self, alpha: float) -> dict[str, dict[str, float]]:
        """TILDE-QDL (eq. 6) of every candidate for ``alpha``: ``{qid: {pid: score}}``."""
        check_alpha(alpha)
        if alpha == 1.0:
            return {qid: dict(scores) for qid, scores in self.ql.items()}
        if self.dl is None:
            raise ValueError(f"alpha={alpha} needs TILDE-DL scores: call score_run with a model")
        combined: dict[str, dict[str, float]] = {}
        for qid, scores in self.ql.items():
            pids = list(scores)
            ql = np.array([scores[pid] for pid in pids], dtype=np.float32)
            dl = np.array([self.dl[qid][pid] for pid in pids], dtype=np.float32)
            combined[qid] = dict(zip(pids, qdl_scores(ql, dl, alpha).tolist(), strict=True))
        return combined

    def rerank(self, first_stage: Run, alpha: float = 1.0, depth: int | None = None) -> dict[str, dict[str, float]]:
        """``first_stage`` with its top ``depth`` (default: all scored) re-ordered by TILDE-QDL at ``alpha``.

        The result is a run in the same ``{qid: {pid: score}}`` form (scores encode the new order;
        :func:`lib.reranking.scoring.rerank`); candidates below ``depth`` keep their first-stage order.
        """
        if depth is None:
            depth = max((len(scores) for scores in self.ql.values()), default=0)
        return rerank(first_stage, self.combine(alpha), depth)


def score_run(
    index: TildeIndex,
    tokenizer: WordPieceTokenizer,
    queries: Mapping[str, str],
    run: Run,
    model: Tilde | None = None,
    depth: int | None = None,
    progress: bool = False,
) -> TildeScores:
    """TILDE-QL (and, given ``model``, TILDE-DL) of each query's first-stage top ``depth`` candidates.

    ``depth`` ``None`` scores every candidate of the run. The target vocabulary is the index's
    (rebuilt from ``tokenizer`` and checked against the index's fingerprint). A query missing
    from ``queries`` or a candidate missing from the index is a ``KeyError`` naming it.
    """
    vocabulary = TargetVocabulary.named(index.vocabulary, tokenizer)
    index.check_vocabulary(vocabulary)
    missing = [qid for qid in run if qid not in queries]
    if missing:
        raise KeyError(f"queries of the run without text in 'queries': {missing[:5]}")
    ql: dict[str, dict[str, float]] = {}
    dl: dict[str, dict[str, float]] | None = None if model is None else {}
    for qid in tqdm(run, desc="TILDE scoring", unit="query", disable=not progress):
        pids = ranking_from_run(run[qid])[:depth]
        rows = index.rows(pids)
        query = queries[qid]
        terms = query_terms(tokenizer, vocabulary, query)
        ql[qid] = dict(zip(pids, ql_scores(index.log_probs, rows, terms).tolist(), strict=True))
        if dl is not None:
            vector = query_log_probs(model, tokenizer, query)
            dl[qid] = dict(zip(pids, dl_scores(vector, index.terms, index.offsets, rows).tolist(), strict=True))
    return TildeScores(ql, dl)


def rerank_run(
    index: TildeIndex,
    tokenizer: WordPieceTokenizer,
    queries: Mapping[str, str],
    run: Run,
    alpha: float = 1.0,
    model: Tilde | None = None,
    depth: int | None = None,
) -> dict[str, dict[str, float]]:
    """The first stage re-ranked by TILDE-QDL at ``alpha`` (α = 1: TILDE-QL, no model needed).

    One call of :func:`score_run` and :meth:`TildeScores.rerank`; for several α, call those instead.
    """
    check_alpha(alpha)
    if alpha < 1.0 and model is None:
        raise ValueError(f"alpha={alpha} needs TILDE-DL: pass the model")
    scores = score_run(index, tokenizer, queries, run, model if alpha < 1.0 else None, depth)
    return scores.rerank(run, alpha, depth)


__all__ = [
    "TildeScores",
    "check_alpha",
    "dl_scores",
    "qdl_scores",
    "ql_scores",
    "query_log_probs",
    "query_terms",
    "rerank_run",
    "score_run",
]
