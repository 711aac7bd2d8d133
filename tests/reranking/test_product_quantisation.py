"""Product quantisation of stored vectors (``lib.reranking.product_quantisation``): codes of the nearest centroids."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lib.models.kernels import cosine_match_matrix
from lib.reranking.product_quantisation import (
    CENTROIDS,
    ProductQuantiser,
    cosine_table,
    decode,
    fit_quantiser,
    nearest,
    split,
    stored_cosines,
    subspace_widths,
    unit,
)


def few_prototypes(count: int, subspaces: int, width: int, prototypes: int, seed: int = 0) -> np.ndarray:
    """``count`` vectors whose every sub-vector is one of ``prototypes`` unit-length sub-vectors of its subspace."""
    rng = np.random.default_rng(seed)
    parts = unit(rng.normal(size=(subspaces * prototypes, width))).reshape(subspaces, prototypes, width)
    choice = rng.integers(0, prototypes, size=(count, subspaces))
    return np.concatenate([parts[s, choice[:, s]] for s in range(subspaces)], axis=1)


def test_vectors_made_of_few_sub_vectors_come_back_exactly() -> None:
    vectors = few_prototypes(600, subspaces=4, width=3, prototypes=6)
    quantiser = fit_quantiser(vectors, subspaces=4, iterations=5)
    assert quantiser.codebooks.shape == (4, CENTROIDS, 3) and quantiser.dim == 12 and quantiser.subspaces == 4
    codes = quantiser.encode(vectors)
    assert codes.dtype == np.uint8 and codes.shape == (600, 4)
    # every vector has length 2 (four unit sub-vectors): its unit direction is what comes back
    np.testing.assert_allclose(quantiser.decode(codes).numpy(), vectors / 2, atol=1e-6)


def test_each_code_is_its_sub_vectors_nearest_centroid_and_lloyd_lowers_the_error() -> None:
    vectors = np.random.default_rng(1).normal(size=(2000, 8)).astype(np.float32)
    once, fitted = fit_quantiser(vectors, 2, iterations=1), fit_quantiser(vectors, 2, iterations=8)
    codes = fitted.encode(vectors[:50])
    parts = unit(vectors[:50]).reshape(50, 2, 4)
    for s in range(2):
        distances = ((parts[:, s, None, :] - fitted.codebooks[s][None]) ** 2).sum(-1)
        np.testing.assert_array_equal(codes[:, s], distances.argmin(axis=1))

    def error(quantiser: ProductQuantiser) -> float:
        return float(((quantiser.decode(quantiser.encode(vectors)).numpy() - unit(vectors)) ** 2).sum(1).mean())

    assert error(fitted) < error(once) < 0.5
    again = fit_quantiser(vectors, 2, iterations=8)
    assert np.array_equal(again.codebooks, fitted.codebooks), "the same seed fits the same codebooks"
    cosines = torch.nn.functional.cosine_similarity(fitted.decode(fitted.encode(vectors)), torch.from_numpy(vectors))
    assert float(cosines.mean()) > 0.8


def test_nearest_centroids_agree_with_the_distances_across_chunks() -> None:
    generator = torch.Generator().manual_seed(3)
    parts, centroids = torch.randn(3, 50, 4, generator=generator), torch.randn(3, 16, 4, generator=generator)
    expected = torch.cdist(parts, centroids).argmin(dim=-1)
    assert torch.equal(nearest(parts, centroids, chunk=7), expected)
    assert nearest(parts[:, :0], centroids).shape == (3, 0)


def test_the_cosines_from_codes_are_the_decoded_vectors_real_columns_of_the_match_matrix() -> None:
    generator = torch.Generator().manual_seed(4)
    codebooks = torch.randn(4, CENTROIDS, 3, generator=generator)
    codes = torch.randint(0, CENTROIDS, (2, 5, 4), generator=generator, dtype=torch.uint8)
    query = torch.randn(1, 3, 12, generator=generator)
    doc_mask = torch.tensor([[True] * 5, [True, True, True, False, False]])
    table = cosine_table(query, codebooks)
    assert table.shape == (4 * CENTROIDS, 4)
    cosines = stored_cosines(table, codes[doc_mask])
    assert cosines.shape == (8, 3), "one row per stored vector"
    expected = cosine_match_matrix(query.expand(2, -1, -1), decode(codebooks, codes, 12), torch.ones(2, 3),
                                   doc_mask)  # fmt: skip
    torch.testing.assert_close(cosines, expected.transpose(1, 2)[doc_mask], atol=1e-6, rtol=1e-5)
    assert stored_cosines(table, codes[:0, 0]).shape == (0, 3), "no stored vector, no cosine"


def test_bad_shapes_and_too_few_vectors_are_refused() -> None:
    vectors = np.random.default_rng(2).normal(size=(300, 6)).astype(np.float32)
    with pytest.raises(ValueError, match="'subspaces' \\(7\\) must be between 1 and the vectors' dimension"):
        fit_quantiser(vectors, 7)
    with pytest.raises(ValueError, match="at least 256 vectors, got 100"):
        fit_quantiser(vectors[:100], 3)
    with pytest.raises(ValueError, match="'iterations'"):
        fit_quantiser(vectors, 3, iterations=0)
    with pytest.raises(ValueError, match="6-d vectors got an array of shape \\(2, 4\\)"):
        fit_quantiser(vectors, 3, iterations=1).encode(vectors[:2, :4])


def test_subspaces_that_do_not_divide_the_dimension_are_runs_of_two_widths() -> None:
    assert subspace_widths(384, 96) == (4,) * 96 and subspace_widths(384, 80) == (5,) * 64 + (4,) * 16
    assert subspace_widths(8, 3) == (3, 3, 2) and sum(subspace_widths(384, 80)) == 384
    with pytest.raises(ValueError, match="between 1 and the vectors' dimension 8, got 9"):
        subspace_widths(8, 9)
    vectors = torch.arange(16, dtype=torch.float32).reshape(2, 8) + 1
    parts = split(vectors, 3)
    assert parts.shape == (3, 2, 3)
    torch.testing.assert_close(parts[:, 0], torch.tensor([[1.0, 2, 3], [4, 5, 6], [7, 8, 0]]))


def test_a_quantiser_of_unequal_subspaces_encodes_decodes_and_scores_as_one_of_equal_ones() -> None:
    vectors = np.random.default_rng(5).normal(size=(1500, 8)).astype(np.float32)
    quantiser = fit_quantiser(vectors, 3, iterations=6)
    assert quantiser.codebooks.shape == (3, CENTROIDS, 3) and quantiser.dim == 8
    assert not quantiser.codebooks[2, :, 2].any(), "the narrower subspace's padding stays 0"
    codes = quantiser.encode(vectors)
    parts = split(torch.from_numpy(unit(vectors[:40])), 3).numpy()
    for s in range(3):
        distances = ((parts[s, :, None, :] - quantiser.codebooks[s][None]) ** 2).sum(-1)
        np.testing.assert_array_equal(codes[:40, s], distances.argmin(axis=1))
    decoded = quantiser.decode(codes)
    assert decoded.shape == (1500, 8)
    expected = np.concatenate([quantiser.codebooks[s, codes[:, s], :w] for s, w in enumerate((3, 3, 2))], axis=1)
    np.testing.assert_allclose(decoded.numpy(), expected)
    error = float(((decoded.numpy() - unit(vectors)) ** 2).sum(1).mean())
    coarser = fit_quantiser(vectors, 2, iterations=6)
    assert error < float(((coarser.decode(coarser.encode(vectors)).numpy() - unit(vectors)) ** 2).sum(1).mean())
    query = torch.randn(1, 4, 8, generator=torch.Generator().manual_seed(6))
    cosines = stored_cosines(cosine_table(query, torch.from_numpy(quantiser.codebooks)), torch.from_numpy(codes[:9]))
    expected_cosines = (
        torch.nn.functional.normalize(query[0], dim=-1) @ torch.nn.functional.normalize(decoded[:9], dim=-1).T
    )
    torch.testing.assert_close(cosines, expected_cosines.T, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="do not fit 3 subspaces of 9-d vectors"):
        ProductQuantiser(quantiser.codebooks[:, :, :2], 9)
