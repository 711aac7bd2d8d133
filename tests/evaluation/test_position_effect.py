"""Where relevance sits (``lib.evaluation.position_effect``): ranks among non-relevant documents, bins, the trend."""

from __future__ import annotations

import pandas as pd
import pytest

from lib.data.assembled_documents import Layout
from lib.evaluation.position_effect import by_position, position_trend, relevant_ranks


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
