"""Latency and storage with pre-computed passages (``lib.evaluation.stored_latency``)."""

from __future__ import annotations

import pytest
import torch

from lib.evaluation.stored_latency import (
    is_precomputable,
    measure_stored_latency,
    store_passages,
)
from lib.models.knrm import KNRM
from lib.models.tk import TK, TKConfig

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def tk() -> TK:
    torch.manual_seed(0)
    return TK(torch.randn(100, 8), config=TKConfig(num_layers=1, num_heads=2, head_dim=4, ff_dim=8)).eval()


def tensors(count: int = 7):
    generator = torch.Generator().manual_seed(1)
    doc_ids = torch.randint(2, 100, (count, 10), generator=generator)
    doc_mask = torch.arange(10).unsqueeze(0) < torch.randint(3, 11, (count, 1), generator=generator)
    query_ids = torch.randint(2, 100, (1, 4), generator=generator).expand(count, -1)
    return query_ids, torch.ones(count, 4, dtype=torch.bool), doc_ids * doc_mask, doc_mask


def test_stored_passages_are_padded_batches_of_encode_passages() -> None:
    model = tk()
    _, _, doc_ids, doc_mask = tensors()
    vectors, mask = store_passages(model, doc_ids, doc_mask, batch_size=3)
    with torch.no_grad():
        direct, direct_mask = model.encode_passages(doc_ids, doc_mask)
    assert torch.equal(mask[:, : direct_mask.shape[1]], direct_mask)
    assert torch.allclose(vectors[:, : direct.shape[1]], direct, atol=1e-6)


def test_stored_latency_times_every_candidate_of_the_query() -> None:
    model = tk()
    latency = measure_stored_latency(model, tensors(), batch_size=2, repetitions=2, warmup=0)
    assert latency.candidates == 7 and latency.measured and latency.milliseconds > 0
    assert latency.batch_size == 2


def test_a_model_without_a_passage_side_is_refused() -> None:
    knrm = KNRM(torch.randn(100, 8))
    assert not is_precomputable(knrm) and is_precomputable(tk())
    with pytest.raises(TypeError, match="cannot be stored"):
        store_passages(knrm, *tensors()[2:])
