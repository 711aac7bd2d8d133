"""Query latency, whole and with the passage side stored (``lib.evaluation.query_latency``)."""

from __future__ import annotations

import pytest
import torch

from lib.evaluation import query_latency
from lib.models.tk import TKConfig
from lib.models.tk_sparse import TKSparse
from lib.representations.text import Vocabulary

pytestmark = pytest.mark.usefixtures("one_torch_thread")

#: A one-layer TK small enough for these tests.
TINY_TK = TKConfig(num_layers=1, num_heads=2, head_dim=4, ff_dim=8)


def test_latencies_time_both_modes_for_a_model_with_a_passage_side() -> None:
    vocabulary = Vocabulary.build(["the cat sat on the mat", "a dog ran in the park", "cats and dogs"], min_count=1)
    torch.manual_seed(0)
    model = TKSparse(torch.randn(len(vocabulary), 8), config=TINY_TK).eval()
    run = {"q1": {"p1": 3.0, "p2": 2.0}}
    texts = {"p1": "the cat sat on the mat", "p2": "a dog ran in the park"}
    frame = query_latency.latencies(model, vocabulary, run, {"q1": "cat mat"}, texts, [2, 5], ["q1"], 4, 1)
    assert sorted(zip(frame["candidates"], frame["mode"], strict=True)) == [
        (2, "passages stored"), (2, "whole at query time"), (5, "passages stored"), (5, "whole at query time"),
    ]  # fmt: skip
    assert (frame["ms"] > 0).all()


def test_latencies_warm_up_once_per_count_and_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    vocabulary = Vocabulary.build(["the cat sat on the mat", "a dog ran in the park"], min_count=1)
    torch.manual_seed(0)
    model = TKSparse(torch.randn(len(vocabulary), 8), config=TINY_TK).eval()
    warmups: list[tuple[str, int]] = []
    real_whole, real_stored = query_latency.measure_latency, query_latency.measure_stored_latency

    def whole(*args, **kwargs):
        warmups.append(("whole", args[4]))
        return real_whole(*args, **kwargs)

    def stored(*args, **kwargs):
        warmups.append(("stored", args[4]))
        return real_stored(*args, **kwargs)

    monkeypatch.setattr(query_latency, "measure_latency", whole)
    monkeypatch.setattr(query_latency, "measure_stored_latency", stored)
    run = {"q1": {"p1": 3.0, "p2": 2.0}, "q2": {"p2": 1.0}, "q3": {"p1": 1.0}}
    texts = {"p1": "the cat sat on the mat", "p2": "a dog ran in the park"}
    queries = {"q1": "cat mat", "q2": "dog park", "q3": "cat"}
    query_latency.latencies(model, vocabulary, run, queries, texts, [2, 4], ["q1", "q2", "q3"], 4, 2)
    assert warmups == [("whole", 1), ("stored", 1), ("whole", 0), ("stored", 0), ("whole", 0), ("stored", 0)] * 2
