"""Where relevance sits (``lib.evaluation.position_effect``): the sweep's ranks among non-relevant documents, its
tests against offset 0 (a model that reads the start falls, one that reads everything holds), the coverage test."""

from __future__ import annotations

import itertools
import math

import pandas as pd
import pytest
from scipy import stats

from lib.data.assembled_documents import END, Layout, SweepVariant
from lib.evaluation.position_effect import (
    chance_p_value,
    coverage_table,
    split_by_windows,
    sweep_ranks,
    sweep_tests,
    window_split_table,
)


def layout(relevant_at: int | None, length: int = 5) -> Layout:
    return Layout("q", tuple(f"p{i}" for i in range(length)), relevant_at, 2 if relevant_at is not None else 0)


LAYOUTS = {"early": layout(0), "n1": layout(None), "n2": layout(None), "n3": layout(None)}
VARIANTS = {"q-at-0": SweepVariant(layout(0), 0, 0, 80), "q-at-256": SweepVariant(layout(2), 256, 240, 80),
            "q-at-end": SweepVariant(layout(5, 6), END, 900, 80)}  # fmt: skip


def test_each_sweep_document_is_ranked_among_the_non_relevant_ones_only() -> None:
    scores = {"q": {"early": 9.0, "n1": 3.0, "n2": 2.0, "n3": 1.0}}  # a relevant competitor does not count
    ranks = sweep_ranks({"q": {"q-at-0": 5.0, "q-at-256": 2.5, "q-at-end": 2.0}}, scores, LAYOUTS, VARIANTS)
    ranks = ranks.set_index("docid")
    assert ranks["rank"].tolist() == [1, 2, 3]  # a tie (2.0 against n2) counts against the document
    assert ranks.loc["q-at-256", "offset"] == 240 and ranks.loc["q-at-end", "target"] == END
    assert ranks.loc["q-at-end", "reciprocal"] == pytest.approx(1 / 3)


def _sweep(reciprocal) -> pd.DataFrame:
    rows = [{"qid": f"q{i}", "docid": f"q{i}-at-{t}", "target": t, "offset": max(t, 0), "rank": 1,
             "reciprocal": reciprocal(i, t)} for i in range(30) for t in (0, 256, 768, END)]  # fmt: skip
    return pd.DataFrame(rows)


def test_the_tests_tell_a_model_that_reads_the_start_from_one_that_reads_everything() -> None:
    start_reader = _sweep(lambda i, t: (1.0 if i % 3 else 0.5) if 0 <= t < 512 else 1 / (2 + i % 5))
    whole_reader = _sweep(lambda i, t: (1.0 if (i + t // 256) % 2 else 0.5) if t != END else 1 / (2 + i % 5))
    unmoved = _sweep(lambda i, t: 1 / (1 + i % 4))  # BM25: the same score wherever the passage sits
    tests = sweep_tests({"FirstP": start_reader, "MaxP": whole_reader, "BM25": unmoved}).set_index(["model", "target"])
    assert tests.loc[("FirstP", 768), "reading"] == "below" and tests.loc[("FirstP", 256), "reading"] == "holds"
    assert tests.loc[("MaxP", 768), "reading"] == "holds" and tests.loc[("MaxP", END), "reading"] == "below"
    assert tests.loc[("FirstP", 0), "reading"] == "reference" and math.isnan(tests.loc[("FirstP", 0), "p"])
    by_hand = stats.ttest_rel(whole_reader[whole_reader["target"] == 768]["reciprocal"],
                              whole_reader[whole_reader["target"] == 0]["reciprocal"]).pvalue  # fmt: skip
    assert tests.loc[("MaxP", 768), "p_bonferroni"] == pytest.approx(min(1.0, 9 * by_hand))  # 9 tests in all
    assert (tests.loc["BM25", "p"].dropna() == 1.0).all() and (tests.loc["BM25", "reading"] != "below").all()
    assert tests.loc[("FirstP", 768), "queries"] == 30
    with pytest.raises(ValueError, match="offset 0"):
        sweep_tests({"FirstP": start_reader[start_reader["target"] != 0]})


def test_a_passage_is_split_when_no_window_holds_it_whole() -> None:
    assert not split_by_windows(0, 80, size=150, stride=150) and split_by_windows(128, 80, size=150, stride=150)
    assert not split_by_windows(512, 80, size=150, stride=150)  # inside the window 450–600
    assert not split_by_windows(128, 80, size=150, stride=75)  # half-window steps: the window 75–225 holds it
    assert split_by_windows(10, 200, size=150, stride=75)  # longer than a window: always split


def test_the_window_table_tells_a_reader_that_loses_split_passages() -> None:
    rows = [{"target": t, "offset": t, "length": 80, "reciprocal": 0.2 if split_by_windows(t, 80, 150, 150) else 0.9}
            for t in (0, 128, 256, 384, 512, 768, END) for _ in range(10)]  # fmt: skip
    table = window_split_table(pd.DataFrame(rows), 150, 150).set_index("relevant passage")
    assert table.loc["whole in one window", "documents"] == 20  # 512 and 768; offset 0 and the end left out
    assert table.loc["split by a boundary", "documents"] == 30 and table.loc[
        "split by a boundary", "reciprocal rank"
    ] == pytest.approx(0.2)
    assert table["p (Mann–Whitney)"].iloc[0] < 0.001


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
