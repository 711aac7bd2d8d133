"""duoBERT: a BERT that reads a query and *two* passages and says which is more relevant (lecture 8, slide 12).

Nogueira, Yang, Cho and Lin, *Multi-Stage Document Ranking with BERT* (2019), §3.2, and Pradeep, Nogueira and
Lin, *The Expando-Mono-Duo Design Pattern for Text Ranking* (2021): a mono model (BERT-cat, :mod:`lib.models.
bert_cat`) ranks the candidates; the duo model then scores every ordered pair ``(d_i, d_j)`` of mono's top ``k``
as ``p_ij = P(d_i more relevant than d_j | q)`` from the ``[CLS]`` vector of ``[CLS] q [SEP] d_i [SEP] d_j [SEP]``,
and the top ``k`` are re-ordered by an aggregate of those probabilities (:mod:`lib.reranking.mono_duo`).

Choices the papers leave open or the book makes (named here):

- **Segments.** BERT has two segment (token type) embeddings: ``[CLS] q [SEP]`` is segment A, ``d_i [SEP]
  d_j [SEP]`` segment B, as BERT-cat's passage (:func:`lib.models.bert_cat.pack_pairs`).
- **Passage caps.** Each passage keeps at most ``(positions − 4 − |q|) / 2`` word pieces, so that a long first
  passage never pushes the second out of BERT's positions (both are capped at 200 pieces before that anyway).
- **The output is a logit** ``z_ij``, ``p_ij = sigmoid(z_ij)``. The papers train it with cross-entropy on
  MS MARCO's labels; the book trains it on the teacher's margins (:mod:`lib.training.duo`).
- **Starting weights**: any BERT, as for BERT-cat; the book starts from chapter 2's fine-tuned BERT-cat encoder
  (the papers start both models from the same pre-trained BERT).
"""

from __future__ import annotations

import torch

from lib.models.bert_cat import BertCat
from lib.models.bert_layers import cls_vector


def join_passages(
    a_ids: torch.Tensor, a_mask: torch.Tensor, b_ids: torch.Tensor, b_mask: torch.Tensor, sep_id: int, cap: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """``d_i [SEP] d_j`` of each row, left-packed (``[B, T]`` ids and mask), each passage cut to its first ``cap``
    real pieces: the "passage" side that :func:`lib.models.bert_cat.pack_pairs` then closes with ``[SEP]``."""
    if a_ids.shape[0] != b_ids.shape[0]:
        raise ValueError(f"batch sizes differ: {a_ids.shape[0]} first passages, {b_ids.shape[0]} second")
    a_mask = a_mask.bool() & (a_mask.long().cumsum(dim=1) <= cap)
    b_mask = b_mask.bool() & (b_mask.long().cumsum(dim=1) <= cap)
    a_length, b_length = a_mask.sum(dim=1), b_mask.sum(dim=1)
    batch, device = a_ids.shape[0], a_ids.device
    total = int((a_length + b_length).max()) + 1 if batch else 1
    ids = torch.zeros((batch, total), dtype=torch.long, device=device)
    rows = torch.arange(batch, device=device).unsqueeze(1)
    ids[rows.expand_as(a_ids)[a_mask], (a_mask.long().cumsum(dim=1) - 1)[a_mask]] = a_ids[a_mask]
    ids[rows.squeeze(1), a_length] = sep_id
    b_position = b_mask.long().cumsum(dim=1) + a_length.unsqueeze(1)
    ids[rows.expand_as(b_ids)[b_mask], b_position[b_mask]] = b_ids[b_mask]
    mask = torch.arange(total, device=device).unsqueeze(0) < (a_length + b_length + 1).unsqueeze(1)
    return ids, mask


class DuoBert(BertCat):
    """duoBERT (module docstring): ``z = w · BERT([CLS] q [SEP] d_i [SEP] d_j [SEP])[CLS] + b``, one logit per row.

    Built as :class:`lib.models.bert_cat.BertCat` (the same arguments, BERT, head and optimizer groups); only the
    input differs: a query and two passages instead of one.
    """

    def forward(  # type: ignore[override]  # a query and two passages, not BERT-cat's pair
        self,
        query_ids: torch.Tensor,
        query_mask: torch.Tensor,
        a_ids: torch.Tensor,
        a_mask: torch.Tensor,
        b_ids: torch.Tensor,
        b_mask: torch.Tensor,
    ) -> torch.Tensor:
        """The logit of ``P(a more relevant than b | query)`` per row, ``FloatTensor[B]``."""
        query_length = int(query_mask.bool().sum(dim=1).max()) if query_mask.numel() else 0
        cap = max((self.max_length - 4 - query_length) // 2, 1)
        joint_ids, joint_mask = join_passages(a_ids, a_mask, b_ids, b_mask, self.sep_id, cap)
        input_ids, token_type_ids, attention_mask = self.pack(query_ids, query_mask, joint_ids, joint_mask)
        hidden = self.bert.embeddings(input_ids=input_ids, token_type_ids=token_type_ids)
        vector = cls_vector(self.bert.encoder.layer, hidden, attention_mask)
        return self.score(self.dropout(vector)).squeeze(-1)


__all__ = ["DuoBert", "join_passages"]
