"""A storable model served with its encoders in bfloat16 (``lib.models.bfloat16_encoders``)."""

from __future__ import annotations

import pytest
import torch

from lib.models.bfloat16_encoders import BFloat16Encoders, served_in_bfloat16
from lib.models.knrm import KNRM
from lib.representations.text import DOC_MAX_LENGTH, QUERY_MAX_LENGTH
from tests.reranking.test_passage_index import TEXTS, tk_and_words

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def close(half: tuple[torch.Tensor, torch.Tensor], full: tuple[torch.Tensor, torch.Tensor]) -> float:
    """The smallest cosine between the kept vectors of two encodings that keep the same pieces."""
    assert half[0].dtype == torch.float32 and torch.equal(half[1], full[1])
    kept = full[1].bool()
    return float(torch.nn.functional.cosine_similarity(half[0][kept], full[0][kept], dim=-1).min())


def test_only_the_query_side_runs_in_bfloat16_by_default_and_its_vectors_stay_close() -> None:
    model, words = tk_and_words(TEXTS)
    served = BFloat16Encoders(model)
    assert all(p.dtype == torch.bfloat16 for p in served.half_model.parameters())
    assert all(p.dtype == torch.float32 for p in model.parameters()), "the original model is left as it was"
    query = words.encode(["define androgen receptor"], QUERY_MAX_LENGTH)
    docs = words.encode(list(TEXTS.values()), DOC_MAX_LENGTH)
    with torch.no_grad():
        half, full = served.encode_query(*query), model.encode_query(*query)
        assert not torch.equal(half[0], full[0]), "the query side is another precision's"
        assert close(half, full) > 0.99
        passages = served.encode_passages(*docs)
        expected = model.encode_passages(*docs)
        assert all(torch.equal(a, b) for a, b in zip(passages, expected, strict=True)), "index time stays float32"
        scored = served.score_stored(*full, *passages)
        assert torch.equal(scored, model.score_stored(*full, *passages))
        match = torch.rand(len(TEXTS), full[0].shape[1], passages[0].shape[1])
        masks = full[1].expand(len(TEXTS), -1), passages[1]
        assert served.scores_from_match and torch.equal(
            served.score_match(match, *masks), model.score_match(match, *masks)
        )


def test_the_passage_side_runs_in_bfloat16_when_asked_and_the_interaction_stays_float32() -> None:
    model, words = tk_and_words(TEXTS)
    query = words.encode(["define androgen receptor"], QUERY_MAX_LENGTH)
    docs = words.encode(list(TEXTS.values()), DOC_MAX_LENGTH)
    with torch.no_grad():
        index_only = BFloat16Encoders(model, query=False, passages=True)
        half, full = index_only.encode_passages(*docs), model.encode_passages(*docs)
        assert not torch.equal(half[0], full[0]), "the passage side is another precision's"
        assert close(half, full) > 0.99
        assert all(torch.equal(a, b) for a, b in zip(index_only.encode_query(*query), model.encode_query(*query),
                                                     strict=True)), "the query side stays float32"  # fmt: skip
        both = BFloat16Encoders(model, passages=True)
        query_vectors = both.encode_query(*query)
        assert torch.equal(both.score_stored(*query_vectors, *half), model.score_stored(*query_vectors, *half))


def test_a_model_that_cannot_store_passages_or_no_side_to_serve_is_refused_or_served_as_it_is() -> None:
    model, words = tk_and_words(TEXTS)
    with pytest.raises(TypeError, match="KNRM cannot store passages: it has no encode_passages"):
        BFloat16Encoders(KNRM(torch.randn(len(words), 8)))
    with pytest.raises(ValueError, match="'query' and 'passages' are both False"):
        BFloat16Encoders(model, query=False)
    assert served_in_bfloat16(model, query=False, passages=False) is model
    served = served_in_bfloat16(model, query=False, passages=True)
    assert isinstance(served, BFloat16Encoders) and not served.query and served.passages
