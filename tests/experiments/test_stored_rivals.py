"""The stored regime's budget curves with every stored rival (``lib.experiments.stored_rivals``)."""

from __future__ import annotations

import pandas as pd
import pytest

from lib.evaluation.time_budget import budget_grid
from lib.experiments.stored_rivals import crossing_reading, crossing_tests, stored_frame

#: TK stored: 1 ms a query and 10 candidates a ms; ColBERT stored: 2 ms and 5 a ms; BERT-cat runs whole, 1 a ms.
TABLE = pd.DataFrame([
    {"model": "tk", "regime": "stored", "dtype": "int8", "ms_10": 2.0, "ms_100": 11.0},
    {"model": "colbert", "regime": "stored", "dtype": "int8", "ms_10": 4.0, "ms_100": 22.0},
    {"model": "bert-cat", "regime": "whole", "dtype": "—", "ms_10": 10.0, "ms_100": 100.0},
])  # fmt: skip
QIDS = [f"q{i}" for i in range(12)]
#: Five candidates a query, BM25's order p0 … p4; p4 is the one relevant passage, so re-ranking it up is the gain.
FIRST_STAGE = {qid: {f"{qid}-p{k}": 5.0 - k for k in range(5)} for qid in QIDS}
QRELS = {qid: {f"{qid}-p4": 2} for qid in QIDS}


def runs() -> dict[str, dict[str, dict[str, float]]]:
    """TK finds the relevant passage in every query; ColBERT in the first half only; BERT-cat in every query."""
    good = {qid: {pid: (10.0 if pid.endswith("p4") else -float(pid[-1])) for pid in FIRST_STAGE[qid]} for qid in QIDS}
    half = {qid: good[qid] if i < 6 else {pid: -float(pid[-1]) for pid in FIRST_STAGE[qid]} for i, qid in
            enumerate(QIDS)}  # fmt: skip
    return {"tk": good, "colbert": half, "bert-cat": good}


def test_each_model_is_drawn_at_its_stored_cost_and_bm25_never_reranks() -> None:
    frame = stored_frame(TABLE, runs(), FIRST_STAGE, QRELS, [10, 100])
    assert set(frame["model"]) == {"tk", "colbert", "bert-cat", "bm25"}
    tk = frame[frame["model"] == "tk"].set_index("budget_ms")
    assert tk.loc[1.5, "depth"] == 5 and tk.loc[1.0, "depth"] == 0, "1 ms fixed, then 10 candidates a ms"
    assert (frame[frame["model"] == "bm25"]["depth"] == 0).all()
    best = frame[frame["budget_ms"] == frame["budget_ms"].max()].set_index("model")["nDCG@10"]
    assert best["tk"] == pytest.approx(1.0) and best["colbert"] < best["tk"] and best["bm25"] < best["colbert"]
    with pytest.raises(KeyError, match="no row for prettr"):
        stored_frame(TABLE, {**runs(), "prettr": runs()["tk"]}, FIRST_STAGE, QRELS, [10, 100])


def test_the_crossings_are_tested_by_budget_and_read_with_their_significance() -> None:
    frame = stored_frame(TABLE, runs(), FIRST_STAGE, QRELS, [10, 100])
    grid = budget_grid(frame["budget_ms"].max())
    assert grid[:3] == [1.0, 2.0, 5.0] and grid[-1] <= 2 * frame["budget_ms"].max()
    tests = crossing_tests(TABLE, runs(), FIRST_STAGE, QRELS, [10, 100], ("tk", "colbert"), grid)
    assert tests["budget_ms"].tolist() == grid and (tests["model"] == "tk").all()
    at_five = tests.set_index("budget_ms").loc[5.0]
    assert at_five["model depth"] == 5 and at_five["delta"] > 0 and at_five["significant"]
    text = crossing_reading(tests, {"tk": "TK", "colbert": "ColBERT"})
    assert text.startswith("TK against ColBERT, stored, by budget — 1 ms: neither re-ranks (both are BM25); ")
    assert "TK is ahead" in text and text.endswith(".")
    assert crossing_reading(tests.iloc[0:0], {}) == "No budget was tested."
