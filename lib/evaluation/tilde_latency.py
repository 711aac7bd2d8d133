"""TILDE's query latency on the CPU, split as the paper's Table 2: query processing + re-ranking.

Per query (TILDE paper §5.2, Table 2; the authors' ``inference.py`` times the same two parts):

- **query processing** — tokenise the query and keep its target pieces; when α < 1 also TILDE's one
  BERT pass on the query (``log P(t|q)``, for TILDE-DL);
- **re-ranking** — look the candidates up in the memory-mapped index, gather and sum the query's
  pieces from their fp16 rows (TILDE-QL), for α < 1 also average the query's vector over their
  pieces (TILDE-DL) and mix (eq. 6), then sort the candidates.

Loading the index is excluded (the memory map is warm after the warm-up). Each query is timed
``warmup`` times untimed, then ``repetitions`` times; a query's time is the median of its
repetitions and the reported number the mean over queries, in milliseconds. torch runs with
``threads`` threads (default 1: one core; numpy's gather and sort are single-threaded). A
query's candidates are its first-stage ranking restricted to indexed passages; for a count above
that (1,000 at book scale, where at most 100 candidates have text) they are repeated cyclically and
the measurement says so (``padded``): the work per candidate is the same, the memory pages repeat.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import torch

from lib.core.types import Run, ranking_from_run
from lib.evaluation.efficiency import device_name
from lib.models.tilde import Tilde
from lib.models.tilde_vocabulary import TargetVocabulary
from lib.representations.bert import WordPieceTokenizer
from lib.reranking.tilde_index import TildeIndex
from lib.reranking.tilde_scoring import check_alpha, dl_scores, qdl_scores, ql_scores, query_log_probs, query_terms
from lib.reranking.tilde_v2_index import TildeV2Index


@dataclass(frozen=True)
class TildeLatency:
    """One latency measurement (milliseconds per query; see the module doc).

    Attributes:
        method: ``"TILDE-QL"`` (α = 1, no BERT at query time) or ``"TILDE-QDL"``.
        alpha: the mixing weight of eq. 6.
        candidates: candidates re-ranked per query; ``padded``: whether they were repeated to reach it.
        queries, repetitions: how many queries were timed, each how many times.
        query_processing_ms, reranking_ms, total_ms: mean over queries of each query's median.
        threads: torch threads during the measurement; ``device``: the CPU's name.
    """

    method: str
    alpha: float
    candidates: int
    padded: bool
    queries: int
    repetitions: int
    query_processing_ms: float
    reranking_ms: float
    total_ms: float
    threads: int
    device: str
    torch_version: str
    numpy_version: str

    def as_dict(self) -> dict:
        return asdict(self)


def _median_ms(function: Callable[[], object], repetitions: int, warmup: int) -> tuple[float, object]:
    for _ in range(warmup):
        function()
    timings, result = [], None
    for _ in range(repetitions):
        start = time.perf_counter_ns()
        result = function()
        timings.append((time.perf_counter_ns() - start) / 1e6)
    return statistics.median(timings), result


def _candidates(index: TildeIndex | TildeV2Index, scores: Mapping[str, float], count: int) -> tuple[list[str], bool]:
    """The first ``count`` indexed candidates of a query, repeated cyclically when there are fewer."""
    pids = [pid for pid in ranking_from_run(scores) if pid in index.row_of]
    if not pids:
        return [], False
    padded = len(pids) < count
    return (pids * math.ceil(count / len(pids)))[:count], padded


def measure_latency(
    index: TildeIndex,
    tokenizer: WordPieceTokenizer,
    queries: Mapping[str, str],
    run: Run,
    model: Tilde | None = None,
    alpha: float = 1.0,
    candidates: Sequence[int] = (100, 1000),
    repetitions: int = 5,
    warmup: int = 1,
    threads: int = 1,
) -> list[TildeLatency]:
    """TILDE's per-query latency for each count of ``candidates`` (module doc); one result per count.

    ``alpha`` < 1 needs ``model`` (on the CPU). Queries of ``run`` without text or without any
    indexed candidate are skipped; none left is a ``ValueError``.
    """
    alpha = check_alpha(alpha)
    if alpha < 1.0 and model is None:
        raise ValueError(f"alpha={alpha} needs TILDE-DL at query time: pass the model")
    if model is not None and alpha < 1.0 and model.device.type != "cpu":
        raise ValueError(f"TILDE's latency is measured on the CPU (Table 2); the model is on {model.device}")
    for name, value in (("repetitions", repetitions), ("threads", threads)):
        if value < 1:
            raise ValueError(f"parameter {name!r} must be at least 1, got {value}")
    if warmup < 0 or not candidates or min(candidates) < 1:
        raise ValueError("parameter 'warmup' must be >= 0 and 'candidates' a non-empty list of positive counts")
    vocabulary = TargetVocabulary.named(index.vocabulary, tokenizer)
    index.check_vocabulary(vocabulary)

    def process(query: str) -> tuple[np.ndarray, np.ndarray | None]:
        terms = query_terms(tokenizer, vocabulary, query)
        return terms, (query_log_probs(model, tokenizer, query) if alpha < 1.0 else None)

    def rerank(pids: list[str], terms: np.ndarray, vector: np.ndarray | None) -> list[str]:
        rows = index.rows(pids)
        scores = ql_scores(index.log_probs, rows, terms)
        if vector is not None:
            scores = qdl_scores(scores, dl_scores(vector, index.terms, index.offsets, rows), alpha)
        return [pids[i] for i in np.argsort(-scores, kind="stable")]

    def timed(pids: list[str], query: str) -> tuple[float, float]:
        processing, (terms, vector) = _median_ms(lambda: process(query), repetitions, warmup)
        reranking, _ = _median_ms(lambda: rerank(pids, terms, vector), repetitions, warmup)
        return processing, reranking

    method = "TILDE-QL" if alpha == 1.0 else "TILDE-QDL"
    return _latencies(method, alpha, index, queries, run, candidates, repetitions, threads, timed)


def _latencies(
    method: str,
    alpha: float,
    index: TildeIndex | TildeV2Index,
    queries: Mapping[str, str],
    run: Run,
    candidates: Sequence[int],
    repetitions: int,
    threads: int,
    timed: Callable[[list[str], str], tuple[float, float]],
) -> list[TildeLatency]:
    """One :class:`TildeLatency` per count of ``candidates``: ``timed(pids, query)`` gives one query's median
    processing and re-ranking milliseconds; run on ``threads`` torch threads."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        results = []
        for count in candidates:
            processing, reranking, padded_any = [], [], False
            for qid, scores in run.items():
                pids, padded = _candidates(index, scores, count)
                if qid not in queries or not pids:
                    continue
                padded_any |= padded
                query_ms, rerank_ms = timed(pids, queries[qid])
                processing.append(query_ms)
                reranking.append(rerank_ms)
            if not processing:
                raise ValueError("no query of 'run' has text in 'queries' and a candidate in the index")
            results.append(
                TildeLatency(
                    method=method,
                    alpha=alpha,
                    candidates=count,
                    padded=padded_any,
                    queries=len(processing),
                    repetitions=repetitions,
                    query_processing_ms=statistics.fmean(processing),
                    reranking_ms=statistics.fmean(reranking),
                    total_ms=statistics.fmean(p + r for p, r in zip(processing, reranking, strict=True)),
                    threads=threads,
                    device=device_name(torch.device("cpu")),
                    torch_version=torch.__version__,
                    numpy_version=np.__version__,
                )
            )
        return results
    finally:
        torch.set_num_threads(previous)


def measure_v2_latency(
    index: TildeV2Index,
    tokenizer: WordPieceTokenizer,
    queries: Mapping[str, str],
    run: Run,
    vocabulary: TargetVocabulary,
    candidates: Sequence[int] = (100, 1000),
    repetitions: int = 5,
    warmup: int = 1,
) -> list[TildeLatency]:
    """TILDEv2's per-query latency on one core, as :func:`measure_latency` measures TILDE-QL's.

    Query processing is the tokenizer and the cleaning of the query's pieces; re-ranking looks up each
    candidate's stored weights (:meth:`lib.reranking.tilde_v2_index.TildeV2Index.score`) and sorts.
    """
    if repetitions < 1 or warmup < 0 or not candidates or min(candidates) < 1:
        raise ValueError(
            "'repetitions' must be >= 1, 'warmup' >= 0 and 'candidates' a non-empty list of positive counts"
        )

    def process(query: str) -> np.ndarray:
        return np.asarray(vocabulary.clean(tokenizer.pieces([query])[0]), dtype=np.int64)

    def rerank(pids: list[str], terms: np.ndarray) -> list[str]:
        return [pids[i] for i in np.argsort(-index.score(terms, pids), kind="stable")]

    def timed(pids: list[str], query: str) -> tuple[float, float]:
        processing, terms = _median_ms(lambda: process(query), repetitions, warmup)
        reranking, _ = _median_ms(lambda: rerank(pids, terms), repetitions, warmup)
        return processing, reranking

    return _latencies("TILDEv2", 1.0, index, queries, run, candidates, repetitions, 1, timed)


__all__ = ["TildeLatency", "measure_latency", "measure_v2_latency"]
