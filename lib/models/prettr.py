"""PreTTR: BERT split at layer k (MacAvaney et al., SIGIR 2020; lecture 8, slides 17–19).

BERT-cat (:mod:`lib.models.bert_cat`) runs every layer on ``[CLS] q [SEP] d [SEP]`` for every
candidate at query time. PreTTR cuts the stack at layer ``k``: the first ``k`` layers run on the query
``[CLS] q [SEP]`` and on the passage ``d [SEP]`` separately — so the passage side is computed once, at
indexing time, and stored — and the remaining ``L − k`` layers run on the concatenation of the two
half-encoded sequences; the output vector of ``[CLS]`` goes through one linear layer to the score, as
in BERT-cat (slide 19). ``k = 0`` is BERT-cat; ``k = L`` leaves no layer in which query and passage meet.

Named choices:

- **Positions.** The query takes positions ``0 … |q|+1`` (segment 0). The passage takes positions
  from :data:`PASSAGE_OFFSET` on (segment 1): a fixed offset after the longest query the book allows,
  so a stored passage does not depend on the query it will meet, and the two sides never share a
  position (the paper leaves this open).
- **No compression** of the stored vectors (the paper's optional autoencoder, §3.3): the book counts
  the storage of the full vectors at float16 instead.
- **Default split** ``k = L − 1``: query and passage meet in the last layer only (the fastest split,
  slide 18's "concatenate only at the last layer").
- Learning rates as BERT-cat's (:data:`lib.models.bert_cat.BOOK_BERT_LR` for BERT, 10⁻³ for the head);
  ``num_layers`` keeps BERT's first layers as BERT-cat does.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import torch
from torch import nn
from transformers import BertModel

from lib.models.bert_cat import BOOK_BERT_LR, HEAD_LR
from lib.models.bert_layers import bert_and_head_groups, cls_vector, run_layers, starting_bert
from lib.models.bi_encoder import wrap
from lib.models.tk import distinct_queries, take_rows
from lib.representations.bert import SEP_ID
from lib.representations.text import QUERY_MAX_LENGTH

#: The first position of a passage: after ``[CLS]``, the longest query and ``[SEP]``.
PASSAGE_OFFSET = QUERY_MAX_LENGTH + 2


def close_passage(ids: torch.Tensor, mask: torch.Tensor, sep_id: int = SEP_ID) -> tuple[torch.Tensor, torch.Tensor]:
    """``d [SEP]`` from right-padded passage pieces: ids and mask ``[N, Ld + 1]``."""
    mask = mask.bool()
    lengths = mask.sum(dim=1)
    rows = torch.arange(ids.shape[0], device=ids.device)
    closed = torch.cat([ids * mask, torch.zeros_like(ids[:, :1])], dim=1)
    closed[rows, lengths] = sep_id
    closed_mask = torch.arange(closed.shape[1], device=ids.device).unsqueeze(0) <= lengths.unsqueeze(1)
    return closed, closed_mask


class PreTTR(nn.Module):
    """PreTTR re-ranker: ``score = w · Upper(Lower(q) ⊕ Lower(d))[CLS] + b`` (slide 19).

    Args:
        bert: a ``BertModel``, or a folder for :func:`lib.representations.bert.load_bert`.
        num_layers: keep BERT's first ``num_layers`` layers (``None``: all).
        split: ``k``, the layers run on query and passage separately (``None``: all but the last).
    """

    def __init__(
        self,
        bert: BertModel | str | os.PathLike,
        num_layers: int | None = None,
        split: int | None = None,
        bert_lr: float = BOOK_BERT_LR,
        head_lr: float = HEAD_LR,
    ) -> None:
        super().__init__()
        bert = starting_bert(bert, num_layers)
        layers = len(bert.encoder.layer)
        split = layers - 1 if split is None else split
        if not isinstance(split, int) or not 0 <= split <= layers:
            raise ValueError(f"parameter 'split' must be an integer in 0..{layers}, got {split!r}")
        self.bert, self.split = bert, split
        self.bert_lr, self.head_lr = bert_lr, head_lr
        self.dropout = nn.Dropout(bert.config.hidden_dropout_prob)
        self.score = nn.Linear(bert.config.hidden_size, 1)

    def _embed(self, ids: torch.Tensor, offset: int, segment: int) -> torch.Tensor:
        """BERT's embeddings of one side, positions from ``offset``, segment ``segment``: ``[B, T, H]``."""
        positions = torch.arange(offset, offset + ids.shape[1], device=ids.device).unsqueeze(0).expand_as(ids)
        return self.bert.embeddings(input_ids=ids, token_type_ids=torch.full_like(ids, segment), position_ids=positions)

    def _lower(self, ids: torch.Tensor, mask: torch.Tensor, offset: int, segment: int) -> torch.Tensor:
        """Embeddings and the first ``k`` layers of one side, positions from ``offset``, ``[B, T, H]``."""
        return run_layers(self.bert.encoder.layer[: self.split], self._embed(ids, offset, segment), mask)

    def _every_lower(self, ids: torch.Tensor, mask: torch.Tensor, offset: int, segment: int) -> list[torch.Tensor]:
        """One side after 0, 1, …, L layers (every split's lower half in one pass): ``L + 1`` tensors ``[B, T, H]``."""
        states = [self._embed(ids, offset, segment)]
        for layer in self.bert.encoder.layer:
            states.append(run_layers([layer], states[-1], mask))
        return states

    def encode_query(self, query_ids: torch.Tensor, query_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``[CLS] q [SEP]`` through the first ``k`` layers: vectors ``[B, Lq + 2, H]`` and mask."""
        ids, mask = wrap(query_ids, query_mask)
        return self._lower(ids, mask, 0, 0), mask.bool()

    def encode_passages(self, doc_ids: torch.Tensor, doc_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """What an index stores per passage: ``d [SEP]`` after the first ``k`` layers, ``[N, Ld + 1, H]``, and mask."""
        ids, mask = close_passage(doc_ids, doc_mask)
        return self._lower(ids, mask, PASSAGE_OFFSET, 1), mask

    def score_halves(
        self,
        query: torch.Tensor,
        query_mask: torch.Tensor,
        doc: torch.Tensor,
        doc_mask: torch.Tensor,
        split: int | None = None,
    ) -> torch.Tensor:
        """The last ``L − k`` layers on the concatenated half-encoded pairs, then the ``[CLS]`` score, ``[B]``
        (``split``: this ``k`` instead of the model's own, for halves encoded that far)."""
        split = self.split if split is None else split
        hidden = torch.cat([query, doc.to(query.dtype)], dim=1)
        mask = torch.cat([query_mask, doc_mask], dim=1)
        vector = cls_vector(self.bert.encoder.layer[split:], hidden, mask)
        return self.score(self.dropout(vector)).squeeze(-1)

    def forward(
        self, query_ids: torch.Tensor, query_mask: torch.Tensor, doc_ids: torch.Tensor, doc_mask: torch.Tensor
    ) -> torch.Tensor:
        """One score per query–passage pair, ``[B]``; each distinct query of the batch is encoded once."""
        distinct_ids, distinct_mask, rows = distinct_queries(query_ids, query_mask.bool())
        query, mask = self.encode_query(distinct_ids, distinct_mask)
        doc, stored_mask = self.encode_passages(doc_ids, doc_mask)
        return self.score_halves(take_rows(query, rows), mask[rows], doc, stored_mask)

    def forward_splits(
        self,
        query_ids: torch.Tensor,
        query_mask: torch.Tensor,
        doc_ids: torch.Tensor,
        doc_mask: torch.Tensor,
        splits: Sequence[int],
    ) -> torch.Tensor:
        """The scores of these weights split at every ``k`` of ``splits``, ``[B, len(splits)]``: column ``i`` equals
        :meth:`forward` with ``split = splits[i]``. Each side's lower layers run once for all splits (a layer
        below split ``k + 1`` is the same layer below split ``k``), so a sweep costs one pass per side and
        the upper layers of each split."""
        distinct_ids, distinct_mask, rows = distinct_queries(query_ids, query_mask.bool())
        ids, mask = wrap(distinct_ids, distinct_mask)
        queries = self._every_lower(ids, mask, 0, 0)
        doc_ids, doc_mask = close_passage(doc_ids, doc_mask)
        docs = self._every_lower(doc_ids, doc_mask, PASSAGE_OFFSET, 1)
        mask = mask.bool()[rows]
        return torch.stack(
            [self.score_halves(take_rows(queries[k], rows), mask, docs[k], doc_mask, k) for k in splits], dim=1
        )

    def score_stored(
        self, query_vectors: torch.Tensor, query_mask: torch.Tensor, doc_vectors: torch.Tensor, doc_mask: torch.Tensor
    ) -> torch.Tensor:
        """The upper layers on one encoded query (:meth:`encode_query`) joined to ``N`` stored passages, ``[N]``."""
        count = doc_vectors.shape[0]
        expanded = query_vectors.expand(count, -1, -1), query_mask.expand(count, -1)
        return self.score_halves(*expanded, doc_vectors, doc_mask.bool())

    def score_encoded(
        self, query_ids: torch.Tensor, query_mask: torch.Tensor, doc_vectors: torch.Tensor, doc_mask: torch.Tensor
    ) -> torch.Tensor:
        """The query-time work with stored passages: one query ``[1, Lq]`` against ``N`` of :meth:`encode_passages`."""
        return self.score_stored(*self.encode_query(query_ids, query_mask), doc_vectors, doc_mask)

    def optimizer_groups(self, bert_lr: float | None = None, head_lr: float | None = None) -> list[dict]:
        """Two Adam groups as BERT-cat's: ``bert`` (``bert_lr``) and ``head`` (the linear layer, ``head_lr``)."""
        bert_lr = self.bert_lr if bert_lr is None else bert_lr
        head_lr = self.head_lr if head_lr is None else head_lr
        return bert_and_head_groups(self.bert, list(self.score.parameters()), bert_lr, head_lr)
