"""Kernel pooling (TK eq. 4–8) against a hand-computed example, and its masking of padding."""

from __future__ import annotations

import math

import pytest
import torch

from lib.models import kernels
from lib.models.kernels import (
    KernelPooling,
    cosine_match_matrix,
    cosine_rows,
    kernel_mus,
    kernel_sigmas,
    kernel_sums,
    kernel_sums_of_rows,
    length_normalise,
    log_normalise,
    rbf_kernels,
)

E = math.exp(1.0)


def test_kernel_centres_and_widths_of_the_papers() -> None:
    expected = [1.0, 0.9, 0.7, 0.5, 0.3, 0.1, -0.1, -0.3, -0.5, -0.7, -0.9]
    assert kernel_mus() == pytest.approx(expected)
    assert kernel_mus(11, exact_match=True) == pytest.approx(expected)
    assert kernel_sigmas() == [0.1] * 11  # TK: no exact-match kernel
    assert kernel_sigmas(11, exact_match=True) == [0.001] + [0.1] * 10  # KNRM / Conv-KNRM
    assert kernel_sigmas(3, exact_match=True, exact_match_sigma=1e-4) == [1e-4, 0.1, 0.1]
    assert kernel_mus(1) == [1.0]
    assert kernel_mus(3) == pytest.approx([1.0, 0.5, -0.5])
    with pytest.raises(ValueError):
        kernel_mus(0)


# --- a hand-computed case ----------------------------------------------------------------------
#
# Query: q1 = (3, 0), q2 = (0, 1), q3 = padding (a garbage vector (5, 5) that must not count).
# Document: d1 = (1, 0), d2 = (0, 2), d3 = (1, 0), d4 = padding (garbage (-1, 1)).
# Cosines (eq. 4): row q1 = [1, 0, 1], row q2 = [0, 1, 0]; every padded entry is 0.
#
# Three kernels: μ = (1, 0.5, -1), σ = (1/√2, 1/√2, 0.01). With 2σ² = 1 the first two are
# K = exp(-(M - μ)²):
#   μ = 1:    q1: e⁰ + e⁻¹ + e⁰       = 2 + e⁻¹    q2: e⁻¹ + e⁰ + e⁻¹ = 1 + 2e⁻¹
#   μ = 0.5:  q1: 3·e^(-1/4)                       q2: 3·e^(-1/4)
#   μ = -1:   exp(-(M + 1)² / 0.0002) underflows to 0 for M ∈ {0, 1}: K_i = 0 → clamped to 1e-10.
# Eq. 7 (log₂): s_log = (log₂(2 + e⁻¹) + log₂(1 + 2e⁻¹), 2·log₂(3e^(-1/4)), 2·log₂(1e-10)).
# Eq. 8 (d_len = 3 real document terms): s_len = ((3 + 3e⁻¹)/3, 6e^(-1/4)/3, 0) = (1 + e⁻¹, 2e^(-1/4), 0).

MUS = [1.0, 0.5, -1.0]
SIGMAS = [1 / math.sqrt(2), 1 / math.sqrt(2), 0.01]


def hand_example() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    query = torch.tensor([[[3.0, 0.0], [0.0, 1.0], [5.0, 5.0]]])
    doc = torch.tensor([[[1.0, 0.0], [0.0, 2.0], [1.0, 0.0], [-1.0, 1.0]]])
    query_mask = torch.tensor([[True, True, False]])
    doc_mask = torch.tensor([[True, True, True, False]])
    return query, doc, query_mask, doc_mask


def test_match_matrix_by_hand() -> None:
    match = cosine_match_matrix(*hand_example())
    expected = torch.tensor([[[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]])
    assert match.shape == (1, 3, 4)
    assert torch.allclose(match, expected, atol=1e-6)


def test_kernel_pooling_by_hand() -> None:
    query, doc, query_mask, doc_mask = hand_example()
    match = cosine_match_matrix(query, doc, query_mask, doc_mask)
    pooled = KernelPooling(MUS, SIGMAS, log_base=2.0)(match, query_mask, doc_mask)

    expected_sums = torch.tensor([[[2 + 1 / E, 3 * E**-0.25, 0.0], [1 + 2 / E, 3 * E**-0.25, 0.0], [0.0, 0.0, 0.0]]])
    assert torch.allclose(pooled.kernel_sums, expected_sums, atol=1e-6)

    expected_log = [
        math.log2(2 + 1 / E) + math.log2(1 + 2 / E),
        2 * math.log2(3 * E**-0.25),
        2 * math.log2(1e-10),
    ]
    assert pooled.log[0].tolist() == pytest.approx(expected_log, abs=1e-5)
    expected_length = [1 + 1 / E, 2 * E**-0.25, 0.0]
    assert pooled.length[0].tolist() == pytest.approx(expected_length, abs=1e-6)

    # the same with the functions one equation at a time
    sums = kernel_sums(match, query_mask, doc_mask, MUS, SIGMAS)
    assert torch.allclose(sums, expected_sums, atol=1e-6)
    assert torch.allclose(log_normalise(sums, query_mask, base=2.0), pooled.log)
    assert torch.allclose(length_normalise(sums, query_mask, doc_mask), pooled.length)


def test_log_base_and_length_options() -> None:
    query, doc, query_mask, doc_mask = hand_example()
    match = cosine_match_matrix(query, doc, query_mask, doc_mask)
    natural = KernelPooling(MUS, SIGMAS, log_base=math.e, length_plus_one=True)(match, query_mask, doc_mask)
    assert natural.log[0, 0].item() == pytest.approx(math.log(2 + 1 / E) + math.log(1 + 2 / E), abs=1e-5)
    assert natural.length[0, 0].item() == pytest.approx((3 + 3 / E) / 4, abs=1e-6)  # d_len + 1 = 4
    tenth = KernelPooling(MUS, SIGMAS, log_base=10.0)(match, query_mask, doc_mask)
    assert tenth.log[0, 2].item() == pytest.approx(-20.0, abs=1e-4)  # 2 · log₁₀(1e-10)


def test_rbf_kernels_shape_and_values() -> None:
    match = torch.tensor([[[1.0, 0.0]]])
    values = rbf_kernels(match, kernel_mus(), kernel_sigmas())
    assert values.shape == (1, 1, 2, 11)
    assert values[0, 0, 0, 0].item() == pytest.approx(1.0)  # cosine 1 at μ = 1
    assert values[0, 0, 1, 5].item() == pytest.approx(math.exp(-0.01 / 0.02))  # cosine 0 at μ = 0.1, σ = 0.1


def test_kernel_sums_equal_the_summed_rbf_tensor_of_eq_5() -> None:
    """The kernel-by-kernel reduction equals summing eq. 5's full ``[B, Lq, Ld, K]`` tensor over real terms."""
    torch.manual_seed(0)
    match = torch.rand(3, 4, 9) * 2 - 1
    query_mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1], [1, 0, 0, 0]], dtype=torch.bool)
    doc_mask = torch.arange(9)[None, :] < torch.tensor([[9], [4], [1]])
    for exact_match in (False, True):
        mus, sigmas = kernel_mus(), kernel_sigmas(exact_match=exact_match)
        full = rbf_kernels(match, mus, sigmas) * (query_mask[:, :, None] & doc_mask[:, None, :])[..., None]
        sums = kernel_sums(match, query_mask, doc_mask, mus, sigmas)
        assert sums.shape == (3, 4, 11)
        assert torch.allclose(sums, full.sum(dim=2), rtol=1e-5, atol=1e-6)
    assert (sums[0, 3] == 0).all() and (sums[2, 1:] == 0).all()


def test_padding_fires_no_kernel() -> None:
    """Extra padded positions (cosine 0 would fire the ±0.1 kernels) change nothing."""
    torch.manual_seed(0)
    query, doc = torch.randn(1, 3, 8), torch.randn(1, 5, 8)
    query_mask, doc_mask = torch.ones(1, 3, dtype=torch.bool), torch.ones(1, 5, dtype=torch.bool)
    pooling = KernelPooling(kernel_mus(), kernel_sigmas())
    base = pooling(cosine_match_matrix(query, doc, query_mask, doc_mask), query_mask, doc_mask)

    padded_query = torch.cat([query, torch.zeros(1, 2, 8)], dim=1)
    padded_doc = torch.cat([doc, torch.randn(1, 4, 8)], dim=1)  # garbage vectors at padded positions
    padded_query_mask = torch.tensor([[True] * 3 + [False] * 2])
    padded_doc_mask = torch.tensor([[True] * 5 + [False] * 4])
    match = cosine_match_matrix(padded_query, padded_doc, padded_query_mask, padded_doc_mask)
    assert (match[:, 3:, :] == 0).all() and (match[:, :, 5:] == 0).all()
    padded = pooling(match, padded_query_mask, padded_doc_mask)
    assert torch.allclose(padded.log, base.log, atol=1e-5)
    assert torch.allclose(padded.length, base.length, atol=1e-6)
    assert torch.allclose(padded.kernel_sums[:, :3], base.kernel_sums, atol=1e-6)
    assert (padded.kernel_sums[:, 3:] == 0).all()


def test_pooling_the_real_columns_alone_equals_pooling_the_padded_match_matrix() -> None:
    """``pool_rows`` (no kernel computed for padding) gives :meth:`KernelPooling.forward`'s features, a passage with
    no stored term included, and a padded query term fires nothing."""
    torch.manual_seed(1)
    match = torch.rand(4, 3, 7) * 2 - 1
    query_mask = torch.tensor([True, True, False])
    doc_mask = torch.arange(7)[None, :] < torch.tensor([[7], [2], [0], [5]])
    real = match.transpose(1, 2)[doc_mask]
    passages = doc_mask.nonzero()[:, 0]
    for plus_one in (False, True):
        pooling = KernelPooling(kernel_mus(), kernel_sigmas(exact_match=True), length_plus_one=plus_one)
        padded = pooling(match, query_mask.expand(4, -1), doc_mask)
        rows = pooling.pool_rows(real, doc_mask.sum(dim=1), query_mask)
        for name in ("kernel_sums", "log", "length"):
            torch.testing.assert_close(getattr(rows, name), getattr(padded, name), rtol=1e-5, atol=1e-5)
    sums = kernel_sums_of_rows(real, passages, 4, query_mask, kernel_mus(), kernel_sigmas())
    assert sums.shape == (4, 3, 11) and (sums[:, 2] == 0).all() and (sums[2] == 0).all()
    with pytest.raises(ValueError, match="11 kernel centres but 2 widths"):
        kernel_sums_of_rows(real, passages, 4, query_mask, kernel_mus(), [0.1, 0.1])


def test_cosine_rows_are_the_real_entries_of_the_match_matrix() -> None:
    torch.manual_seed(2)
    query, doc = torch.randn(1, 3, 8), torch.randn(2, 4, 8)
    doc[1, 1] = 0.0  # a zero vector has cosine 0, as in the match matrix
    doc_mask = torch.tensor([[True] * 4, [True, True, True, False]])
    match = cosine_match_matrix(query.expand(2, -1, -1), doc, torch.ones(2, 3, dtype=torch.bool), doc_mask)
    rows = cosine_rows(query, doc[doc_mask])
    assert rows.shape == (7, 3) and rows.dtype == torch.float32
    torch.testing.assert_close(rows, match.transpose(1, 2)[doc_mask], atol=1e-6, rtol=1e-6)
    assert (rows[5] == 0).all()


def test_empty_document_and_query_give_finite_features() -> None:
    query, doc = torch.randn(1, 2, 4), torch.zeros(1, 3, 4)
    query_mask, doc_mask = torch.ones(1, 2, dtype=torch.bool), torch.zeros(1, 3, dtype=torch.bool)
    pooled = KernelPooling(kernel_mus(), kernel_sigmas())(
        cosine_match_matrix(query, doc, query_mask, doc_mask), query_mask, doc_mask
    )
    assert torch.isfinite(pooled.log).all() and (pooled.length == 0).all()
    assert pooled.log[0, 0].item() == pytest.approx(2 * math.log2(kernels.LOG_CLAMP), abs=1e-4)


def test_float32_under_autocast_and_buffers_in_state_dict() -> None:
    query, doc, query_mask, doc_mask = hand_example()
    pooling = KernelPooling(MUS, SIGMAS)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        match = cosine_match_matrix(query.bfloat16(), doc.bfloat16(), query_mask, doc_mask)
        pooled = pooling(match, query_mask, doc_mask)
    assert match.dtype == torch.float32 and pooled.log.dtype == torch.float32
    assert set(pooling.state_dict()) == {"mus", "sigmas"}
    with pytest.raises(ValueError):
        KernelPooling([1.0, 0.5], [0.1])
