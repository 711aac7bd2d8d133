"""Query types and the best and worst queries (``lib.analyses.query_types``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from lib.analyses.query_types import OTHER_TYPE, best_and_worst, query_type, type_test
from lib.data import load_queries, read_qrels, read_run
from lib.evaluation import measures as evaluation


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("define visceral?", "definition"),
        ("anthropological definition of environment", "definition"),
        ("what is wifi vs bluetooth", "what"),
        ("how are some sharks warm blooded", "how"),
        ("why did the us volunterilay enter ww1", "why"),
        ("who is robert gray", "who / when / where / which"),
        ("do goldfish grow", "yes / no"),
        ("right pelvic pain causes", OTHER_TYPE),
    ],
)
def test_query_types_come_from_the_first_words(text: str, kind: str) -> None:
    assert query_type(text) == kind


def test_type_test_finds_a_type_that_goes_with_ap_and_not_a_lone_type() -> None:
    queries = {str(i): ("what is x" if i < 10 else "how to y") for i in range(20)}
    separated = pd.Series([0.9 + 0.001 * i for i in range(10)] + [0.1 + 0.001 * i for i in range(10)],
                          index=[str(i) for i in range(20)])  # fmt: skip
    assert type_test(separated, queries)["p"] < 0.01
    same = {str(i): "what is x" for i in range(20)}
    assert type_test(separated, same) == {"statistic": 0.0, "p": 1.0, "types": 1.0}


def test_best_and_worst_on_real_dl19_bm25(converted: Path) -> None:
    run = read_run(converted / "runs" / "dl19__bm25.trec")
    qrels = read_qrels(converted / "qrels.dl19.txt")
    ap = evaluation.per_query(run, qrels, ["MAP"])["MAP"]
    queries = load_queries("dl19")
    table = best_and_worst(ap, ap, queries, count=5)
    assert list(table.columns) == ["group", "qid", "AP", "BM25 AP", "query", "type"]
    best, worst = table[table["group"] == "best"], table[table["group"] == "worst"]
    assert len(best) == len(worst) == 5
    assert list(best["AP"]) == sorted(best["AP"], reverse=True)
    assert list(worst["AP"]) == sorted(worst["AP"])
    assert best["AP"].min() >= worst["AP"].max()
    assert best["AP"].iloc[0] == pytest.approx(ap.max()) and worst["AP"].iloc[0] == pytest.approx(ap.min())
    assert not set(best["qid"]) & set(worst["qid"])
    for _, row in table.iterrows():
        assert row["query"] == queries[row["qid"]] and row["type"] == query_type(row["query"])


def test_best_and_worst_splits_few_queries_in_halves() -> None:
    ap = pd.Series([0.1, 0.9, 0.5], index=["1", "2", "3"])
    table = best_and_worst(ap, pd.Series(dtype=float), {"1": "a", "2": "what b", "3": "c"}, count=5)
    assert table[["group", "qid"]].values.tolist() == [["best", "2"], ["worst", "1"]]
    assert table["BM25 AP"].isna().all()
    with pytest.raises(ValueError, match="'count'"):
        best_and_worst(ap, ap, {}, count=0)
