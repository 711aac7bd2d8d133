"""KNRM, the kernel-based neural ranking model (Xiong, Dai, Callan, Liu, Power, SIGIR 2017).

Word embeddings of query and document, a cosine match matrix (TK eq. 4), 11 RBF kernels with an
exact-match kernel, log-sum pooling over the query terms, and ``f(q, d) = tanh(wᵀ φ(M) + b)``
(Xiong et al. §3; the TK paper's baseline, §4.1 and §4.3).

Named choices:

- **Kernels**: μ = 1, 0.9, 0.7, …, −0.9; σ = 0.1, except σ = 0.001 on the μ = 1 exact-match kernel
  (``exact_match_sigma``, KNRM's code; the TK paper text says 0.0001). See :mod:`lib.models.kernels`.
- **Log-sum pooling**: ``Σ_i log(max(K_i^k, 1e-10))`` with the natural logarithm (``log_base``),
  then multiplied by 0.01 (``feature_scale``, KNRM's code: "scale down the data"); padded query and
  document positions contribute nothing. No length normalisation (that is TK's addition).
- **Learning to rank layer**: Linear(11, 1) with bias, initialised uniform in ±0.014 (MatchZoo's init,
  used by the TK authors' code), bias 0, followed by tanh (the KNRM paper). The TK authors' code
  dropped bias and tanh; ``bias=False`` and ``use_tanh=False`` give that variant.
- **Learning rates** (TK paper §4.3): the embeddings at :data:`EMBEDDING_LR`, the rest at :data:`OTHER_LR`.
- **Precision**: the match matrix, the kernels and the final layer run in float32 with autocast off.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from lib.models.kernels import (
    EXACT_MATCH_SIGMA,
    KERNEL_SIGMA,
    LOG_CLAMP,
    N_KERNELS,
    KernelPooling,
    cosine_match_matrix,
    full_precision,
    kernel_mus,
    kernel_sigmas,
)
from lib.models.tk import EMBEDDING_LR, OTHER_LR, embed, embedding_layer, param_groups

__all__ = ["EMBEDDING_LR", "KNRM", "OTHER_LR"]


class KernelFeatureScorer(nn.Module):
    """The scoring head KNRM and Conv-KNRM share: ``tanh(w · features + b)`` over their kernel features.

    A subclass sets ``embedding``, ``dense`` and ``use_tanh`` and implements ``features``.
    """

    embedding: nn.Embedding
    dense: nn.Linear
    use_tanh: bool

    def features(
        self, query_ids: torch.Tensor, query_mask: torch.Tensor, doc_ids: torch.Tensor, doc_mask: torch.Tensor
    ) -> torch.Tensor:
        raise NotImplementedError

    def forward(
        self, query_ids: torch.Tensor, query_mask: torch.Tensor, doc_ids: torch.Tensor, doc_mask: torch.Tensor
    ) -> torch.Tensor:
        """One score per pair, ``[B]`` float32."""
        features = self.features(query_ids, query_mask, doc_ids, doc_mask)
        with full_precision(features.device):
            score = self.dense(features).squeeze(-1)
            return torch.tanh(score) if self.use_tanh else score

    def optimizer_groups(self, embedding_lr: float = EMBEDDING_LR, other_lr: float = OTHER_LR) -> list[dict]:
        """Adam groups (TK paper §4.3): ``embeddings`` at ``embedding_lr``; ``other`` (every other layer)."""
        embedding = list(self.embedding.parameters())
        taken = {id(param) for param in embedding}
        other = [param for param in self.parameters() if id(param) not in taken]
        return param_groups({"embeddings": (embedding, embedding_lr), "other": (other, other_lr)})


class KNRM(KernelFeatureScorer):
    """KNRM (Xiong et al. 2017): ``tanh(w · 0.01 · Σ_i log K_i + b)``; the module docstring names every choice."""

    def __init__(
        self,
        embeddings: torch.Tensor,
        freeze_embeddings: bool = False,
        *,
        n_kernels: int = N_KERNELS,
        kernel_sigma: float = KERNEL_SIGMA,
        exact_match_sigma: float = EXACT_MATCH_SIGMA,
        log_base: float = math.e,
        log_clamp: float = LOG_CLAMP,
        feature_scale: float = 0.01,
        bias: bool = True,
        use_tanh: bool = True,
    ) -> None:
        super().__init__()
        self.embedding = embedding_layer(embeddings, freeze_embeddings)
        self.kernel_pooling = KernelPooling(
            kernel_mus(n_kernels, exact_match=True),
            kernel_sigmas(n_kernels, exact_match=True, sigma=kernel_sigma, exact_match_sigma=exact_match_sigma),
            log_base=log_base,
            log_clamp=log_clamp,
        )
        self.feature_scale = float(feature_scale)
        self.use_tanh = bool(use_tanh)
        self.dense = nn.Linear(n_kernels, 1, bias=bias)
        nn.init.uniform_(self.dense.weight, -0.014, 0.014)
        if bias:
            nn.init.zeros_(self.dense.bias)

    def features(
        self, query_ids: torch.Tensor, query_mask: torch.Tensor, doc_ids: torch.Tensor, doc_mask: torch.Tensor
    ) -> torch.Tensor:
        """The scaled log-sum kernel features ``φ(M)``, ``[B, K]`` float32."""
        query_mask, doc_mask = query_mask.bool(), doc_mask.bool()
        query = embed(self.embedding, query_ids, query_mask)
        doc = embed(self.embedding, doc_ids, doc_mask)
        match = cosine_match_matrix(query, doc, query_mask, doc_mask)
        return self.kernel_pooling(match, query_mask, doc_mask).log * self.feature_scale
