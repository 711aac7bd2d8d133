"""Assembled documents (``lib.data.assembled_documents``): the relevant passage where recorded, filler that is never
relevant, lengths as drawn, seeded; on a real DL19 slice with TIME's lengths."""

from __future__ import annotations

import statistics

import pytest

from lib import data
from lib.core.types import query_order
from lib.data.assembled_documents import assemble
from lib.data.time_collection import load_time

TEXTS = {f"p{i}": " ".join(["w"] * (10 + i)) for i in range(60)}
RELEVANT = {"q1": {"p0": 3, "p1": 2}, "q2": {"p2": 2}, "q3": {}}
NEGATIVES = {"q1": ["p3", "p4", "p0"], "q2": ["p5"]}
POOL = [f"p{i}" for i in range(6, 60)] + ["p1"]  # p1 is relevant to q1: never its filler


def test_documents_hold_their_relevant_passage_where_recorded_and_nothing_relevant_elsewhere() -> None:
    assembled = assemble(RELEVANT, NEGATIVES, POOL, TEXTS, [60, 90], seed=1, relevant_per_query=2, others_per_query=3)
    assert set(assembled.qrels) == {"q1", "q2"}  # q3 has no relevant passage
    assert len(assembled.qrels["q1"]) == 5 and len(assembled.qrels["q2"]) == 4
    for docid, layout in assembled.layouts.items():
        assert assembled.documents[docid] == " ".join(TEXTS[pid] for pid in layout.passages)
        others = [pid for i, pid in enumerate(layout.passages) if i != layout.relevant_at]
        assert not set(others) & set(RELEVANT[layout.qid]) and len(set(layout.passages)) == len(layout.passages)
        if layout.relevant_at is not None:
            assert layout.passages[layout.relevant_at] in RELEVANT[layout.qid]
            assert assembled.qrels[layout.qid][docid] == RELEVANT[layout.qid][layout.passages[layout.relevant_at]]
            assert 0.0 <= layout.relative_position <= 1.0
        else:
            assert assembled.qrels[layout.qid][docid] == 0 and layout.relative_position is None
        assert sum(len(TEXTS[pid].split()) for pid in layout.passages) >= 60
    own = [pid for docid, layout in assembled.layouts.items() if layout.qid == "q1" for pid in layout.passages]
    assert {"p3", "p4"} <= set(own)  # the query's own non-relevant passages come first
    scores = assembled.run["q1"]
    assert sorted(scores.values(), reverse=True) == list(scores.values())
    again = assemble(RELEVANT, NEGATIVES, POOL, TEXTS, [60, 90], seed=1, relevant_per_query=2, others_per_query=3)
    assert again == assembled
    other_seed = assemble(RELEVANT, NEGATIVES, POOL, TEXTS, [60, 90], seed=2, relevant_per_query=2, others_per_query=3)
    assert other_seed.layouts != assembled.layouts


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="lengths"):
        assemble(RELEVANT, NEGATIVES, POOL, TEXTS, [], seed=1)
    with pytest.raises(ValueError, match="others_per_query"):
        assemble(RELEVANT, NEGATIVES, POOL, TEXTS, [50], seed=1, others_per_query=0)
    with pytest.raises(KeyError, match="no text"):
        assemble(RELEVANT, NEGATIVES, [*POOL, "missing"], TEXTS, [50], seed=1)


def test_real_dl19_documents_with_times_lengths(converted) -> None:
    qrels, run, texts = data.load_qrels("dl19"), data.load_run("dl19", "bm25"), data.load_collection("v1")
    lengths = [len(text.split()) for text in load_time().documents.values()]
    qids = sorted(qrels, key=query_order)[:6]
    relevant = {q: {p: g for p, g in qrels[q].items() if g >= 2 and p in texts} for q in qids}
    negatives = {q: [p for p, g in qrels[q].items() if g == 0 and p in texts] for q in qids}
    pool = sorted({p for q in sorted(run)[10:20] for p in run[q] if p in texts})
    assembled = assemble(relevant, negatives, pool, texts, lengths, seed=0)
    words = [len(text.split()) for text in assembled.documents.values()]
    assert statistics.median(words) > 300 and len(assembled.qrels) == 6
    positions = [layout.relative_position for layout in assembled.layouts.values() if layout.relevant_at is not None]
    assert len(positions) == 18 and min(positions) < 0.34 and max(positions) > 0.66  # relevance early and late
