"""Mean contextualised query vectors (TK paper §5.3): real tokens only, independent of batching and padding."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lib.analyses.query_vectors import mean_query_vectors
from lib.representations.text import Vocabulary
from tests.analysis_helpers import small_tk

TEXTS = [
    "what is the androgen receptor",
    "androgen receptor define",
    "how long is the river",
    "define the river of the receptor and what is long about it",
]
QUERIES = {f"q{i}": text for i, text in enumerate(TEXTS)}


@pytest.fixture(scope="module")
def vocabulary() -> Vocabulary:
    return Vocabulary.build(TEXTS, min_count=1)


def test_the_vector_is_the_mean_over_real_tokens(vocabulary: Vocabulary) -> None:
    model = small_tk(vocabulary)
    vectors = mean_query_vectors(model, vocabulary, QUERIES, progress=False)
    assert vectors.shape == (4, 16) and vectors.dtype == np.float32
    for row, text in enumerate(TEXTS):
        ids, mask = vocabulary.encode([text], 30)
        with torch.no_grad():
            alone = model.contextualise(ids, mask)[0].mean(dim=0).numpy()  # no padding when alone
        assert np.allclose(vectors[row], alone, atol=1e-5)


def test_batching_and_order(vocabulary: Vocabulary) -> None:
    model = small_tk(vocabulary)
    whole = mean_query_vectors(model, vocabulary, QUERIES, progress=False)
    one_by_one = mean_query_vectors(model, vocabulary, QUERIES, batch_size=1, progress=False)
    assert np.allclose(whole, one_by_one, atol=1e-5)
    reversed_queries = dict(reversed(list(QUERIES.items())))
    assert np.allclose(mean_query_vectors(model, vocabulary, reversed_queries, progress=False), whole[::-1], atol=1e-5)
    capped = mean_query_vectors(model, vocabulary, {"q": TEXTS[3]}, max_length=2, progress=False)
    ids, mask = vocabulary.encode([TEXTS[3]], 2)
    with torch.no_grad():
        assert np.allclose(capped[0], model.contextualise(ids, mask)[0].mean(dim=0).numpy(), atol=1e-5)


def test_empty_queries_mode_and_errors(vocabulary: Vocabulary) -> None:
    model = small_tk(vocabulary).train()
    vectors = mean_query_vectors(model, vocabulary, {"a": "?!", "b": TEXTS[0]}, progress=False)
    assert (vectors[0] == 0).all() and np.isfinite(vectors).all()
    assert model.training
    with pytest.raises(ValueError, match="batch_size"):
        mean_query_vectors(model, vocabulary, QUERIES, batch_size=0)
    with pytest.raises(ValueError, match="queries"):
        mean_query_vectors(model, vocabulary, {})
