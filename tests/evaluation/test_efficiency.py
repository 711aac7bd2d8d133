"""The timing harness runs on CPU and reports positive, finite numbers (no speed assertions), on real-shaped inputs."""

from __future__ import annotations

import math

import pytest
import torch

from lib.evaluation.efficiency import (
    candidate_pairs,
    encode_pairs,
    estimated_latency,
    measure_latency,
    measure_throughput,
    score_batches,
    scoring_batches,
    spread_batches,
)
from lib.representations.text import DOC_MAX_LENGTH, QUERY_MAX_LENGTH, Vocabulary


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


def _ragged_inputs(rows: int):
    """Rows of different true lengths, padded to the longest (as a tokenizer pads a list of pairs)."""
    generator = torch.Generator().manual_seed(1)
    query_lengths = torch.randint(1, 6, (rows,), generator=generator)
    doc_lengths = torch.randint(1, 21, (rows,), generator=generator)
    query_mask = torch.arange(6)[None, :] < query_lengths[:, None]
    doc_mask = torch.arange(21)[None, :] < doc_lengths[:, None]
    query_ids = torch.randint(1, 50, (rows, 6), generator=generator) * query_mask
    doc_ids = torch.randint(1, 50, (rows, 21), generator=generator) * doc_mask
    return query_ids, query_mask, doc_ids, doc_mask


def test_bucketed_batches_are_cut_to_their_longest_and_give_the_rank_order_scores():
    from lib.models.tk import TK, TKConfig

    tensors = _ragged_inputs(29)
    bucketed = scoring_batches(tensors, batch_size=8, bucketed=True)
    rank_order = scoring_batches(tensors, batch_size=8, bucketed=False)
    assert sorted(torch.cat([rows for rows, _ in bucketed]).tolist()) == list(range(29))
    assert [rows.tolist() for rows, _ in rank_order] == [list(range(i, min(i + 8, 29))) for i in range(0, 29, 8)]
    for rows, (query_ids, _, doc_ids, doc_mask) in bucketed:
        assert doc_ids.shape[1] == int(tensors[3][rows].sum(1).max()) == int(doc_mask.sum(1).max())
        assert query_ids.shape[1] == int(tensors[1][rows].sum(1).max())
    lengths = [int(batch[3].sum(1).max()) for _, batch in bucketed]
    assert lengths == sorted(lengths) and lengths[0] < 21
    assert all(batch[2].shape[1] == 21 for _, batch in rank_order)
    torch.manual_seed(0)
    embeddings = torch.randn(50, 8)
    embeddings[0] = 0
    model = TK(embeddings, config=TKConfig(num_heads=2, head_dim=4, ff_dim=8)).eval()
    scores = score_batches(model, bucketed)
    assert torch.allclose(scores, score_batches(model, rank_order), rtol=1e-5, atol=1e-6)
    with torch.no_grad():
        assert torch.allclose(scores, model(*tensors), rtol=1e-5, atol=1e-6)


def test_spread_batches_sample_the_whole_length_range_and_throughput_counts_the_sampled_rows():
    tensors = _ragged_inputs(80)
    batches = scoring_batches(tensors, batch_size=8)  # 10 batches, sorted by passage length
    sample = spread_batches(batches, 20)  # 3 whole batches: the 2nd, 5th and 8th (start, middle, end)
    assert [rows.tolist() for rows, _ in sample] == [batches[i][0].tolist() for i in (1, 5, 8)]
    assert spread_batches(batches, 10_000) == batches
    with pytest.raises(ValueError, match="documents"):
        spread_batches(batches, 0)
    model = CountingScorer()
    result = measure_throughput(model, tensors, batch_size=8, repetitions=1, warmup=0, documents=20)
    assert (result.documents, result.sampled_from, model.seen) == (24, 80, 24)
    rows = torch.cat([rows for rows, _ in sample]).sort().values
    with torch.no_grad():
        assert torch.allclose(score_batches(model, sample), model(*(tensor[rows] for tensor in tensors)))


def test_throughput_is_positive_and_finite_and_scores_every_document_per_pass():
    model = CountingScorer()
    result = measure_throughput(model, _inputs(37), batch_size=8, repetitions=3, warmup=1)
    assert result.docs_per_ms > 0 and math.isfinite(result.docs_per_ms)
    assert result.milliseconds_per_batch > 0
    assert result.documents == 37 and result.batch_size == 8 and result.repetitions == 3
    assert model.seen == 37 * (3 + 1), "warm-up plus every repetition scores all documents once"
    assert "CPU" in result.device and result.dtype == "float32"
    assert set(result.as_dict()) >= {"docs_per_ms", "device", "dtype", "torch_version", "batch_size"}


def test_autocast_dtype_is_recorded():
    result = measure_throughput(CountingScorer(), _inputs(4), batch_size=4, repetitions=1, dtype=torch.bfloat16)
    assert result.dtype == "bfloat16"


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError, match="batch_size"):
        measure_throughput(CountingScorer(), _inputs(4), batch_size=0)


def test_latency_scores_every_candidate_and_is_positive() -> None:
    model = CountingScorer()
    latency = measure_latency(model, _inputs(23), batch_size=10, repetitions=2, warmup=1, repeated=True)
    assert model.seen == 23 * 3
    assert latency.candidates == 23 and latency.measured and latency.repeated
    assert latency.milliseconds > 0 and math.isfinite(latency.milliseconds)
    with pytest.raises(ValueError, match="batch_size"):
        measure_latency(model, _inputs(3), batch_size=0)


def test_estimated_latency_is_candidates_over_throughput() -> None:
    throughput = measure_throughput(CountingScorer(), _inputs(8), batch_size=8, repetitions=1)
    latency = estimated_latency(1000, throughput)
    assert not latency.measured
    assert latency.milliseconds == pytest.approx(1000 / throughput.docs_per_ms)


RUN = {"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"d": 5.0, "e": 4.0}}
QUERIES = {"q1": "first query", "q2": "second query"}
TEXTS = {"a": "A", "b": "B", "c": "C", "d": "D", "e": "E"}


def test_candidate_pairs_follow_rank_order_and_repeat_when_short() -> None:
    pairs, repeated = candidate_pairs(RUN, QUERIES, TEXTS, 4)
    assert pairs == [("first query", "A"), ("first query", "B"), ("first query", "C"), ("second query", "D")]
    assert not repeated
    pairs, repeated = candidate_pairs(RUN, QUERIES, TEXTS, 5, qid="q2")
    assert [doc for _, doc in pairs] == ["D", "E", "D", "E", "D"] and repeated


def test_candidate_pairs_name_what_is_missing() -> None:
    with pytest.raises(KeyError, match="'x'"):
        candidate_pairs({"q1": {"x": 1.0}}, QUERIES, TEXTS, 1)
    with pytest.raises(KeyError, match="'q9'"):
        candidate_pairs(RUN, QUERIES, TEXTS, 1, qid="q9")
    with pytest.raises(ValueError, match="count"):
        candidate_pairs(RUN, QUERIES, TEXTS, 0)


def test_encode_pairs_applies_the_caps() -> None:
    vocabulary = Vocabulary(["[PAD]", "[UNK]", "first", "query", "long"])
    pairs = [("first query " * 40, "long " * 500)]
    query_ids, query_mask, doc_ids, doc_mask = encode_pairs(vocabulary, pairs)
    assert query_ids.shape == (1, QUERY_MAX_LENGTH) and doc_ids.shape == (1, DOC_MAX_LENGTH)
    assert bool(query_mask.all()) and bool(doc_mask.all())
