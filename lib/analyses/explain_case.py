"""Picking, by code, the query and the two passages of the Figure 3 analogue (TK paper §6).

The paper's scenario: "why the neural model replaced the first result (a non-relevant document)
of the first stage ranking with the actual relevant document". :func:`pick_case` finds such a case
in a first-stage run (BM25), TK's scores of the re-ranked candidates and the judgments.

**Case-picking rule** (deterministic):

1. Per query, only the passages TK scored (the re-ranked candidates) count. The **non-relevant
   passage** is the one BM25 ranks highest among those that are *judged* with a grade below ``rel``
   (unjudged passages are skipped: an unjudged passage may well be relevant).
2. A **relevant passage** (judged grade ≥ ``rel``) qualifies when BM25 ranks it below the
   non-relevant one and TK ranks it above; the query's candidate is the qualifying passage with the
   best TK rank.
3. Among all queries, the case is the one with, in order: the best TK rank of the relevant passage
   (ideally 1), the best BM25 rank of the non-relevant passage (ideally 1, the paper's scenario),
   the largest BM25 rank of the relevant passage (TK found it deepest), the worst TK rank of the
   non-relevant passage, then the query id (shorter first, then by characters).

Ranks follow trec_eval (:func:`lib.core.types.ranking_from_run`); BM25 ranks are ranks in the whole
BM25 run, TK ranks are ranks among the passages TK scored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from lib.core.types import Qrels, Run, ranking_from_run


@dataclass(frozen=True)
class Case:
    """A query where TK moved a relevant passage above BM25's top non-relevant one, with both passages' ranks."""

    qid: str
    relevant_pid: str
    non_relevant_pid: str
    relevant_grade: int
    non_relevant_grade: int
    #: 1-based ranks of the two passages in the BM25 run and among TK's scored candidates.
    relevant_bm25_rank: int
    relevant_tk_rank: int
    non_relevant_bm25_rank: int
    non_relevant_tk_rank: int


def _query_case(
    qid: str, bm25: Mapping[str, float], tk: Mapping[str, float], judged: Mapping[str, int], rel: int
) -> Case | None:
    bm25_rank = {pid: rank for rank, pid in enumerate(ranking_from_run(bm25), start=1)}
    tk_rank = {pid: rank for rank, pid in enumerate(ranking_from_run(tk), start=1)}
    candidates = sorted((pid for pid in tk_rank if pid in bm25_rank), key=bm25_rank.__getitem__)
    non_relevant = next((pid for pid in candidates if pid in judged and judged[pid] < rel), None)
    if non_relevant is None:
        return None
    moved = [
        pid
        for pid in candidates
        if judged.get(pid, 0) >= rel
        and bm25_rank[pid] > bm25_rank[non_relevant]
        and tk_rank[pid] < tk_rank[non_relevant]
    ]
    if not moved:
        return None
    relevant = min(moved, key=lambda pid: (tk_rank[pid], bm25_rank[pid], pid))
    return Case(
        qid=qid,
        relevant_pid=relevant,
        non_relevant_pid=non_relevant,
        relevant_grade=judged[relevant],
        non_relevant_grade=judged[non_relevant],
        relevant_bm25_rank=bm25_rank[relevant],
        relevant_tk_rank=tk_rank[relevant],
        non_relevant_bm25_rank=bm25_rank[non_relevant],
        non_relevant_tk_rank=tk_rank[non_relevant],
    )


def _preference(case: Case) -> tuple:
    return (
        case.relevant_tk_rank,
        case.non_relevant_bm25_rank,
        -case.relevant_bm25_rank,
        -case.non_relevant_tk_rank,
        len(case.qid),
        case.qid,
    )


def candidate_cases(
    bm25_run: Run, tk_run: Run, qrels: Qrels, qids: Iterable[str] | None = None, rel: int = 2
) -> list[Case]:
    """Every query's candidate case (rules 1–2 of the module docstring), best first (rule 3).

    ``qids`` defaults to the queries present in all three inputs; a query of ``qids`` missing from
    one of them is a ``KeyError`` naming the parameter.
    """
    if qids is None:
        qids = [qid for qid in tk_run if qid in bm25_run and qid in qrels]
    cases = []
    for qid in qids:
        for name, table in (("bm25_run", bm25_run), ("tk_run", tk_run), ("qrels", qrels)):
            if qid not in table:
                raise KeyError(f"query {qid!r} is missing from parameter '{name}'")
        case = _query_case(qid, bm25_run[qid], tk_run[qid], qrels[qid], rel)
        if case is not None:
            cases.append(case)
    return sorted(cases, key=_preference)


def pick_case(bm25_run: Run, tk_run: Run, qrels: Qrels, qids: Iterable[str] | None = None, rel: int = 2) -> Case:
    """The Figure 3 case by the module docstring's rule; a ``ValueError`` when no query has one."""
    cases = candidate_cases(bm25_run, tk_run, qrels, qids, rel)
    if not cases:
        raise ValueError(
            "no query where TK ranks a relevant passage (grade >= "
            f"{rel}) above the top judged non-relevant passage of BM25 that BM25 ranked higher"
        )
    return cases[0]
