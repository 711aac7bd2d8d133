"""Pseudo-queries cut from passages: spans inside one sentence, seeded, on real book passages."""

from __future__ import annotations

import random

import pytest

from lib.data import load_collection
from lib.data.pseudo_queries import PSEUDO_PREFIX, pseudo_queries, span_query
from lib.data.splits import without_test_queries


def test_a_span_stays_inside_one_sentence_and_loses_its_edge_punctuation() -> None:
    text = "Short one. The quick brown fox jumps over the lazy dog, again! Tiny."
    for seed in range(50):
        query = span_query(text, 3, 5, random.Random(seed))
        assert query is not None and 3 <= len(query.split()) <= 5
        assert query in "The quick brown fox jumps over the lazy dog, again".replace(",", "")
        assert not query.endswith((",", "!", "."))


def test_no_sentence_long_enough_gives_none() -> None:
    assert span_query("Too short. Also.", 3, 8, random.Random(0)) is None


def test_pseudo_queries_are_seeded_one_per_passage_and_skip_short_passages() -> None:
    corpus = {"1": "a b c d e f g h i j", "2": "tiny", "3": "one two three four five six", "4": "x y z w v"}
    first = pseudo_queries(corpus, 3, seed=5)
    assert first == pseudo_queries(corpus, 3, seed=5)
    assert set(first) == {PSEUDO_PREFIX + pid for pid in ("1", "3", "4")}
    for qid, query in first.items():
        assert query in corpus[qid.removeprefix(PSEUDO_PREFIX)]
    assert len(pseudo_queries(corpus, 10, seed=5)) == 3, "the corpus runs out"


def test_bad_counts_and_spans_are_named() -> None:
    with pytest.raises(ValueError, match="count"):
        pseudo_queries({"1": "a b c"}, -1, seed=0)
    with pytest.raises(ValueError, match="shortest"):
        pseudo_queries({"1": "a b c"}, 1, seed=0, shortest=4, longest=3)


@pytest.mark.usefixtures("converted")
def test_on_real_book_passages_queries_are_short_spans_of_their_passage() -> None:
    corpus = load_collection("v1")
    queries = pseudo_queries(corpus, 200, seed=42)
    assert len(queries) == 200
    lengths = [len(q.split()) for q in queries.values()]
    assert min(lengths) >= 1 and max(lengths) <= 8 and 3 <= sum(lengths) / len(lengths) <= 8
    for qid, query in queries.items():
        assert query.split()[0] in corpus[qid.removeprefix(PSEUDO_PREFIX)]


def test_a_pseudo_query_with_a_test_querys_words_is_dropped() -> None:
    tests = {"dl19": {"1": "What is a Lobster?"}}
    kept = without_test_queries({"pseudo-9": "what is a lobster", "pseudo-8": "lobster boats", "1": "other"}, tests)
    assert kept == {"pseudo-8": "lobster boats"}
