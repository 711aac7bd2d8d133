"""Re-ranking first-stage runs with one TILDE model through its index (TILDE paper §3.2, Table 2).

:func:`score_first_stages` indexes the union of the runs' top candidates once and scores every run
from it; the index is kept (the chapter's latency and size figures read it) or removed after scoring
(the ablation's many models, whose indexes are large and needed once). :func:`tied_share` measures
how many candidates a stored precision cannot tell apart, and :func:`random_order` gives the
reference every re-ranker should beat: the top candidates in a seeded random order.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lib.core.types import Run, query_order, ranking_from_run, run_from_rankings
from lib.models.tilde import Tilde
from lib.models.tilde_vocabulary import TargetVocabulary
from lib.representations.bert import WordPieceTokenizer
from lib.reranking.tilde_index import build_index
from lib.reranking.tilde_scoring import TildeScores, score_run


@dataclass(frozen=True)
class IndexSummary:
    """What an index held: ``passages``, bytes per passage on disk (all files, and the log-probabilities alone)."""

    passages: int
    bytes_per_passage: float
    log_prob_bytes_per_passage: int
    log_prob_dtype: str
    folder: Path | None


def candidate_pids(runs: Mapping[str, Run]) -> list[str]:
    """Every passage of ``runs`` once, in order of first appearance (run by run, query by query, rank by rank)."""
    return list(dict.fromkeys(pid for run in runs.values() for qid in run for pid in ranking_from_run(run[qid])))


def score_first_stages(
    model: Tilde,
    tokenizer: WordPieceTokenizer,
    texts: Mapping[str, str],
    queries: Mapping[str, str],
    runs: Mapping[str, Run],
    folder: str | os.PathLike,
    vocabulary: TargetVocabulary,
    log_prob_dtype: str = "float16",
    keep_index: bool = True,
    progress: bool = True,
) -> tuple[dict[str, TildeScores], IndexSummary]:
    """TILDE-QL and TILDE-DL of every candidate of every run in ``runs`` (``{name: run}``), from one index.

    The index of all the runs' passages is built in ``folder`` (:func:`lib.reranking.tilde_index.build_index`)
    and removed afterwards unless ``keep_index``; the returned summary names the folder only when
    it was kept. A candidate without text is a ``KeyError`` naming it, before any work.
    """
    if not runs:
        raise ValueError("parameter 'runs' is empty: no first stage to re-rank")
    folder = Path(folder)
    index = build_index(
        model,
        tokenizer,
        texts,
        candidate_pids(runs),
        folder,
        vocabulary,
        progress=progress,
        log_prob_dtype=log_prob_dtype,
    )
    scores = {name: score_run(index, tokenizer, queries, run, model=model) for name, run in runs.items()}
    summary = IndexSummary(
        passages=len(index),
        bytes_per_passage=index.bytes_per_passage,
        log_prob_bytes_per_passage=index.log_prob_bytes_per_passage,
        log_prob_dtype=log_prob_dtype,
        folder=folder if keep_index else None,
    )
    if not keep_index:
        del index  # release the memory maps before the files go
        shutil.rmtree(folder)
    return scores, summary


def tied_share(scores: Run) -> float:
    """The share of candidates whose score equals another candidate's of the same query (0 when none).

    Re-ranking keeps the first stage's order among tied candidates (:func:`lib.reranking.scoring.rerank_at_depth`),
    so a high share means that much of a "re-ranked" list is still the first stage's.
    """
    tied = total = 0
    for candidates in scores.values():
        values = np.fromiter(candidates.values(), dtype=np.float64, count=len(candidates))
        _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
        tied += int((counts[inverse] > 1).sum())
        total += len(values)
    return tied / total if total else 0.0


def random_order(run: Run, seed: int) -> dict[str, dict[str, float]]:
    """Every query's candidates in a random order (numpy's generator seeded with ``seed``; queries in sorted order)."""
    rng = np.random.default_rng(seed)
    rankings = {}
    for qid in sorted(run, key=query_order):
        pids = ranking_from_run(run[qid])
        rankings[qid] = [pids[i] for i in rng.permutation(len(pids))]
    return run_from_rankings(rankings)


__all__ = ["IndexSummary", "candidate_pids", "random_order", "score_first_stages", "tied_share"]
