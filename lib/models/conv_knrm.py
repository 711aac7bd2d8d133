"""Conv-KNRM, convolutional kernel-based neural ranking (Dai, Xiong, Callan, Liu, WSDM 2018).

Word embeddings of query and document go through 1-D convolutions for n-gram sizes 1..3 (128
filters each, ReLU), every query n-gram size is cross-matched with every document n-gram size
(3 × 3 = 9 cosine match matrices), each matrix is pooled with KNRM's kernels, and the concatenated
features are scored by ``tanh(wᵀ φ + b)`` (Dai et al. 2018; the TK paper's baseline, §4.1 and §4.3:
n-gram size 3, 128 CNN features, 11 kernels with exact matching on the first).

Named choices:

- **N-gram positions**: the convolution for size ``h`` runs over the (zero-masked) embeddings padded
  with ``h − 1`` zero vectors on the right, so its output has one position per input position; the
  n-gram at position ``j`` covers tokens ``j..j+h−1``. With ``ngram_mask="complete"`` (default, the
  "valid" convolution of Dai et al.: a text of ``n`` tokens has ``n − h + 1`` n-grams of size ``h``)
  only n-grams made entirely of real tokens count; ``"start"`` (the TK authors' code) counts every
  n-gram that starts at a real token, the last ones completed with zero vectors. Masked n-grams
  contribute nothing to the kernel pooling; a text shorter than ``h`` has no ``h``-grams, and its
  matrices give features of 0.
- **Cross-matching** (``cross_match=True``): all 9 (query size, document size) pairs, in the order
  (1,1), (1,2), (1,3), (2,1), …, (3,3); ``False`` matches equal sizes only (3 matrices).
- **Kernels and pooling** as in :mod:`lib.models.knrm`: σ = 0.001 on the μ = 1 kernel, natural-log
  log-sum pooling, features multiplied by 0.01, Linear(99, 1) with bias (init ±0.014, bias 0) and tanh
  (``bias``, ``use_tanh`` switch them off).
- **Learning rates** (TK paper §4.3): the embeddings at :data:`EMBEDDING_LR`; the convolutions and the
  final layer at :data:`OTHER_LR` (§4.3's "contextualization layers" are TK's Transformer layers).
- **Precision**: the convolutions may run in reduced precision under autocast; the match matrices,
  kernels and final layer run in float32 with autocast off.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from lib.models.kernels import (
    EXACT_MATCH_SIGMA,
    KERNEL_SIGMA,
    LOG_CLAMP,
    N_KERNELS,
    KernelPooling,
    cosine_match_matrix,
    kernel_mus,
    kernel_sigmas,
)
from lib.models.knrm import KernelFeatureScorer
from lib.models.tk import embed, embedding_layer

__all__ = ["ConvKNRM", "ConvKNRMConfig", "ngram_mask"]

NgramMask = Literal["complete", "start"]


def ngram_mask(mask: torch.Tensor, size: int, mode: NgramMask = "complete") -> torch.Tensor:
    """``[B, L]`` mask of the size-``size`` n-grams starting at each position (see the module docstring)."""
    mask = mask.bool()
    if mode == "start" or size == 1:
        return mask
    if mode != "complete":
        raise ValueError(f"parameter 'mode' must be 'complete' or 'start', got {mode!r}")
    return F.pad(mask, (0, size - 1), value=False).unfold(-1, size, 1).all(dim=-1)


@dataclass(frozen=True)
class ConvKNRMConfig:
    """Conv-KNRM's hyper-parameters, the TK paper's baseline by default (§4.3; Dai et al. 2018)."""

    #: Largest n-gram size ``h``: one convolution per size 1..``max_ngram`` (the TK paper's 3, §4.3).
    max_ngram: int = 3
    #: Filters of each convolution (the TK paper's 128 CNN features, §4.3).
    n_filters: int = 128
    #: Match every query n-gram size with every document size (Dai et al.'s cross-matching), else equal sizes.
    cross_match: bool = True
    #: Which n-grams count: ``"complete"`` (all real tokens) or ``"start"`` (module docstring).
    ngram_mask: NgramMask = "complete"
    #: Kernels per match matrix, the first the exact-match one (KNRM's 11, TK paper §4.3).
    n_kernels: int = N_KERNELS
    #: Width σ of the soft-match kernels.
    kernel_sigma: float = KERNEL_SIGMA
    #: Width σ of the exact-match kernel at μ = 1.
    exact_match_sigma: float = EXACT_MATCH_SIGMA
    #: Base of the log-sum pooling (Dai et al.: the natural logarithm).
    log_base: float = math.e
    #: Clamp before the logarithm.
    log_clamp: float = LOG_CLAMP
    #: Factor on the kernel features before the final layer (the authors' code).
    feature_scale: float = 0.01
    #: A bias in the final layer ``tanh(wᵀ φ + b)`` (Dai et al.).
    bias: bool = True
    #: The ``tanh`` of the final layer (Dai et al.).
    use_tanh: bool = True


class ConvKNRM(KernelFeatureScorer):
    """Conv-KNRM (Dai et al. 2018); the module docstring names every choice, :class:`ConvKNRMConfig` its settings."""

    def __init__(
        self, embeddings: torch.Tensor, freeze_embeddings: bool = False, config: ConvKNRMConfig | None = None
    ) -> None:
        super().__init__()
        config = config or ConvKNRMConfig()
        if config.max_ngram < 1:
            raise ValueError(f"parameter 'max_ngram' must be >= 1, got {config.max_ngram}")
        if config.ngram_mask not in ("complete", "start"):
            raise ValueError(f"parameter 'ngram_mask' must be 'complete' or 'start', got {config.ngram_mask!r}")
        self.embedding = embedding_layer(embeddings, freeze_embeddings)
        dim = self.embedding.embedding_dim
        self.convs = nn.ModuleList(nn.Conv1d(dim, config.n_filters, size) for size in range(1, config.max_ngram + 1))
        self.ngram_mode = config.ngram_mask
        sizes = range(config.max_ngram)
        self.pairs = [(q, d) for q in sizes for d in sizes] if config.cross_match else [(h, h) for h in sizes]
        n_kernels = config.n_kernels
        self.kernel_pooling = KernelPooling(
            kernel_mus(n_kernels, exact_match=True),
            kernel_sigmas(
                n_kernels, exact_match=True, sigma=config.kernel_sigma, exact_match_sigma=config.exact_match_sigma
            ),
            log_base=config.log_base,
            log_clamp=config.log_clamp,
        )
        self.feature_scale = float(config.feature_scale)
        self.use_tanh = bool(config.use_tanh)
        self.dense = nn.Linear(len(self.pairs) * n_kernels, 1, bias=config.bias)
        nn.init.uniform_(self.dense.weight, -0.014, 0.014)
        if config.bias:
            nn.init.zeros_(self.dense.bias)

    def ngrams(self, ids: torch.Tensor, mask: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """One ``(vectors [B, L, n_filters], mask [B, L])`` pair per n-gram size 1..max_ngram, 0 where masked."""
        mask = mask.bool()
        embeddings = embed(self.embedding, ids, mask).transpose(1, 2)  # [B, D, L]
        out = []
        for size, conv in enumerate(self.convs, start=1):
            vectors = F.relu(conv(F.pad(embeddings, (0, size - 1)))).transpose(1, 2)
            valid = ngram_mask(mask, size, self.ngram_mode)
            out.append((vectors * valid.unsqueeze(-1), valid))
        return out

    def features(
        self, query_ids: torch.Tensor, query_mask: torch.Tensor, doc_ids: torch.Tensor, doc_mask: torch.Tensor
    ) -> torch.Tensor:
        """The scaled log-sum kernel features of all matched n-gram pairs, ``[B, pairs × K]`` float32."""
        query = self.ngrams(query_ids, query_mask)
        doc = self.ngrams(doc_ids, doc_mask)
        features = []
        for q, d in self.pairs:
            (q_vectors, q_mask), (d_vectors, d_mask) = query[q], doc[d]
            match = cosine_match_matrix(q_vectors, d_vectors, q_mask, d_mask)
            features.append(self.kernel_pooling(match, q_mask, d_mask).log)
        return torch.cat(features, dim=-1) * self.feature_scale
