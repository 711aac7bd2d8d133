"""Picking the Figure 3 case: the rule on a hand-made example, ties, and no case at all."""

from __future__ import annotations

import pytest

from lib.analyses.explain_case import Case, candidate_cases, pick_case


def scores(*pids: str) -> dict[str, float]:
    """A run for one query that ranks ``pids`` in the given order."""
    return {pid: float(len(pids) - position) for position, pid in enumerate(pids)}


# q1: BM25 ranks u (unjudged, skipped), n1 (grade 1: the top judged non-relevant), r1, r2 (relevant) …
#     TK ranks r2 1st, n1 3rd: r2 qualifies (BM25 4th → TK 1st), r1 does not (TK 4th, below n1).
# q2: BM25's top judged non-relevant n2 is 1st; r3 moves from BM25 2nd to TK 2nd (above n2, TK 3rd).
# q3: the relevant passage stays below the non-relevant one in TK too: no case.
# q4: nothing judged non-relevant among the candidates: no case.
BM25 = {
    "q1": scores("u", "n1", "r1", "r2", "x"),
    "q2": scores("n2", "r3", "y"),
    "q3": scores("n3", "r4"),
    "q4": scores("r5", "z"),
}
TK = {
    "q1": scores("r2", "u", "n1", "r1", "x"),
    "q2": scores("y", "r3", "n2"),
    "q3": scores("n3", "r4"),
    "q4": scores("z", "r5"),
}
QRELS = {
    "q1": {"n1": 1, "r1": 2, "r2": 3, "x": 0},
    "q2": {"n2": 0, "r3": 2, "y": 0},
    "q3": {"n3": 0, "r4": 3},
    "q4": {"r5": 2},
}


def test_the_rule_on_a_hand_made_example() -> None:
    cases = candidate_cases(BM25, TK, QRELS)
    assert cases == [
        Case(
            "q1",
            "r2",
            "n1",
            3,
            1,
            relevant_bm25_rank=4,
            relevant_tk_rank=1,
            non_relevant_bm25_rank=2,
            non_relevant_tk_rank=3,
        ),
        Case(
            "q2",
            "r3",
            "n2",
            2,
            0,
            relevant_bm25_rank=2,
            relevant_tk_rank=2,
            non_relevant_bm25_rank=1,
            non_relevant_tk_rank=3,
        ),
    ]  # q1 first: its relevant passage is TK's 1st (q2's only 2nd), although q2's non-relevant one is BM25's 1st
    assert pick_case(BM25, TK, QRELS) == cases[0]
    assert pick_case(BM25, TK, QRELS, qids=["q2", "q3"]).qid == "q2"


def test_rel_threshold_changes_what_counts_as_relevant() -> None:
    # with rel = 3, r1 and r3 are no longer relevant but still judged non-relevant (grade 2 < 3)
    case = pick_case(BM25, TK, QRELS, rel=3)
    assert (case.qid, case.relevant_pid, case.non_relevant_pid) == ("q1", "r2", "n1")
    assert candidate_cases(BM25, TK, QRELS, qids=["q2"], rel=3) == []


def test_ties_go_to_the_shorter_then_smaller_query_id() -> None:
    bm25 = {qid: scores("n", "r") for qid in ("b", "a", "10")}
    tk = {qid: scores("r", "n") for qid in bm25}
    qrels = {qid: {"n": 0, "r": 2} for qid in bm25}
    assert [case.qid for case in candidate_cases(bm25, tk, qrels)] == ["a", "b", "10"]


def test_no_case_and_missing_queries() -> None:
    with pytest.raises(ValueError, match="no query"):
        pick_case(BM25, TK, QRELS, qids=["q3", "q4"])
    with pytest.raises(KeyError, match="tk_run"):
        pick_case(BM25, {"q1": TK["q1"]}, QRELS, qids=["q1", "q2"])
