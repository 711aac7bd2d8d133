"""A storable model served with its query side in bfloat16 (``lib.models.query_precision``)."""

from __future__ import annotations

import pytest
import torch

from lib.models.knrm import KNRM
from lib.models.query_precision import QueryInBFloat16
from lib.representations.text import DOC_MAX_LENGTH, QUERY_MAX_LENGTH
from tests.reranking.test_passage_index import TEXTS, tk_and_words

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_only_the_query_side_runs_in_bfloat16_and_its_vectors_stay_close() -> None:
    model, words = tk_and_words(TEXTS)
    served = QueryInBFloat16(model)
    assert all(p.dtype == torch.bfloat16 for p in served.query_model.parameters())
    assert all(p.dtype == torch.float32 for p in model.parameters()), "the original model is left as it was"
    query = words.encode(["define androgen receptor"], QUERY_MAX_LENGTH)
    docs = words.encode(list(TEXTS.values()), DOC_MAX_LENGTH)
    with torch.no_grad():
        half, half_mask = served.encode_query(*query)
        full, full_mask = model.encode_query(*query)
        assert half.dtype == torch.float32 and torch.equal(half_mask, full_mask)
        assert not torch.equal(half, full), "the query side is another precision's"
        cosines = torch.nn.functional.cosine_similarity(half[full_mask], full[full_mask], dim=-1)
        assert float(cosines.min()) > 0.99
        passages = served.encode_passages(*docs)
        expected = model.encode_passages(*docs)
        assert all(torch.equal(a, b) for a, b in zip(passages, expected, strict=True)), "index time stays float32"
        scored = served.score_stored(full, full_mask, *passages)
        assert torch.equal(scored, model.score_stored(full, full_mask, *passages))


def test_a_model_that_cannot_store_passages_is_refused() -> None:
    _, words = tk_and_words(TEXTS)
    with pytest.raises(TypeError, match="KNRM cannot store passages: it has no encode_passages"):
        QueryInBFloat16(KNRM(torch.randn(len(words), 8)))
