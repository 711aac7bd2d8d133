"""Chapter 6's latency measurement (TILDE paper Table 2, "latency"): TILDE against chapter 2's re-rankers on one
CPU core.

- :func:`latency_table` — TILDE-QL and TILDE-QDL (α of :data:`lib.experiments.tilde_scorings.SCORINGS`) per query,
  split into query processing and re-ranking (:func:`lib.evaluation.tilde_latency.measure_latency`), and
  chapter 2's TK-2 and BERT-cat re-ranking the same first query's candidates on one thread
  (:func:`lib.evaluation.efficiency.measure_latency`: score every candidate, then sort).
- :func:`v2_latency_table` — TILDEv2's, in the same columns.
- :func:`latency_of` — one total of those tables.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import torch

from lib.core.profiles import Profile
from lib.core.types import Run, query_order
from lib.evaluation.efficiency import candidate_pairs, encode_pairs
from lib.evaluation.efficiency import measure_latency as measure_model_latency
from lib.evaluation.tilde_latency import TildeLatency, measure_latency, measure_v2_latency
from lib.experiments import artifacts
from lib.experiments.tilde_scorings import SCORINGS
from lib.models.registry import model_spec
from lib.models.tilde import Tilde
from lib.models.tilde_vocabulary import TargetVocabulary
from lib.representations.bert import WordPieceTokenizer
from lib.reranking.tilde_index import TildeIndex
from lib.reranking.tilde_v2_index import TildeV2Index

#: Chapter 2's re-rankers timed for the contrast: (model name, label, scoring batch size as chapter 3's).
RERANKERS: tuple[tuple[str, str, int], ...] = tuple(
    (name, f"{model_spec(name).label} (chapter 2)", model_spec(name).score_batch_size) for name in ("tk2", "bert-cat")
)


def _row(result: TildeLatency) -> dict[str, Any]:
    """One row of the latency tables from a :class:`lib.evaluation.tilde_latency.TildeLatency`."""
    return {
        "method": result.method,
        "candidates": result.candidates,
        "repeated": result.padded,
        "query processing ms": result.query_processing_ms,
        "re-ranking ms": result.reranking_ms,
        "total ms": result.total_ms,
        "queries": result.queries,
        "device": result.device,
    }


def latency_table(
    index: TildeIndex,
    tokenizer: WordPieceTokenizer,
    queries: Mapping[str, str],
    run: Run,
    model: Tilde,
    texts: Mapping[str, str],
    profile: Profile,
    candidates: Sequence[int],
    repetitions: int,
) -> tuple[pd.DataFrame, list[str]]:
    """Milliseconds per query of TILDE and of chapter 2's :data:`RERANKERS`, each for every count
    of ``candidates`` of ``run`` (repeated when a query has fewer: column ``repeated``).

    TILDE is timed over all of ``run``'s queries (``model`` for TILDE-QDL's query pass); the re-rankers on the
    first query (by ``(len(qid), qid)``), on one thread. A re-ranker that chapter 2 has not trained is left
    out; the returned messages say so.
    """
    rows = [
        _row(result)
        for alpha in (1.0, SCORINGS["TILDE-QDL"])
        for result in measure_latency(
            index, tokenizer, queries, run, model=model, alpha=alpha, candidates=candidates, repetitions=repetitions
        )
    ]
    left_out = []
    threads_before = torch.get_num_threads()
    torch.set_num_threads(1)
    qid = sorted(run, key=query_order)[0]
    try:
        for name, label, batch_size in RERANKERS:
            try:
                reranker = artifacts.trained_model(profile, name, device="cpu")
            except FileNotFoundError as missing:
                left_out.append(f"{label} left out: {missing}")
                continue
            for count in candidates:
                pairs, repeated = candidate_pairs(run, queries, texts, count, qid=qid)
                tensors = encode_pairs(reranker.tokenizer, pairs)
                timing = measure_model_latency(reranker.model, tensors, batch_size=batch_size, repeated=repeated)
                rows.append(
                    {
                        "method": label,
                        "candidates": count,
                        "repeated": repeated,
                        "query processing ms": math.nan,
                        "re-ranking ms": timing.milliseconds,
                        "total ms": timing.milliseconds,
                        "queries": 1,
                        "device": timing.device,
                    }
                )
    finally:
        torch.set_num_threads(threads_before)
    return pd.DataFrame(rows), left_out


def v2_latency_table(
    index: TildeV2Index,
    tokenizer: WordPieceTokenizer,
    queries: Mapping[str, str],
    run: Run,
    vocabulary: TargetVocabulary,
    candidates: Sequence[int],
    repetitions: int,
) -> pd.DataFrame:
    """TILDEv2's milliseconds per query (:func:`lib.evaluation.tilde_latency.measure_v2_latency`), in the
    columns of :func:`latency_table`."""
    results = measure_v2_latency(
        index, tokenizer, queries, run, vocabulary, candidates=candidates, repetitions=repetitions
    )
    return pd.DataFrame([_row(result) for result in results])


def latency_of(table: pd.DataFrame, method: str, count: int) -> float:
    """The total milliseconds of ``method`` for ``count`` candidates in :func:`latency_table`; ``nan`` if absent."""
    chosen = table[(table["method"] == method) & (table["candidates"] == count)]
    return float(chosen["total ms"].iloc[0]) if len(chosen) else math.nan
