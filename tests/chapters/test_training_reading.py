"""Chapter 2's readings (``lib.chapters.training_reading``): the sentences follow the measured numbers."""

from __future__ import annotations

import pandas as pd

from lib.chapters.training_reading import (
    cls_vector_reading,
    embedding_rate,
    query_source_reading,
    query_sources_skipped,
    table2_reading,
)
from lib.core.profiles import get_profile


def _query_comparison(validation: dict[str, float]) -> pd.DataFrame:
    rows = [
        {
            "set": fold,
            "training queries": label,
            "nDCG@10 (all)": value + shift,
            "validation nDCG@10": validation[label],
        }
        for fold, shift in (("dl19", 0.0), ("dl20", 0.1))
        for label, value in (("both", 0.5), ("dev-small queries", 0.4), ("pseudo-queries", 0.3))
    ]
    return pd.DataFrame(rows)


def test_query_source_reading_names_every_source_and_what_validation_favours() -> None:
    sources = ["both", "dev-small queries", "pseudo-queries"]
    text = query_source_reading(
        _query_comparison({"both": 0.6, "dev-small queries": 0.5, "pseudo-queries": 0.4}),
        sources,
        ["dl19", "dl20"],
        "DL21",
        "nDCG@10",
    )
    assert text == (
        "Re-ranking all candidates, TK-2 reaches nDCG@10 DL19: 0.500 (both), 0.400 (dev-small queries), "
        "0.300 (pseudo-queries); DL20: 0.600 (both), 0.500 (dev-small queries), 0.400 (pseudo-queries). "
        "On DL21 validation, the only set a choice may rest on, the best nDCG@10 is 0.600 (both), "
        "0.500 (dev-small queries), 0.400 (pseudo-queries): validation favours both sources together, "
        "the book's default."
    )
    other = _query_comparison({"both": 0.4, "dev-small queries": 0.5, "pseudo-queries": 0.6})
    assert query_source_reading(other, sources, ["dl19"], "DL21", "nDCG@10").endswith(
        "validation favours pseudo-queries, not the book's default."
    )


def test_a_skipped_query_comparison_says_so_and_why() -> None:
    book, paper_mini = get_profile("book").training, get_profile("paper-mini").training
    because = query_sources_skipped(paper_mini)
    assert "paper's path" in because and "minilm_msmarcopassage_train_scores_ids.tsv" in because
    assert query_source_reading(pd.DataFrame(), [], ["dl19"], "DL21", "nDCG@10", because) == (
        f"*Skipped here: the comparison of training queries, because {because}.*"
    )
    assert query_sources_skipped(book, compare_queries=False) == "the parameter `compare_queries` is off"
    assert "one source" in query_sources_skipped(book.replace(distill_pseudo_queries=0))


def test_cls_vector_reading_follows_the_cosines_and_the_loss() -> None:
    by_depth = pd.DataFrame({"[CLS] vector": [0.999, 0.995, 0.9]}, index=[1, 2, 3])
    loss = pd.Series([1.0, 0.9, 0.7], index=[10, 20, 30])
    assert cls_vector_reading(by_depth, 3, loss) == (
        "After MiniLM's first 2 layers the `[CLS]` vector is nearly the same for every pair (mean cosine above "
        "0.99); after the 3 layers BERT-cat keeps, the mean cosine is 0.9000: the vector already tells pairs "
        "apart when fine-tuning starts. BERT-cat's training loss stayed above 80% of its first logged value "
        "until step 30 of 30."
    )
    flat = pd.Series([1.0, 0.95], index=[10, 20])
    assert cls_vector_reading(by_depth.iloc[:1], 1, flat) == (
        "After MiniLM's first 1 layers the `[CLS]` vector is nearly the same for every pair (mean cosine above "
        "0.99); after the 1 layer BERT-cat keeps, the mean cosine is 0.9990: the new linear layer has nothing to "
        "rank by until fine-tuning has moved information into the vector. BERT-cat's training loss never fell "
        "below 80% of its first logged value in its 20 steps."
    )


def test_table2_reading_counts_models_above_bm25_and_compares_speed() -> None:
    table = pd.DataFrame(
        [
            {"set": "dl19", "model": "BM25", "nDCG@10": 0.5},
            {"set": "dl19", "model": "tk2", "nDCG@10": 0.55, "nDCG@10 (all)": 0.6, "nDCG@10 (+BM25)": 0.52,
             "docs/ms": 30.0, "depth": 50},
            {"set": "dl19", "model": "bert-cat", "nDCG@10": 0.45, "nDCG@10 (all)": 0.4, "nDCG@10 (+BM25)": 0.51,
             "docs/ms": 3.0, "depth": 10},
        ]
    )  # fmt: skip
    significance = pd.DataFrame(
        [
            {"set": "dl19", "depth": depth, "system": system, "significant": system == "tk2" and depth == "all"}
            for depth in ("tuned", "all", "+BM25")
            for system in ("tk2", "bert-cat")
        ]
    )
    assert table2_reading(table, significance, ["tk2", "bert-cat"], ["dl19"]) == (
        "**DL19** (BM25 nDCG@10 0.500): re-ranking all candidates, 1 of 2 models score above BM25 (TK-2), "
        "significantly after correction: TK-2; at the tuned depths, 1 of 2 models score above BM25 (TK-2), "
        "none significantly; interpolated with BM25, 2 of 2 models score above BM25 (TK-2, BERT-cat), none "
        "significantly. The best model re-ranking all candidates is TK-2 (nDCG@10 0.600). TK-2 scores 10.0× as "
        "many documents per millisecond as BERT-cat. Tuned depths: TK-2 50, BERT-cat 10."
    )


def test_the_embedding_rate_names_the_profiles_rate_or_the_papers() -> None:
    book = get_profile("book").training
    assert embedding_rate(book).startswith(f"{book.word_learning_rate:g}, the profile's one rate")
    assert (
        embedding_rate(get_profile("paper").training)
        == "the paper's 0.0001 for embeddings and contextualisation (§4.3)"
    )
