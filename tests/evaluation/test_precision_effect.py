"""bf16 against float32 on a real slice: score differences, swapped pairs and both re-rankings' nDCG@10."""

from __future__ import annotations

import pytest
import torch

from lib import data
from lib.evaluation.precision_effect import precision_effect, swapped_pairs
from lib.models.tk import TK, TKConfig
from lib.representations.text import Vocabulary


def test_swapped_pairs_by_hand() -> None:
    exact = {"a": 3.0, "b": 2.0, "c": 1.0}
    assert swapped_pairs(exact, {"a": 3.0, "b": 2.0, "c": 1.0}) == (0, 3)
    assert swapped_pairs(exact, {"a": 1.0, "b": 2.0, "c": 0.0}) == (1, 3)  # a and b swap
    assert swapped_pairs(exact, {"a": 2.0, "b": 2.0, "c": 1.0}) == (1, 3)  # a tie that was not one


def test_precision_effect_on_a_slice_of_dl19(converted) -> None:
    run = data.load_run("dl19", "bm25")
    first_stage = {qid: run[qid] for qid in list(run)[:2]}
    texts = data.load_collection("v1")
    queries = data.load_queries("dl19")
    vocabulary = Vocabulary.build([texts[pid] for qid in first_stage for pid in first_stage[qid]])
    torch.manual_seed(0)
    model = TK(torch.randn(len(vocabulary), 16), config=TKConfig(num_heads=2, head_dim=8, ff_dim=16)).eval()
    effect = precision_effect(model, vocabulary, queries, texts, first_stage, data.load_qrels("dl19"), depth=20)
    assert set(effect) == {"max_abs_difference", "mean_abs_difference", "score_range", "swapped_fraction",
                           "nDCG@10 (float32)", "nDCG@10 (bf16)"}  # fmt: skip
    assert 0 < effect["mean_abs_difference"] <= effect["max_abs_difference"] < effect["score_range"]
    assert 0 <= effect["swapped_fraction"] < 0.5
    assert 0 <= effect["nDCG@10 (bf16)"] <= 1 and 0 <= effect["nDCG@10 (float32)"] <= 1
    with pytest.raises(ValueError, match="no candidate"):
        precision_effect(model, vocabulary, queries, texts, first_stage, data.load_qrels("dl19"), depth=0)
