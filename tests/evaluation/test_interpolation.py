"""Interpolation with the first stage: normalised per query, λ = 0 / 1 are the two rankings, λ tuned on validation."""

from __future__ import annotations

import pytest

from lib.core.types import ranking_from_run
from lib.evaluation.interpolation import WEIGHTS, interpolate, tune_interpolation

FIRST = {"q1": {"a": 30.0, "b": 20.0, "c": 10.0}, "q2": {"d": 5.0, "e": 5.0}}
MODEL = {"q1": {"a": -1.0, "b": 3.0, "c": 1.0}, "q2": {"d": 0.2, "e": 0.9}}
QRELS = {"q1": {"b": 2}, "q2": {"e": 2}}


def test_the_scores_are_min_max_normalised_per_query_and_mixed_by_the_weight() -> None:
    fused = interpolate(FIRST, MODEL, 0.25)
    # q1: BM25 → a 1, b 0.5, c 0; model → a 0, b 1, c 0.5
    assert fused["q1"] == pytest.approx({"a": 0.75, "b": 0.25 + 0.375, "c": 0.125})
    # q2: equal BM25 scores normalise to 0; the model decides
    assert fused["q2"] == pytest.approx({"d": 0.0, "e": 0.25})


def test_weight_zero_is_the_first_stage_and_weight_one_the_model() -> None:
    for qid in FIRST:
        assert ranking_from_run(interpolate(FIRST, MODEL, 0.0)[qid])[:1] == ranking_from_run(FIRST[qid])[:1]
        assert ranking_from_run(interpolate(FIRST, MODEL, 1.0)[qid]) == ranking_from_run(MODEL[qid])


def test_bad_inputs_are_named() -> None:
    with pytest.raises(ValueError, match="parameter 'weight'"):
        interpolate(FIRST, MODEL, 1.5)
    with pytest.raises(KeyError, match="query 'q1': passage 'c'"):
        interpolate(FIRST, {"q1": {"a": 1.0, "b": 2.0}, "q2": MODEL["q2"]}, 0.5)
    with pytest.raises(ValueError, match="'weights' is empty"):
        tune_interpolation(FIRST, MODEL, QRELS, weights=())


def test_the_tuned_weight_is_the_best_on_the_given_queries_smallest_on_ties() -> None:
    weight, curve = tune_interpolation(FIRST, MODEL, QRELS)
    assert list(curve.index) == list(WEIGHTS)
    assert curve.loc[0.0] < 1.0 and curve.max() == pytest.approx(1.0), "the model puts both relevant passages first"
    assert weight == min(w for w in WEIGHTS if curve.loc[w] == pytest.approx(1.0))
    assert 0.0 < weight <= 1.0
