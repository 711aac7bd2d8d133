"""The shared types and orders (``lib.core.types``): query order, trec_eval order, top of a run."""

from __future__ import annotations

import pytest

from lib.core.types import query_order, ranking_from_run, run_from_rankings, sorted_queries, top_of_run


def test_query_order_is_numeric_for_numeric_ids() -> None:
    assert sorted_queries(["10", "2", "1", "100", "b", "a"]) == ["1", "2", "a", "b", "10", "100"]
    assert query_order("19335") < query_order("1037798")


def test_ranking_follows_trec_eval_ties_by_passage_id_descending() -> None:
    assert ranking_from_run({"a": 1.0, "b": 3.0, "c": 1.0}) == ["b", "c", "a"]


def test_run_from_rankings_reproduces_the_order_and_refuses_duplicates() -> None:
    run = run_from_rankings({"q": ["x", "a", "m"]})
    assert ranking_from_run(run["q"]) == ["x", "a", "m"]
    with pytest.raises(ValueError, match="twice"):
        run_from_rankings({"q": ["x", "x"]})


def test_top_of_run_keeps_the_first_stage_order_scores_and_chosen_queries() -> None:
    run = {"q": {"a": 1.0, "b": 3.0, "c": 2.0}, "r": {"d": 1.0}}
    assert top_of_run(run, 2) == {"q": {"b": 3.0, "c": 2.0}, "r": {"d": 1.0}}
    assert top_of_run(run, 1, ["r", "missing"]) == {"r": {"d": 1.0}}
    with pytest.raises(ValueError, match="'depth'"):
        top_of_run(run, 0)
