"""A model served in bfloat16 (``lib.models.bfloat16_encoders``)."""

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


def test_both_sides_run_in_bfloat16_their_vectors_stay_close_and_the_interaction_stays_float32() -> None:
    model, words = tk_and_words(TEXTS)
    served = served_in_bfloat16(model)
    assert isinstance(served, BFloat16Encoders)
    assert all(p.dtype == torch.bfloat16 for p in served.half_model.parameters())
    assert all(p.dtype == torch.float32 for p in model.parameters()), "the original model is left as it was"
    query = words.encode(["define androgen receptor"], QUERY_MAX_LENGTH)
    docs = words.encode(list(TEXTS.values()), DOC_MAX_LENGTH)
    with torch.no_grad():
        for side, inputs in (("encode_query", query), ("encode_passages", docs)):
            half, full = getattr(served, side)(*inputs), getattr(model, side)(*inputs)
            assert not torch.equal(half[0], full[0]), f"{side} is another precision's"
            assert close(half, full) > 0.99, side
        full_query, passages = model.encode_query(*query), served.encode_passages(*docs)
        assert torch.equal(served.score_stored(*full_query, *passages), model.score_stored(*full_query, *passages))
        stored = passages[1].bool()
        cosines = torch.rand(int(stored.sum()), full_query[0].shape[1]) * 2 - 1
        rows = cosines, stored.sum(dim=1), full_query[1][0]
        assert served.scores_from_match and torch.equal(served.score_rows(*rows), model.score_rows(*rows))


def test_any_model_runs_whole_under_bfloat16_autocast_with_float32_scores_close_to_its_own() -> None:
    model, words = tk_and_words(TEXTS)
    knrm = KNRM(torch.randn(len(words), 8))
    query = words.encode(["define androgen receptor"] * len(TEXTS), QUERY_MAX_LENGTH)
    docs = words.encode(list(TEXTS.values()), DOC_MAX_LENGTH)
    for original in (model, knrm):
        served = served_in_bfloat16(original)
        assert isinstance(served, BFloat16Encoders) == (original is model), "only a storable model gets encoders"
        with torch.no_grad():
            half, full = served(*query, *docs), original(*query, *docs)
        assert half.dtype == torch.float32
        # TK's contextualisation is matrix products (bfloat16 now); KNRM's kernels and layer stay float32 under autocast
        assert torch.equal(half, full) == (original is knrm), type(original).__name__
        assert torch.allclose(half, full, atol=0.05 * float(full.abs().max()) + 1e-3), type(original).__name__


def test_a_model_that_cannot_store_passages_is_refused_encoders() -> None:
    _, words = tk_and_words(TEXTS)
    with pytest.raises(TypeError, match="KNRM cannot store passages: it has no encode_passages"):
        BFloat16Encoders(KNRM(torch.randn(len(words), 8)))
