"""TILDE's training losses: binary cross-entropy over the vocabulary (eq. 7) and BiQDL (eq. 8).

For one (query, passage) pair, TILDE-QL's loss reads the passage's logits ``z`` and the query's
multi-hot targets ``y`` (``y_t = 1`` when piece ``t`` occurs in the query):

    ℓ(z, y) = -(1/|V|) Σ_{t∈V} [ y_t log σ(z_t) + (1 - y_t) log(1 - σ(z_t)) ]

**Normalisation (as eq. 7):** the sum over the target vocabulary is divided by |V|, the number of
*target* pieces (28,403 for the cleaned bert-base-uncased vocabulary, 30,522 for the full one);
removed pieces (stopwords, symbols) are neither positives nor negatives. Over a batch the per-pair
terms are **summed**, as eq. 7 sums over the pairs of D (and as the authors' code does), not
averaged. L_DL swaps the roles (the query's logits, the passage's targets); BiQDL is their mean.
"""

from __future__ import annotations

import torch
from torch.nn import functional

#: The three training objectives of the paper's ablation (§3.3, Table 3).
LOSSES: tuple[str, ...] = ("ql", "dl", "biqdl")


def vocabulary_bce(logits: torch.Tensor, targets: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """ℓ(z, y) of every row: the binary cross-entropy averaged over the kept pieces, ``FloatTensor[B]``.

    Args:
        logits: ``z``, ``[B, vocab]``.
        targets: ``y`` in {0, 1}, ``[B, vocab]`` (:meth:`lib.models.tilde_vocabulary.TargetVocabulary.targets`).
        keep: ``BoolTensor[vocab]``, the target vocabulary V; the other pieces do not count.
    """
    if logits.shape != targets.shape or logits.shape[-1:] != keep.shape:
        raise ValueError(
            f"shapes differ: logits {tuple(logits.shape)}, targets {tuple(targets.shape)}, keep {tuple(keep.shape)}"
        )
    keep = keep.to(logits.device)
    per_piece = functional.binary_cross_entropy_with_logits(logits.float(), targets.float(), reduction="none")
    return (per_piece * keep).sum(dim=-1) / keep.sum()


def ql_loss(passage_logits: torch.Tensor, query_targets: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """L_QL (eq. 7): the passage predicts the query's pieces; summed over the pairs."""
    return vocabulary_bce(passage_logits, query_targets, keep).sum()


def dl_loss(query_logits: torch.Tensor, passage_targets: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """L_DL (§3.3): the query predicts the passage's pieces; summed over the pairs."""
    return vocabulary_bce(query_logits, passage_targets, keep).sum()


def biqdl_loss(
    passage_logits: torch.Tensor,
    query_logits: torch.Tensor,
    query_targets: torch.Tensor,
    passage_targets: torch.Tensor,
    keep: torch.Tensor,
) -> torch.Tensor:
    """L_BiQDL = (L_QL + L_DL) / 2 (eq. 8)."""
    return (ql_loss(passage_logits, query_targets, keep) + dl_loss(query_logits, passage_targets, keep)) / 2


__all__ = ["LOSSES", "biqdl_loss", "dl_loss", "ql_loss", "vocabulary_bce"]
