"""The book's shared types and orders: runs, qrels, judged query sets, the query order, trec_eval's ranking order.

- A **run** maps query id → passage id → score; a **qrels** maps query id → passage id → grade.
- A **judged set** (:class:`JudgedSet`) is a judged query set with its first-stage candidates: a test year
  or the validation set of training.
- Queries are listed in **query order**: shorter ids first, then by id (``"2" < "10"``), so numeric
  TREC and MS MARCO ids come out in numeric order without parsing them.
- A query's passages are ranked in **trec_eval order**: score descending, ties by passage id
  descending (what ``trec_eval`` does), so every ranking the book evaluates is the one trec_eval sees.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

Run = Mapping[str, Mapping[str, float]]
Qrels = Mapping[str, Mapping[str, int]]


@dataclass
class JudgedSet:
    """A judged query set with its first-stage candidates: what is re-ranked and measured.

    ``name`` is the query set's (``dl19``, ``dev-small``); ``queries`` the texts of its queries (at least of
    those in ``run``); ``qrels`` their judgments; ``run`` the first stage's candidates to re-rank, by query.
    """

    name: str
    queries: Mapping[str, str]
    qrels: Qrels
    run: Run


def query_order(qid: str) -> tuple[int, str]:
    """Sort key of the query order: ``sorted(qids, key=query_order)``."""
    return (len(qid), qid)


def sorted_queries(qids: Iterable[str]) -> list[str]:
    """``qids`` in query order."""
    return sorted(qids, key=query_order)


def ranking_from_run(scores: Mapping[str, float]) -> list[str]:
    """One query's passages in trec_eval order: score descending, ties by passage id descending."""
    return [pid for pid, _ in sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)]


def run_from_rankings(rankings: Mapping[str, Sequence[str]]) -> dict[str, dict[str, float]]:
    """Turn ordered lists into a run whose scores (``len - position``) reproduce the order exactly."""
    run: dict[str, dict[str, float]] = {}
    for qid, ranking in rankings.items():
        if len(set(ranking)) != len(ranking):
            raise ValueError(f"query {qid!r}: a passage appears twice in the ranking")
        run[qid] = {pid: float(len(ranking) - position) for position, pid in enumerate(ranking)}
    return run


def top_of_run(run: Run, depth: int, qids: Iterable[str] | None = None) -> dict[str, dict[str, float]]:
    """Each query's top ``depth`` passages (trec_eval order), scores kept; only ``qids`` (in the run) if given."""
    if depth < 1:
        raise ValueError(f"parameter 'depth' must be at least 1, got {depth}")
    wanted = run if qids is None else [qid for qid in qids if qid in run]
    return {qid: {pid: run[qid][pid] for pid in ranking_from_run(run[qid])[:depth]} for qid in wanted}
