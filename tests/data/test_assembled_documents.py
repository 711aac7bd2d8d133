"""Assembled documents (``lib.data.assembled_documents``): the relevant passage where recorded, filler that is never
relevant and from one mixture for both kinds of document, lengths as drawn, seeded; the position sweep; on a real
DL19 slice with TIME's lengths."""

from __future__ import annotations

import statistics

import pytest

from lib import data
from lib.core.types import query_order
from lib.data.assembled_documents import END, AssembledSet, assemble, own_shares, position_sweep
from lib.data.time_collection import load_time

TEXTS = {f"p{i}": " ".join(["w"] * (10 + i % 7)) for i in range(200)}
RELEVANT = {"q1": {"p0": 3, "p1": 2}, "q2": {"p2": 2}, "q3": {}}
NEGATIVES = {"q1": [f"p{i}" for i in range(3, 23)] + ["p0"], "q2": ["p23", "p24", "p25"]}
POOL = [f"p{i}" for i in range(26, 200)] + ["p1", "p5"]  # p1 is relevant to q1, p5 its own: never its pool filler
OWN = {qid: set(RELEVANT.get(qid, {})) | set(NEGATIVES.get(qid, ())) for qid in ("q1", "q2")}


def test_documents_hold_their_relevant_passage_where_recorded_and_nothing_relevant_elsewhere() -> None:
    assembled = assemble(RELEVANT, NEGATIVES, POOL, TEXTS, [60, 90], seed=1, counts=(2, 3, 2))
    assert set(assembled.qrels) == {"q1", "q2"}  # q3 has no relevant passage
    assert len(assembled.qrels["q1"]) == 5 and len(assembled.qrels["q2"]) == 4
    for docid, layout in assembled.layouts.items():
        assert assembled.documents[docid] == " ".join(TEXTS[pid] for pid in layout.passages)
        assert not set(layout.filler()) & set(RELEVANT[layout.qid]) and len(set(layout.passages)) == len(
            layout.passages
        )
        if layout.relevant_at is not None:
            assert layout.passages[layout.relevant_at] in RELEVANT[layout.qid]
            assert assembled.qrels[layout.qid][docid] == RELEVANT[layout.qid][layout.passages[layout.relevant_at]]
        else:
            assert assembled.qrels[layout.qid][docid] == 0 and layout.filler() == layout.passages
        assert sum(len(TEXTS[pid].split()) for pid in layout.passages) >= 60
    scores = assembled.run["q1"]
    assert sorted(scores.values(), reverse=True) == list(scores.values())
    again = assemble(RELEVANT, NEGATIVES, POOL, TEXTS, [60, 90], seed=1, counts=(2, 3, 2))
    assert again == assembled
    assert assemble(RELEVANT, NEGATIVES, POOL, TEXTS, [60, 90], seed=2, counts=(2, 3, 2)).layouts != assembled.layouts


def test_every_document_of_a_query_holds_the_same_number_of_its_own_passages() -> None:
    assembled = assemble(RELEVANT, NEGATIVES, POOL, TEXTS, [60, 90], seed=1, counts=(2, 3, 2), exclude=OWN)
    for qid, expected in (("q1", 2), ("q2", 0)):  # q2 has 3 own passages for 4 documents: none in any
        counts = [sum(pid in OWN[qid] for pid in layout.filler()) for layout in assembled.layouts.values()
                  if layout.qid == qid]  # fmt: skip
        assert counts == [expected] * len(counts)  # the pool never adds one of the query's own
    parts = (assembled.documents, assembled.qrels, assembled.run, assembled.layouts)
    q1 = AssembledSet(*({key: value for key, value in part.items() if key.startswith("q1")} for part in parts))
    shares = own_shares(q1, OWN)
    assert shares["relevant"]["own passages"] == shares["non-relevant"]["own passages"] == 2
    assert shares["relevant"]["documents"] == 2 and shares["non-relevant"]["documents"] == 3


def test_the_share_measure_fails_a_design_that_fills_relevant_documents_with_the_querys_own_passages() -> None:
    given_away = assemble(RELEVANT, NEGATIVES, POOL, TEXTS, [60, 90], seed=1, counts=(2, 3, 2), exclude=OWN)
    for docid, layout in list(given_away.layouts.items()):  # the earlier design: own passages in relevant ones only
        if layout.qid == "q1" and layout.relevant_at is None:
            kept = tuple(pid for pid in layout.passages if pid not in OWN["q1"])
            given_away.layouts[docid] = type(layout)(layout.qid, kept, None, 0)
    shares = own_shares(given_away, OWN)
    assert shares["relevant"]["own share"] > shares["non-relevant"]["own share"] + 0.1


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="lengths"):
        assemble(RELEVANT, NEGATIVES, POOL, TEXTS, [], seed=1)
    with pytest.raises(ValueError, match="others_per_query"):
        assemble(RELEVANT, NEGATIVES, POOL, TEXTS, [50], seed=1, counts=(1, 0, 2))
    with pytest.raises(KeyError, match="no text"):
        assemble(RELEVANT, NEGATIVES, [*POOL, "missing"], TEXTS, [50], seed=1)


def test_the_sweep_moves_one_relevant_passage_through_one_fixed_filler() -> None:
    assembled = assemble(RELEVANT, NEGATIVES, POOL, TEXTS, [60, 90], seed=1, counts=(2, 3, 2), exclude=OWN)
    pieces = lambda pid: len(TEXTS[pid].split())  # noqa: E731 - one piece a word here
    documents, variants = position_sweep(assembled, POOL, TEXTS, pieces, ([0, 100, 200], 400), seed=3, exclude=OWN)
    assert set(documents) == {f"{q}-at-{t}" for q in ("q1", "q2") for t in ("0", "100", "200", "end")}
    for qid in ("q1", "q2"):
        mine = [variants[f"{qid}-at-{t}"] for t in ("0", "100", "200", "end")]
        assert len({variant.layout.filler() for variant in mine}) == 1  # one filler, the relevant passage moved
        filler = mine[0].layout.filler()
        assert sum(map(pieces, filler)) >= 400
        relevant = {variant.layout.passages[variant.layout.relevant_at] for variant in mine}
        assert len(relevant) == 1 and relevant <= set(RELEVANT[qid])
        for variant in mine:
            before = variant.layout.passages[: variant.layout.relevant_at]
            assert variant.offset == sum(map(pieces, before))
            if variant.target != END:  # the boundary nearest the target: off by less than the longest passage
                assert abs(variant.offset - variant.target) <= max(map(pieces, filler)) / 2
        assert mine[-1].target == END and mine[-1].offset >= 400 and mine[0].offset == 0
    first_relevant = next(layout for layout in assembled.layouts.values() if layout.qid == "q1" and layout.grade == 3)
    q1_filler = set(variants["q1-at-0"].layout.filler())
    assert set(first_relevant.filler()) <= q1_filler  # the highest-graded document's filler, extended
    assert sum(pid in OWN["q1"] for pid in q1_filler) == 2  # the mixture kept: as many own passages as every document
    with pytest.raises(ValueError, match="below the document"):
        position_sweep(assembled, POOL, TEXTS, pieces, ([0, 400], 400), seed=3)


def test_real_dl19_documents_with_times_lengths(converted) -> None:
    qrels, run, texts = data.load_qrels("dl19"), data.load_run("dl19", "bm25"), data.load_collection("v1")
    lengths = [len(text.split()) for text in load_time().documents.values()]
    qids = sorted(qrels, key=query_order)[:6]
    relevant = {q: {p: g for p, g in qrels[q].items() if g >= 2 and p in texts} for q in qids}
    negatives = {q: [p for p, g in qrels[q].items() if g == 0 and p in texts] for q in qids}
    own = {q: set(run.get(q, {})) | set(qrels[q]) for q in qids}
    pool = sorted({p for q in run for p in run[q] if p in texts})
    assembled = assemble(relevant, negatives, pool, texts, lengths, seed=0, counts=(3, 12, 2), exclude=own)
    words = [len(text.split()) for text in assembled.documents.values()]
    assert statistics.median(words) > 300 and len(assembled.qrels) == 6
    positions = [layout.relevant_at / max(len(layout.passages) - 1, 1) for layout in assembled.layouts.values()
                 if layout.relevant_at is not None]  # fmt: skip
    assert len(positions) == 18 and min(positions) < 0.34 and max(positions) > 0.66  # relevance early and late
    shares = own_shares(assembled, own)
    assert shares["relevant"]["own passages"] == pytest.approx(shares["non-relevant"]["own passages"])
    assert shares["relevant"]["own passages"] >= 1
    # both kinds drawn to the same lengths: the same share of their passages, but for chance
    assert abs(shares["relevant"]["own share"] - shares["non-relevant"]["own share"]) < 0.05
