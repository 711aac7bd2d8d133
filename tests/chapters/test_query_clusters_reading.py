"""Chapter 4's reading (``lib.chapters.query_clusters_reading``): the clusters the prose names and its sentences."""

from __future__ import annotations

import pandas as pd

from lib.chapters.query_clusters_reading import example_query_reading, table3_reading


def test_table3_reading_counts_clusters_the_tk_improves() -> None:
    table3 = pd.DataFrame(
        {
            "queries": [5, 2, 3, 0],
            "BM25": [4.0, 3.0, 5.0, 2.0],
            "TK": [2.0, 1.0, 6.0, 2.0],
            "BERT": [1.0, 1.0, 2.0, 1.0],
        },
        index=pd.Index(["all", 0, 1, 2], dtype=object),
    )
    assert table3_reading(table3, "TK", "BERT", 1, 7) == (
        "Over all 5 TREC DL queries with a relevant passage, the median rank of the first relevant passage is 4 "
        "for BM25, 2 for TK and 1 for BERT. TK finds the first relevant passage earlier than BM25 (lower median) "
        "in 1 of 3 clusters (0), later in 1 (1), and ties it in 1. The definition-like cluster (the most queries "
        "with define, defined, definition, mean, meaning, means) is cluster 1 (3 TREC DL queries): BM25 5, TK 6, "
        'BERT 2; the "what is / what are" cluster is cluster 7 has no judged TREC DL query. Clusters hold 0 to 3 '
        "TREC DL queries (median 2)."
    )


def test_the_example_query_reading_names_its_cluster() -> None:
    described = pd.DataFrame({"opening": ["what is (60%)", "define (40%)"], "terms": ["a, b", "c, d"]}, index=[0, 1])
    example = pd.DataFrame({"qid": ["2"], "cluster": [1], "text": ["androgen receptor define"]})
    assert example_query_reading(example, described) == (
        "The paper's example query 'androgen receptor define' (dev-small id 2, explained in chapter 5) falls in "
        "cluster 1, whose queries most often open with define (40%) and whose most characteristic terms are c, d."
    )
    assert example_query_reading(example.iloc[:0], described).endswith(
        "not among the clustered queries of this profile."
    )
