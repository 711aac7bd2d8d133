"""The rank of the first relevant passage and the Table 3 analogue, on a tiny hand-made ranking."""

from __future__ import annotations

import math

import pytest

from lib.analyses.first_relevant import (
    ALL,
    count_not_found,
    first_relevant_rank,
    first_relevant_ranks,
    median_rank_table,
)


def scores(*pids: str) -> dict[str, float]:
    """A run for one query that ranks ``pids`` in the given order."""
    return {pid: float(len(pids) - position) for position, pid in enumerate(pids)}


QRELS = {
    "q1": {"a": 2, "b": 0, "c": 3},
    "q2": {"d": 1, "e": 2},
    "q3": {"f": 1},  # no passage of grade >= 2: left out
    "q4": {"g": 2},
}
RUNS = {
    "A": {"q1": scores("b", "a", "c"), "q2": scores("e", "d"), "q3": scores("f"), "q4": scores("x", "y", "z")},
    "B": {"q1": scores("c", "a", "b"), "q2": scores("d", "x", "e"), "q3": scores("f"), "q4": scores("g")},
}
CLUSTERS = {"q1": 0, "q2": 1, "q3": 1, "q4": 1}


def test_first_relevant_rank() -> None:
    assert first_relevant_rank(["b", "a", "c"], QRELS["q1"], depth=3) == 2
    assert first_relevant_rank(["d", "x", "e"], QRELS["q2"], depth=3) == 3
    assert first_relevant_rank(["d", "x", "e"], QRELS["q2"], depth=2) == 3  # not in the top 2: depth + 1
    assert first_relevant_rank(["d", "x", "e"], QRELS["q2"], depth=3, rel=1) == 1
    assert first_relevant_rank([], QRELS["q2"], depth=10) == 11
    with pytest.raises(ValueError, match="depth"):
        first_relevant_rank(["a"], QRELS["q1"], depth=0)


def test_ranks_and_the_median_table_by_hand() -> None:
    ranks = first_relevant_ranks(RUNS, QRELS, depth=3)
    assert list(ranks.index) == ["q1", "q2", "q4"] and list(ranks.columns) == ["A", "B"]
    # A: q1 → 2 (b, a), q2 → 1 (e), q4 → 4 (g not retrieved: depth + 1); B: q1 → 1, q2 → 3, q4 → 1
    assert ranks["A"].tolist() == [2, 1, 4] and ranks["B"].tolist() == [1, 3, 1]
    assert count_not_found(ranks, depth=3).to_dict() == {"A": 1, "B": 0}

    table = median_rank_table(ranks, CLUSTERS)
    assert list(table.index) == [0, 1, ALL] and list(table.columns) == ["queries", "A", "B"]
    assert table["queries"].tolist() == [1, 2, 3]
    assert table.loc[0, "A"] == 2 and table.loc[0, "B"] == 1
    assert table.loc[1, "A"] == 2.5 and table.loc[1, "B"] == 2  # medians of (1, 4) and (3, 1)
    assert table.loc[ALL, "A"] == 2 and table.loc[ALL, "B"] == 1  # medians of (2, 1, 4) and (1, 3, 1)


def test_depth_cuts_every_run_alike() -> None:
    ranks = first_relevant_ranks(RUNS, QRELS, depth=2)
    assert ranks["A"].tolist() == [2, 1, 3] and ranks["B"].tolist() == [1, 3, 1]
    assert not any(math.isnan(value) for value in ranks.to_numpy().ravel())


def test_query_selection_and_errors() -> None:
    assert list(first_relevant_ranks(RUNS, QRELS, qids=["q4", "q3", "q1"], depth=3).index) == ["q4", "q1"]
    with pytest.raises(KeyError, match="'B'.*'q2'"):
        first_relevant_ranks({"A": RUNS["A"], "B": {"q1": RUNS["B"]["q1"]}}, QRELS, qids=["q1", "q2"])
    with pytest.raises(ValueError, match="runs"):
        first_relevant_ranks({}, QRELS)
    ranks = first_relevant_ranks(RUNS, QRELS, depth=3)
    with pytest.raises(KeyError, match="q4"):
        median_rank_table(ranks, {"q1": 0, "q2": 1})
    with pytest.raises(ValueError, match="ranks"):
        median_rank_table(ranks.iloc[:0], CLUSTERS)
