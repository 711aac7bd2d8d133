"""The throughput harness runs on CPU and reports positive, finite numbers (no speed assertions)."""

from __future__ import annotations

import math

import pytest
import torch

from lib.efficiency import measure_throughput


class CountingScorer(torch.nn.Module):
    """A tiny scorer that counts the documents it sees."""

    def __init__(self) -> None:
        super().__init__()
        self.embedding = torch.nn.Embedding(50, 8, padding_idx=0)
        self.seen = 0

    def forward(self, query_ids, query_mask, doc_ids, doc_mask):
        self.seen += doc_ids.shape[0]
        q = (self.embedding(query_ids) * query_mask.unsqueeze(-1)).sum(1)
        d = (self.embedding(doc_ids) * doc_mask.unsqueeze(-1)).sum(1)
        return (q * d).sum(-1)


def _inputs(rows: int):
    generator = torch.Generator().manual_seed(0)
    query_ids = torch.randint(1, 50, (rows, 5), generator=generator)
    doc_ids = torch.randint(1, 50, (rows, 20), generator=generator)
    return query_ids, query_ids > 0, doc_ids, doc_ids > 0


def test_throughput_is_positive_and_finite_and_scores_every_document_per_pass():
    model = CountingScorer()
    result = measure_throughput(model, *_inputs(37), batch_size=8, repetitions=3, warmup=1)
    assert result.docs_per_ms > 0 and math.isfinite(result.docs_per_ms)
    assert result.milliseconds_per_batch > 0
    assert result.documents == 37 and result.batch_size == 8 and result.repetitions == 3
    assert model.seen == 37 * (3 + 1), "warm-up plus every repetition scores all documents once"
    assert "CPU" in result.device and result.dtype == "float32"
    assert set(result.as_dict()) >= {"docs_per_ms", "device", "dtype", "torch_version", "batch_size"}


def test_autocast_dtype_is_recorded():
    result = measure_throughput(CountingScorer(), *_inputs(4), batch_size=4, repetitions=1, dtype=torch.bfloat16)
    assert result.dtype == "bfloat16"


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError, match="batch_size"):
        measure_throughput(CountingScorer(), *_inputs(4), batch_size=0)
