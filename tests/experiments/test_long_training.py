"""Chapter 9's trained long-document models (``lib.experiments.long_training``): TKL's regions against the relevant
passage and in real documents, IDCM's cascade table and the k validation chooses."""

from __future__ import annotations

import pytest

from lib.core.types import JudgedSet
from lib.data.assembled_documents import AssembledSet, Layout
from lib.experiments.long_training import cascade_effectiveness, choose_k, region_positions, tkl_regions
from tests.models.test_tkl import make_model as tiny_tkl
from tests.training.test_pairwise import HashTokenizer

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TEXTS = {"a": "apple banana " * 40, "b": "cherry date " * 40, "r": "kernel pooling rank " * 30}
QUERIES = {"q": "kernel pooling"}


def test_choose_k_takes_the_smallest_within_the_tolerance_of_the_full_cascade() -> None:
    assert choose_k({None: 0.50, 1: 0.45, 2: 0.495, 4: 0.51}) == 2
    assert choose_k({None: 0.50, 1: 0.45, 2: 0.48}) is None  # none is close enough: every window
    assert choose_k({None: 0.50, 1: 0.49}, tolerance=0.0) is None


def test_the_cascade_table_has_a_row_per_k_and_a_column_per_set() -> None:
    qrels = {"q": {"good": 1, "bad": 0}}
    right, wrong = {"q": {"good": 2.0, "bad": 1.0}}, {"q": {"bad": 2.0, "good": 1.0}}
    judged = {"validation": JudgedSet("v", QUERIES, qrels, right), "dl19": JudgedSet("d", QUERIES, qrels, right)}
    table = cascade_effectiveness({(1, "validation"): wrong, (None, "validation"): right, (1, "dl19"): right,
                                   (None, "dl19"): right}, judged)  # fmt: skip
    assert list(table.index) == [1, None] and list(table.columns) == ["validation", "dl19"]
    assert table.loc[None, "validation"] == 1.0 and table.loc[1, "validation"] < 1.0


def test_tkl_regions_are_read_against_the_relevant_passage_and_its_chance() -> None:
    document = " ".join(TEXTS[pid] for pid in ("a", "r", "b"))
    assembled = AssembledSet(documents={"q-0": document}, qrels={"q": {"q-0": 2}}, run={"q": {"q-0": 1.0}},
                             layouts={"q-0": Layout("q", ("a", "r", "b"), 1, 2)})  # fmt: skip
    judged = JudgedSet("dl19-assembled", QUERIES, assembled.qrels, assembled.run)
    regions = tkl_regions(tiny_tkl(), HashTokenizer(vocab=40), judged, assembled, TEXTS, max_pieces=400)
    (row,) = regions.to_dict("records")
    assert (row["tokens"], row["relevant_start"], row["relevant_end"]) == (250, 80, 170)  # 80, 90 and 80 words
    assert 0 <= row["region_start"] < row["region_end"] <= 250 and 0 < row["chance"] < 1
    assert row["covers"] == (row["region_start"] < 170 and 80 < row["region_end"])
    width = row["region_end"] - row["region_start"]  # the starts of a region that overlap 90 tokens, over all starts
    assert row["chance"] == pytest.approx((90 + width - 1) / (250 - width + 1))


def test_region_positions_cover_the_relevant_candidates_only_best_first() -> None:
    documents = {"d1": TEXTS["a"] + TEXTS["r"], "d2": TEXTS["b"], "d3": "kernel"}
    judged = JudgedSet("time", QUERIES, {"q": {"d1": 1, "d3": 1, "d2": 0}}, {"q": {"d1": 3.0, "d2": 2.0, "d3": 1.0}})
    positions = region_positions(tiny_tkl(), HashTokenizer(vocab=40), judged, documents, max_pieces=400)
    assert set(positions["docid"]) == {"d1", "d3"}  # d2 is not relevant
    long = positions[positions["docid"] == "d1"]
    assert list(long["rank"]) == [1, 2, 3] and (long["tokens"] == 170).all()
    assert ((long["position"] > 0) & (long["position"] < 1)).all() and (long["end"] <= 170).all()
    assert list(positions[positions["docid"] == "d3"]["rank"]) == [1]  # one word: one region
