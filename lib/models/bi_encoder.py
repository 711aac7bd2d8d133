"""A BERT bi-encoder re-ranker: mean-pooled vectors of query and passage, scored by cosine (Reimers & Gurevych 2019).

Query and passage are encoded separately (``[CLS] pieces [SEP]`` each), the output vectors of all
their tokens — ``[CLS]`` and ``[SEP]`` included, as sentence-transformers' mean pooling does — are
averaged over the real positions, and the score is the cosine of the two means. With
all-MiniLM-L6-v2's weights (:func:`lib.representations.pretrained.minilm_folder`) this is that
model used as it is, zero-shot (lecture 8's "dense retrieval" family used as a re-ranker).

Named choices: queries are cut at 30 and passages at 200 word pieces (the book's caps, applied by
the tokenizer), where sentence-transformers cuts both at 256 with the specials; segment ids are 0.
"""

from __future__ import annotations

import os

import torch
from torch import nn
from torch.nn import functional
from transformers import BertModel

from lib.representations.bert import CLS_ID, SEP_ID, load_bert

#: Fine-tuning rate, should the bi-encoder be trained (BERT's recommended range).
BI_ENCODER_LR = 2e-5


def wrap(ids: torch.Tensor, mask: torch.Tensor, cls_id: int = CLS_ID, sep_id: int = SEP_ID):
    """``[CLS] pieces [SEP]`` then padding, from right-padded piece ids: ids and attention mask ``[B, L+2]``."""
    mask = mask.bool()
    lengths = mask.sum(dim=1)
    batch, width = ids.shape
    wrapped = torch.zeros((batch, width + 2), dtype=ids.dtype, device=ids.device)
    rows = torch.arange(batch, device=ids.device)
    position = mask.long().cumsum(dim=1)
    row_index = rows.unsqueeze(1).expand_as(ids)
    wrapped[row_index[mask], position[mask]] = ids[mask]
    wrapped[:, 0] = cls_id
    wrapped[rows, lengths + 1] = sep_id
    attention = torch.arange(width + 2, device=ids.device).unsqueeze(0) < (lengths + 2).unsqueeze(1)
    return wrapped, attention.long()


class BiEncoder(nn.Module):
    """``score = cos(mean(BERT([CLS] q [SEP])), mean(BERT([CLS] d [SEP])))`` over the real tokens.

    Args:
        bert: a transformers ``BertModel``, or a folder or hub name for :func:`lib.representations.bert.load_bert`.
    """

    def __init__(self, bert: BertModel | str | os.PathLike) -> None:
        super().__init__()
        if isinstance(bert, str | os.PathLike):
            bert = load_bert(bert)
        if not isinstance(bert, BertModel):
            raise TypeError(f"parameter 'bert' must be a BertModel or a path, got {type(bert)}")
        self.bert = bert

    def encode(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The mean-pooled vectors ``[B, H]`` of right-padded piece ids (no specials) and their masks."""
        wrapped, attention = wrap(ids, mask)
        hidden = self.bert(input_ids=wrapped, attention_mask=attention).last_hidden_state
        weights = attention.unsqueeze(-1).to(hidden.dtype)
        return (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)

    def forward(
        self, query_ids: torch.Tensor, query_mask: torch.Tensor, doc_ids: torch.Tensor, doc_mask: torch.Tensor
    ) -> torch.Tensor:
        """One score per query–passage pair (the cosine), ``FloatTensor[B]``."""
        queries, docs = self.encode(query_ids, query_mask), self.encode(doc_ids, doc_mask)
        return functional.cosine_similarity(queries.float(), docs.float(), dim=-1)

    def encode_passages(self, doc_ids: torch.Tensor, doc_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """What an index stores per passage: one vector, as a sequence of length 1 ``[N, 1, H]``, and its mask."""
        vectors = self.encode(doc_ids, doc_mask).unsqueeze(1)
        return vectors, torch.ones(vectors.shape[:2], dtype=torch.bool, device=vectors.device)

    def encode_query(self, query_ids: torch.Tensor, query_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The query side, computed once per query at query time: its vector ``[1, 1, H]`` and mask."""
        vectors = self.encode(query_ids, query_mask).unsqueeze(1)
        return vectors, torch.ones(vectors.shape[:2], dtype=torch.bool, device=vectors.device)

    def score_stored(
        self, query_vectors: torch.Tensor, query_mask: torch.Tensor, doc_vectors: torch.Tensor, doc_mask: torch.Tensor
    ) -> torch.Tensor:
        """The cosine of one encoded query with ``N`` stored passage vectors, ``[N]``."""
        return functional.cosine_similarity(query_vectors[:, 0].float(), doc_vectors[:, 0].float(), dim=-1)

    def score_encoded(
        self, query_ids: torch.Tensor, query_mask: torch.Tensor, doc_vectors: torch.Tensor, doc_mask: torch.Tensor
    ) -> torch.Tensor:
        """The query-time work with stored passages: encode one query ``[1, Lq]``, its cosine with ``N`` vectors."""
        return self.score_stored(*self.encode_query(query_ids, query_mask), doc_vectors, doc_mask)

    def optimizer_groups(self, bert_lr: float = BI_ENCODER_LR) -> list[dict]:
        """One Adam group: the whole BERT at ``bert_lr``."""
        return [{"params": list(self.bert.parameters()), "lr": bert_lr, "name": "bert"}]
