"""ColBERT: late interaction over BERT token vectors (Khattab & Zaharia, SIGIR 2020, §3; lecture 8, slides 20–21).

Query and passage go through BERT separately; every output token vector is projected to a small
dimension and normalised to unit length (ColBERT eq. 1–2), so the passage side can be computed once,
at indexing time, and stored. The score is the *late interaction* (eq. 3): for every query token the
largest cosine with any passage token, summed over the query tokens,

``s(q, d) = Σ_i max_j  E_q[i] · E_d[j]``   (:func:`maxsim`).

Here ColBERT re-ranks BM25's top-100 (the paper's re-ranking setting, §4.2), as every model of the book.

Named choices:

- **Inputs** ``[CLS] q [SEP]`` and ``[CLS] d [SEP]`` (:func:`lib.models.bi_encoder.wrap`): the
  paper's ``[Q]`` / ``[D]`` marker tokens, its query augmentation with ``[MASK]`` tokens and its
  punctuation filter are left out (the starting MiniLM knows no marker tokens).
- **Projection** to :data:`COLBERT_DIM` = 128 dimensions without bias (the paper's default ``m``).
- **A learned scale** ``c`` (init 1) multiplies the score: Margin-MSE (:mod:`lib.training.distillation`)
  asks for the teacher's margins, while a sum of cosines has a fixed range; ``c`` leaves every
  ranking unchanged.
- Learning rates as BERT-cat's: :data:`lib.models.bert_cat.BOOK_BERT_LR` for BERT, 10⁻³ for the
  projection and the scale; ``num_layers`` keeps BERT's first layers.
"""

from __future__ import annotations

import os

import torch
import torch.nn.functional as F
from torch import nn
from transformers import BertModel

from lib.models.bert_cat import BOOK_BERT_LR, HEAD_LR
from lib.models.bert_layers import bert_and_head_groups, starting_bert
from lib.models.bi_encoder import wrap
from lib.models.tk import distinct_queries, take_rows

#: The dimension of ColBERT's stored token vectors (the paper's default).
COLBERT_DIM = 128


def maxsim(
    query_vectors: torch.Tensor, query_mask: torch.Tensor, doc_vectors: torch.Tensor, doc_mask: torch.Tensor
) -> torch.Tensor:
    """ColBERT eq. 3: ``Σ_i max_j q_i · d_j`` over the real tokens of each side, ``[B]``.

    ``query_vectors`` ``[B, Lq, m]``, ``doc_vectors`` ``[B, Ld, m]``, masks ``[B, L]``.
    """
    similarity = torch.bmm(query_vectors.float(), doc_vectors.float().transpose(1, 2))
    similarity = similarity.masked_fill(~doc_mask.bool().unsqueeze(1), float("-inf"))
    best = similarity.max(dim=-1).values
    return best.masked_fill(~query_mask.bool(), 0.0).sum(dim=-1)


class ColBERT(nn.Module):
    """ColBERT re-ranker: ``score = c · Σ_i max_j E_q[i] · E_d[j]`` (eq. 3); see the module docstring.

    Args:
        bert: a ``BertModel``, or a folder for :func:`lib.representations.bert.load_bert`.
        num_layers: keep BERT's first ``num_layers`` layers (``None``: all).
        dim: the dimension of the projected token vectors.
    """

    def __init__(
        self,
        bert: BertModel | str | os.PathLike,
        num_layers: int | None = None,
        dim: int = COLBERT_DIM,
        bert_lr: float = BOOK_BERT_LR,
        head_lr: float = HEAD_LR,
    ) -> None:
        super().__init__()
        bert = starting_bert(bert, num_layers)
        self.bert = bert
        self.projection = nn.Linear(bert.config.hidden_size, dim, bias=False)
        self.scale = nn.Parameter(torch.tensor(1.0))
        self.bert_lr, self.head_lr = bert_lr, head_lr

    def encode(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Eq. 1–2: unit-length projected vectors of ``[CLS] pieces [SEP]``, ``[B, L + 2, m]``, and their mask."""
        wrapped, attention = wrap(ids, mask)
        hidden = self.bert(input_ids=wrapped, attention_mask=attention).last_hidden_state
        vectors = F.normalize(self.projection(hidden).float(), dim=-1)
        return vectors * attention.unsqueeze(-1), attention.bool()

    def encode_passages(self, doc_ids: torch.Tensor, doc_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """What an index stores per passage: its token vectors ``[N, Ld + 2, m]`` and their mask."""
        return self.encode(doc_ids, doc_mask)

    def forward(
        self, query_ids: torch.Tensor, query_mask: torch.Tensor, doc_ids: torch.Tensor, doc_mask: torch.Tensor
    ) -> torch.Tensor:
        """One score per query–passage pair, ``[B]``; each distinct query of the batch is encoded once."""
        distinct_ids, distinct_mask, rows = distinct_queries(query_ids, query_mask.bool())
        query, mask = self.encode(distinct_ids, distinct_mask)
        doc, stored_mask = self.encode(doc_ids, doc_mask)
        return self.scale * maxsim(take_rows(query, rows), mask[rows], doc, stored_mask)

    def encode_query(self, query_ids: torch.Tensor, query_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The query side, computed once per query at query time: its token vectors ``[1, Lq + 2, m]`` and mask."""
        return self.encode(query_ids, query_mask)

    def score_stored(
        self, query_vectors: torch.Tensor, query_mask: torch.Tensor, doc_vectors: torch.Tensor, doc_mask: torch.Tensor
    ) -> torch.Tensor:
        """Late interaction (MaxSim) of one encoded query with ``N`` stored passages, ``[N]``."""
        count = doc_vectors.shape[0]
        expanded = query_vectors.expand(count, -1, -1), query_mask.expand(count, -1)
        return self.scale * maxsim(*expanded, doc_vectors.to(query_vectors.dtype), doc_mask.bool())

    def score_encoded(
        self, query_ids: torch.Tensor, query_mask: torch.Tensor, doc_vectors: torch.Tensor, doc_mask: torch.Tensor
    ) -> torch.Tensor:
        """The query-time work with stored passages: encode one query ``[1, Lq]``, late interaction with ``N``."""
        return self.score_stored(*self.encode_query(query_ids, query_mask), doc_vectors, doc_mask)

    def optimizer_groups(self, bert_lr: float | None = None, head_lr: float | None = None) -> list[dict]:
        """Two Adam groups: ``bert`` (``bert_lr``) and ``head`` (projection and scale, ``head_lr``)."""
        bert_lr = self.bert_lr if bert_lr is None else bert_lr
        head_lr = self.head_lr if head_lr is None else head_lr
        return bert_and_head_groups(self.bert, [*self.projection.parameters(), self.scale], bert_lr, head_lr)
