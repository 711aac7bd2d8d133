"""Kernel pooling: the soft-histogram scoring of KNRM, Conv-KNRM and TK (TK paper eq. 4–8).

A query and a document, each a sequence of vectors, are compared term by term in a cosine match
matrix (eq. 4); every entry is turned into ``K`` RBF-kernel activations (eq. 5), which are summed
over the document (eq. 6) into one soft term frequency per query term and kernel. Two pooled
feature vectors per pair follow: the log-normalised sum over query terms (eq. 7, KNRM's "log-sum"
pooling) and TK's length-normalised sum (eq. 8).

Named choices (the papers leave them open or the codes differ from the texts):

- **Kernel centres** (:func:`kernel_mus`): the KNRM/TK convention, the first kernel at μ = 1, then
  steps of 0.2 from 0.9 down to −0.9 (11 kernels). The TK paper says "mean values varying from −1
  to +1"; its and KNRM's code place them this way.
- **Kernel widths** (:func:`kernel_sigmas`): σ = 0.1 for all kernels (:data:`KERNEL_SIGMA`); TK has
  no exact-match kernel. KNRM and Conv-KNRM give the μ = 1 kernel σ = 0.001
  (:data:`EXACT_MATCH_SIGMA`, KNRM's original code) – the TK paper's §4.3 writes 0.0001.
- **Padding** contributes nothing: padded query or document positions are set to 0 in the match
  matrix *and* their kernel activations are removed before the sums (a cosine of 0 would otherwise
  fire the ±0.1 kernels), and padded query terms are left out of the sums over query terms.
- **Log clamp** (eq. 7): ``log_b(max(K_i^k, 1e-10))`` (:data:`LOG_CLAMP`, the value of KNRM's and
  TK's code), so an empty kernel contributes ``log_b(1e-10)`` per query term instead of −∞.
- **Length** (eq. 8): ``d_len`` is the true (unpadded) number of document tokens, the sum of the
  document mask, clamped to at least 1 so that an empty document gives 0, not NaN. The TK authors'
  code divides by ``d_len + 1``; that is the option ``length_plus_one``.
- **Precision**: the match matrix and the kernels are always computed in float32, with autocast
  off, whatever the input dtype (a bfloat16 cosine is too coarse for a σ = 0.001 kernel).
- **Cosine of a zero vector** is 0 (vectors are divided by ``max(‖x‖, 1e-12)``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

#: Number of kernels in TK, KNRM and Conv-KNRM (TK paper §4.3).
N_KERNELS = 11
#: Width of every kernel (TK paper §4.3), except KNRM's exact-match kernel.
KERNEL_SIGMA = 0.1
#: Width of KNRM's / Conv-KNRM's exact-match kernel at μ = 1 (KNRM's code; the TK paper text says 0.0001).
EXACT_MATCH_SIGMA = 1e-3
#: Lower clamp of a soft term frequency before the logarithm of eq. 7.
LOG_CLAMP = 1e-10
#: Lower clamp of a vector norm in the cosine of eq. 4 (a zero vector has cosine 0 with everything).
COSINE_EPS = 1e-12


def kernel_mus(n: int = N_KERNELS, exact_match: bool = False) -> list[float]:
    """The ``n`` kernel centres: 1.0, then ``1 - b/2``, ``1 - 3b/2``, … with ``b = 2 / (n - 1)``.

    For ``n = 11``: 1.0, 0.9, 0.7, 0.5, 0.3, 0.1, −0.1, −0.3, −0.5, −0.7, −0.9. The centres are the
    same with and without an exact-match kernel (only its σ differs, :func:`kernel_sigmas`);
    ``exact_match`` is accepted so that both functions take the same arguments.
    """
    del exact_match  # the centres do not depend on it
    if n < 1:
        raise ValueError(f"parameter 'n' must be >= 1, got {n}")
    if n == 1:
        return [1.0]
    bin_size = 2.0 / (n - 1)
    return [1.0] + [round(1.0 - bin_size / 2 - i * bin_size, 10) for i in range(n - 1)]


def kernel_sigmas(
    n: int = N_KERNELS,
    exact_match: bool = False,
    sigma: float = KERNEL_SIGMA,
    exact_match_sigma: float = EXACT_MATCH_SIGMA,
) -> list[float]:
    """The ``n`` kernel widths: ``sigma`` for all, or ``exact_match_sigma`` for the μ = 1 kernel if ``exact_match``."""
    if n < 1:
        raise ValueError(f"parameter 'n' must be >= 1, got {n}")
    sigmas = [float(sigma)] * n
    if exact_match:
        sigmas[0] = float(exact_match_sigma)
    return sigmas


def full_precision(device: torch.device) -> AbstractContextManager:
    """A context in which autocast is off on ``device`` (the kernel part of a model runs in float32)."""
    return torch.autocast(device_type=device.type, enabled=False)


def pair_mask(query_mask: torch.Tensor, doc_mask: torch.Tensor) -> torch.Tensor:
    """``[B, Lq, Ld]`` boolean mask, True where both the query term and the document term are real."""
    return query_mask.bool()[:, :, None] & doc_mask.bool()[:, None, :]


def cosine_match_matrix(
    query: torch.Tensor, doc: torch.Tensor, query_mask: torch.Tensor, doc_mask: torch.Tensor
) -> torch.Tensor:
    """Eq. 4: ``M[b, i, j] = cos(q_i, d_j)``, ``[B, Lq, Ld]`` float32, 0 where either position is padding.

    ``query`` is ``[B, Lq, D]``, ``doc`` is ``[B, Ld, D]``; the masks are True for real tokens.
    """
    with full_precision(query.device):
        query = F.normalize(query.float(), dim=-1, eps=COSINE_EPS)
        doc = F.normalize(doc.float(), dim=-1, eps=COSINE_EPS)
        match = torch.bmm(query, doc.transpose(1, 2))
        return match.masked_fill(~pair_mask(query_mask, doc_mask), 0.0)


def cosine_rows(query: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """Eq. 4's real columns for one query: ``cos(q_i, d_r)`` of the query's vectors ``[Lq, D]`` (or ``[1, Lq, D]``)
    with stored vectors ``rows`` ``[R, D]`` given without padding; ``[R, Lq]`` float32 — what
    :meth:`KernelPooling.pool_rows` pools, the entries of :func:`cosine_match_matrix` that are not padding."""
    with full_precision(query.device):
        query = F.normalize(query.reshape(-1, query.shape[-1]).float(), dim=-1, eps=COSINE_EPS)
        return F.normalize(rows.float(), dim=-1, eps=COSINE_EPS) @ query.T


def _as_kernel_tensor(values: Sequence[float] | torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return torch.as_tensor(values, dtype=like.dtype, device=like.device).reshape(-1)


def _centres_and_scales(
    mus: Sequence[float] | torch.Tensor, sigmas: Sequence[float] | torch.Tensor, like: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. 5's kernel centres ``μ_k`` and factors ``−1 / (2 σ_k²)``, as ``like``'s dtype and device; a different
    number of centres and widths is an error."""
    mus, sigmas = _as_kernel_tensor(mus, like), _as_kernel_tensor(sigmas, like)
    if mus.shape != sigmas.shape:
        raise ValueError(f"{mus.numel()} kernel centres but {sigmas.numel()} widths")
    return mus, -1.0 / (2 * sigmas**2)


def rbf_kernels(
    match: torch.Tensor, mus: Sequence[float] | torch.Tensor, sigmas: Sequence[float] | torch.Tensor
) -> torch.Tensor:
    """Eq. 5: ``K[..., k] = exp(-(M - μ_k)² / (2 σ_k²))`` for every entry of ``match``; shape ``[*match.shape, K]``.

    No masking here: :func:`kernel_sums` removes padded positions.
    """
    mus = _as_kernel_tensor(mus, match)
    sigmas = _as_kernel_tensor(sigmas, match)
    if mus.shape != sigmas.shape:
        raise ValueError(f"{mus.numel()} kernel centres but {sigmas.numel()} widths")
    return torch.exp(-((match.unsqueeze(-1) - mus) ** 2) / (2 * sigmas**2))


def kernel_sums(
    match: torch.Tensor,
    query_mask: torch.Tensor,
    doc_mask: torch.Tensor,
    mus: Sequence[float] | torch.Tensor,
    sigmas: Sequence[float] | torch.Tensor,
    doc_weights: torch.Tensor | None = None,
) -> torch.Tensor:
    """Eq. 6: ``K_i^k = Σ_j K_ij^k`` over the real document terms; ``[B, Lq, K]``, 0 for padded query terms.

    ``doc_weights`` (``[B, Ld]``, optional) multiplies every kernel activation of document term ``j``:
    TK-Sparse's learned stopword gate (0 removes the term from the sums).

    Computed kernel by kernel: each of the ``K`` passes over the ``[B, Lq, Ld]`` match matrix reduces
    its activations straight to ``[B, Lq]``, so the ``[B, Lq, Ld, K]`` tensor of eq. 5
    (:func:`rbf_kernels`) is never kept — on a GPU batch of 1,024 pairs at the paper's caps that
    intermediate alone is 270 MB; under ``torch.compile`` each pass fuses into one reduction.
    """
    with full_precision(match.device):
        match = match.float()
        mus, scales = _centres_and_scales(mus, sigmas, match)
        real = pair_mask(query_mask, doc_mask).to(match.dtype)
        if doc_weights is not None:
            real = real * doc_weights.float().unsqueeze(1)
        return torch.stack(
            [(torch.exp((match - mus[k]) ** 2 * scales[k]) * real).sum(dim=-1) for k in range(mus.numel())], dim=-1
        )


def kernel_sums_of_rows(
    cosines: torch.Tensor,
    passages: torch.Tensor,
    count: int,
    query_mask: torch.Tensor,
    mus: Sequence[float] | torch.Tensor,
    sigmas: Sequence[float] | torch.Tensor,
) -> torch.Tensor:
    """Eq. 6 from the real columns of the match matrix alone: ``cosines`` ``[R, Lq]`` holds each real stored term's
    cosines with the query's terms (eq. 4), ``passages`` ``[R]`` the number of its passage among ``count``; each
    term's ``K`` kernel activations (eq. 5) are added to its passage's sums in one ``index_add``. ``query_mask``
    ``[Lq]`` (one query for every passage); ``[count, Lq, K]``, what :func:`kernel_sums` gives for the padded
    ``[count, Lq, Ld]`` matrix, with no activation computed for padding (a padded chunk is as long as its longest
    passage)."""
    with full_precision(cosines.device):
        cosines = cosines.float()
        mus, scales = _centres_and_scales(mus, sigmas, cosines)
        terms, length = cosines.shape
        activations = torch.exp((cosines[..., None] - mus).square_().mul_(scales))
        sums = cosines.new_zeros(count, length * mus.numel())
        sums.index_add_(0, passages.to(cosines.device), activations.view(terms, -1))
        return sums.view(count, length, mus.numel()).mul_(query_mask.reshape(1, length, 1).to(sums.dtype))


def _log(values: torch.Tensor, base: float) -> torch.Tensor:
    if base == 2.0:
        return torch.log2(values)
    if base == math.e:
        return torch.log(values)
    return torch.log(values) / math.log(base)


def log_normalise(
    sums: torch.Tensor, query_mask: torch.Tensor, base: float = 2.0, clamp: float = LOG_CLAMP
) -> torch.Tensor:
    """Eq. 7: ``s_log^k = Σ_i log_b(max(K_i^k, clamp))`` over the real query terms; ``[B, K]``."""
    if base <= 0 or base == 1:
        raise ValueError(f"parameter 'base' must be positive and not 1, got {base}")
    logs = _log(sums.clamp_min(clamp), base)
    return logs.masked_fill(~query_mask.bool().unsqueeze(-1), 0.0).sum(dim=1)


def length_normalise(
    sums: torch.Tensor, query_mask: torch.Tensor, doc_mask: torch.Tensor, plus_one: bool = False
) -> torch.Tensor:
    """Eq. 8: ``s_len^k = Σ_i K_i^k / d_len`` over the real query terms; ``[B, K]``.

    ``d_len`` is the true document length (the sum of ``doc_mask``), at least 1; with ``plus_one``
    it is ``d_len + 1`` (the TK authors' code).
    """
    return _per_length(sums, query_mask, doc_mask.to(sums.dtype).sum(dim=-1), plus_one)


def _per_length(sums: torch.Tensor, query_mask: torch.Tensor, lengths: torch.Tensor, plus_one: bool) -> torch.Tensor:
    """Eq. 8 with the documents' true lengths ``[B]`` given."""
    lengths = lengths.to(sums.dtype)
    lengths = lengths + 1 if plus_one else lengths.clamp_min(1.0)
    sums = sums.masked_fill(~query_mask.bool().unsqueeze(-1), 0.0)
    return (sums / lengths[:, None, None]).sum(dim=1)


@dataclass
class PooledKernels:
    """The outputs of :class:`KernelPooling` for a batch of ``B`` pairs and ``K`` kernels."""

    #: ``K_i^k`` (eq. 6), ``[B, Lq, K]``, 0 for padded query terms.
    kernel_sums: torch.Tensor
    #: ``s_log^k`` (eq. 7), ``[B, K]``.
    log: torch.Tensor
    #: ``s_len^k`` (eq. 8), ``[B, K]``.
    length: torch.Tensor


class KernelPooling(nn.Module):
    """Eq. 5–8 on a match matrix: kernel sums per query term, then log- and length-normalised pooling.

    ``mus`` and ``sigmas`` are kept as (persistent) buffers, so a checkpoint records its kernels.
    ``log_base`` is 2 in TK (§4.3) and e in KNRM / Conv-KNRM (their "log-sum" pooling).
    """

    def __init__(
        self,
        mus: Sequence[float],
        sigmas: Sequence[float],
        log_base: float = 2.0,
        log_clamp: float = LOG_CLAMP,
        length_plus_one: bool = False,
    ) -> None:
        super().__init__()
        if len(mus) != len(sigmas):
            raise ValueError(f"{len(mus)} kernel centres but {len(sigmas)} widths")
        if min(sigmas) <= 0:
            raise ValueError(f"kernel widths must be positive, got {list(sigmas)}")
        self.register_buffer("mus", torch.tensor(list(mus), dtype=torch.float32))
        self.register_buffer("sigmas", torch.tensor(list(sigmas), dtype=torch.float32))
        self.log_base = float(log_base)
        self.log_clamp = float(log_clamp)
        self.length_plus_one = bool(length_plus_one)

    @property
    def n_kernels(self) -> int:
        return int(self.mus.numel())

    def forward(
        self,
        match: torch.Tensor,
        query_mask: torch.Tensor,
        doc_mask: torch.Tensor,
        doc_weights: torch.Tensor | None = None,
    ) -> PooledKernels:
        """Pool ``match`` (``[B, Lq, Ld]``, e.g. from :func:`cosine_match_matrix`) with the masks of its two sides.

        ``doc_weights`` (optional, ``[B, Ld]``) weighs each document term's activations (:func:`kernel_sums`).
        """
        with full_precision(match.device):
            sums = kernel_sums(match, query_mask, doc_mask, self.mus.float(), self.sigmas.float(), doc_weights)
            return PooledKernels(
                kernel_sums=sums,
                log=log_normalise(sums, query_mask, self.log_base, self.log_clamp),
                length=length_normalise(sums, query_mask, doc_mask, self.length_plus_one),
            )

    def pool_rows(self, cosines: torch.Tensor, lengths: torch.Tensor, query_mask: torch.Tensor) -> PooledKernels:
        """:meth:`forward` from the match matrix's real columns alone, of one query (``query_mask`` ``[Lq]``) against
        ``B`` documents of ``lengths`` ``[B]`` real terms: ``cosines`` ``[R, Lq]`` (``R = Σ lengths``) holds their
        terms' cosines document by document (:func:`kernel_sums_of_rows`) — the same pooled kernels, with no
        activation computed for padding."""
        with full_precision(cosines.device):
            lengths = lengths.to(cosines.device)
            count = len(lengths)
            passages = torch.repeat_interleave(torch.arange(count, device=cosines.device), lengths)
            sums = kernel_sums_of_rows(cosines, passages, count, query_mask, self.mus.float(), self.sigmas.float())
            query_mask = query_mask.reshape(1, -1).expand(count, -1)
            return PooledKernels(
                kernel_sums=sums,
                log=log_normalise(sums, query_mask, self.log_base, self.log_clamp),
                length=_per_length(sums, query_mask, lengths, self.length_plus_one),
            )

    def extra_repr(self) -> str:
        return (
            f"n_kernels={self.n_kernels}, log_base={self.log_base:g}, log_clamp={self.log_clamp:g}, "
            f"length_plus_one={self.length_plus_one}"
        )
