"""Mono-duo re-ranking (``lib.reranking.mono_duo``): pair probabilities, SUM, the re-ordered top k, real passages."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from lib import data
from lib.core.types import ranking_from_run
from lib.reranking.mono_duo import duo_order, duo_rerank, pair_probabilities, sum_aggregate
from lib.reranking.scoring import ScoringOptions


class LengthTokenizer:
    """One id per word (the word's length), so a passage's token count is its number of words."""

    def encode(self, texts, max_length):
        rows = [[len(word) for word in text.split()][:max_length] for text in texts]
        tensor = torch.zeros((len(rows), max(1, max(map(len, rows)))), dtype=torch.long)
        for index, row in enumerate(rows):
            tensor[index, : len(row)] = torch.tensor(row)
        return tensor, tensor != 0


class LongerWins(nn.Module):
    """A duo stand-in: the logit is the first passage's word count minus the second's."""

    def __init__(self) -> None:
        super().__init__()
        self.anchor = nn.Parameter(torch.zeros(()))
        self.calls = 0

    def forward(self, query_ids, query_mask, a_ids, a_mask, b_ids, b_mask):
        self.calls += 1
        return a_mask.sum(1).float() - b_mask.sum(1).float() + self.anchor


def test_probabilities_cover_every_ordered_pair_once() -> None:
    model = LongerWins()
    probabilities = pair_probabilities(
        model, LengthTokenizer(), "q", ["a", "a b c", "a b"], ScoringOptions(batch_size=4), torch.device("cpu")
    )
    assert np.isnan(np.diag(probabilities)).all() and model.calls == 2  # 6 pairs, 4 per pass
    assert probabilities[1, 0] == pytest.approx(1 / (1 + np.exp(-2))) and probabilities[0, 1] < 0.5
    off_diagonal = ~np.eye(3, dtype=bool)
    assert np.allclose((probabilities + probabilities.T)[off_diagonal], 1)
    assert sum_aggregate(probabilities).argmax() == 1


def test_the_top_k_is_reordered_by_the_sum_and_the_rest_keeps_monos_order() -> None:
    assert duo_order(["a", "b", "c", "d"], [0.5, 1.5, 0.5]) == ["b", "a", "c", "d"]  # a before c: mono's tie order
    texts = {"p1": "x", "p2": "x x x", "p3": "x x", "p4": "x x x x x"}
    mono = {"q": {"p1": 4.0, "p2": 3.0, "p3": 2.0, "p4": 1.0}}
    reranked, seconds = duo_rerank(LongerWins(), LengthTokenizer(), {"q": "q"}, texts, mono, top_k=3)
    assert ranking_from_run(reranked["q"]) == ["p2", "p3", "p1", "p4"]  # p4 is longest but below the top 3
    assert seconds["q"] >= 0
    with pytest.raises(ValueError, match="top_k"):
        duo_rerank(LongerWins(), LengthTokenizer(), {"q": "q"}, texts, mono, top_k=1)


def test_on_real_dl19_candidates_only_the_top_k_move() -> None:
    try:
        queries, run, texts = data.load_queries("dl19"), data.load_run("dl19", "bm25"), data.load_collection("v1")
    except FileNotFoundError as error:
        pytest.skip(f"converted data missing: {error}")
    qid = sorted(run)[0]
    mono = {qid: {pid: run[qid][pid] for pid in ranking_from_run(run[qid])[:12]}}
    reranked, _ = duo_rerank(LongerWins(), LengthTokenizer(), queries, texts, mono, top_k=5)
    before, after = ranking_from_run(mono[qid]), ranking_from_run(reranked[qid])
    assert set(after[:5]) == set(before[:5]) and after[5:] == before[5:]
    lengths = [len(texts[pid].split()) for pid in after[:5]]
    assert lengths == sorted(lengths, reverse=True)
