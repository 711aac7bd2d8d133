"""Where relevance sits (``lib.evaluation.position_effect``): ranks among non-relevant documents, bins, the trend."""

from __future__ import annotations

import itertools
import math

import pandas as pd
import pytest
from scipy import stats

from lib.data.assembled_documents import Layout
from lib.evaluation.position_effect import (
    by_position,
    chance_p_value,
    coverage_table,
    position_trend,
    relevant_ranks,
)


def layout(relevant_at: int | None, length: int = 5) -> Layout:
    return Layout("q", tuple(f"p{i}" for i in range(length)), relevant_at, 2 if relevant_at is not None else 0)


LAYOUTS = {"early": layout(0), "late": layout(4), "n1": layout(None), "n2": layout(None), "n3": layout(None)}


def test_each_relevant_document_is_ranked_among_the_non_relevant_ones_only() -> None:
    run = {"q": {"early": 5.0, "late": 4.0, "n1": 3.0, "n2": 2.0, "n3": 1.0}}
    ranks = relevant_ranks(run, LAYOUTS).set_index("docid")
    assert ranks.loc["late", "rank"] == 1  # the other relevant document above it does not count
    run = {"q": {"n1": 5.0, "early": 4.0, "n2": 3.0, "n3": 2.0, "late": 1.0}}
    ranks = relevant_ranks(run, LAYOUTS).set_index("docid")
    assert (ranks.loc["early", "rank"], ranks.loc["late", "rank"]) == (2, 4)
    assert ranks.loc["early", "position"] == 0.0 and ranks.loc["late", "reciprocal"] == 0.25


def test_bins_and_trends_tell_a_model_that_reads_the_start_from_one_that_reads_everything() -> None:
    positions = [i / 39 for i in range(40)]
    start_reader = pd.DataFrame({"position": positions, "reciprocal": [1 / (1 + int(4 * p)) for p in positions]})
    whole_reader = pd.DataFrame({"position": positions, "reciprocal": [1.0 if i % 2 else 0.5 for i in range(40)]})
    ranks = {"FirstP": start_reader, "MaxP": whole_reader}
    table = by_position(ranks, bins=4)
    assert list(table.columns) == ["FirstP", "MaxP", "documents"] and table["documents"].sum() == 40
    assert table["FirstP"].is_monotonic_decreasing and table.index[0] == "0%–25%"
    trend = position_trend(ranks).set_index("model")
    assert trend.loc["FirstP", "trend"] == "falls" and trend.loc["FirstP", "p_bonferroni"] < 0.05
    assert trend.loc["MaxP", "trend"] == "no significant trend"
    assert trend.loc["MaxP", "p_bonferroni"] == pytest.approx(min(1.0, 2 * trend.loc["MaxP", "p"]))


def test_the_chance_p_value_is_the_exact_poisson_binomial_tail() -> None:
    chance = [0.1, 0.5, 0.3, 0.8]
    hits = [True, False, True, True]
    by_hand = 0.0
    for outcome in itertools.product([0, 1], repeat=4):  # every outcome with at least 3 hits, enumerated
        if sum(outcome) >= 3:
            by_hand += math.prod(p if o else 1 - p for o, p in zip(outcome, chance, strict=True))
    assert chance_p_value(hits, chance) == pytest.approx(by_hand)
    equal = [0.2] * 30  # equal chances: the binomial tail
    assert chance_p_value([True] * 11 + [False] * 19, equal) == pytest.approx(stats.binom.sf(10, 30, 0.2))
    assert chance_p_value([False] * 5, [0.3] * 5) == pytest.approx(1.0) and chance_p_value([], []) == 1.0


def test_the_chance_p_value_rejects_what_is_not_a_probability() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        chance_p_value([True], [0.1, 0.2])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        chance_p_value([True], [1.5])


def test_coverage_tells_a_region_that_finds_the_passage_from_one_placed_at_random() -> None:
    finds = pd.DataFrame({"year": "DL19", "covers": [True] * 18 + [False] * 2, "chance": [0.2] * 20})
    random = pd.DataFrame({"year": "DL20", "covers": [True] * 4 + [False] * 16, "chance": [0.2] * 20})
    table = coverage_table(pd.concat([finds, random]), "year").set_index("year")
    assert table.loc["DL19", "above chance"] and not table.loc["DL20", "above chance"]
    assert table.loc["DL19", "covers"] == pytest.approx(0.9) and table.loc["DL20", "chance"] == pytest.approx(0.2)
    assert table.loc["DL19", "p_bonferroni"] == pytest.approx(2 * stats.binom.sf(17, 20, 0.2))
