"""BERT-cat: the concatenated query–passage BERT re-ranker (Nogueira & Cho 2019; lecture 8, slides 8–9).

The query and the passage go through BERT together as one sequence ``[CLS] q [SEP] d [SEP]``;
the output vector of ``[CLS]`` goes through one linear layer to the relevance score (TK paper §4.2
baseline "BERT-Base"; lecture: "BERTCAT"). Every query term can attend to every passage term, which
is what makes it effective and slow: the whole model runs once per query–passage pair.

Choices the papers leave open (named here, flags where an alternative is plausible):

- **Left packing.** The inputs follow the book's contract (word pieces without special tokens,
  each side right-padded). ``forward`` packs every pair as ``[CLS] q [SEP] d [SEP]`` followed by
  all padding, so neither the query's nor the passage's padding sits inside the sequence and the
  position ids are those BERT saw in pre-training. Segment (token type) ids are 0 for
  ``[CLS] q [SEP]`` and 1 for ``d [SEP]``, BERT's sentence A/B. A pair longer than BERT's
  positions (3 + 30 + 200 = 233 ≤ 256 with the paper's caps and the book's small BERT) loses the
  end of the passage.
- **[CLS] vector, no pooler** (``use_pooler=False``): the book's small BERT is pre-trained with
  masked LM only, so its pooler (dense + tanh, trained by next-sentence prediction in the original
  BERT) is untrained; ``use_pooler=True`` scores the pooled output instead, as Nogueira & Cho's code
  did with bert-base. Dropout (BERT's ``hidden_dropout_prob``) precedes the linear layer.
- **Learning rates.** The TK paper fine-tunes BERT with 1e-6 on MS MARCO's ~400k training queries
  (§4.3, :data:`PAPER_BERT_LR`). At book scale there are a few hundred training queries and a
  small BERT: 1e-6 would barely move it, so the book's default is ``bert_lr=3e-5`` (the middle of
  BERT's recommended fine-tuning range) and ``head_lr=1e-3`` (the paper's rate for all non-BERT
  layers) for the new linear layer.
- **Fewer layers** (``num_layers``): keep only the first N Transformer layers of the starting BERT
  (e.g. of all-MiniLM-L6-v2's 6, :mod:`lib.representations.pretrained`) when a CPU budget asks for it;
  ``None`` keeps all.
"""

from __future__ import annotations

import os

import torch
from torch import nn
from transformers import BertForMaskedLM, BertModel

from lib.models.bert_layers import cls_vector, keep_layers
from lib.representations.bert import CLS_ID, SEP_ID, load_bert

#: BERT fine-tuning rate of the TK paper on MS MARCO (§4.3).
PAPER_BERT_LR = 1e-6
#: The book's BERT fine-tuning rate for its small BERT and few training queries.
BOOK_BERT_LR = 3e-5
#: The rate of the scoring layer: the paper's rate for all non-BERT layers (§4.3).
HEAD_LR = 1e-3


def pack_pairs(
    query_ids: torch.Tensor,
    query_mask: torch.Tensor,
    doc_ids: torch.Tensor,
    doc_mask: torch.Tensor,
    cls_id: int = CLS_ID,
    sep_id: int = SEP_ID,
    max_length: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Left-packed ``[CLS] q [SEP] d [SEP]`` inputs: ``(input_ids, token_type_ids, attention_mask)``, each ``[B, T]``.

    The real tokens of each side (mask ``True``) keep their order; padding (id 0, attention 0,
    type 0) fills the end. ``T`` is the longest packed pair of the batch. With ``max_length`` the
    passage is cut so that a pair fits into ``max_length`` positions.
    """
    if query_ids.shape != query_mask.shape or doc_ids.shape != doc_mask.shape:
        raise ValueError(
            f"ids and masks differ in shape: query {tuple(query_ids.shape)} vs {tuple(query_mask.shape)}, "
            f"doc {tuple(doc_ids.shape)} vs {tuple(doc_mask.shape)}"
        )
    if query_ids.shape[0] != doc_ids.shape[0]:
        raise ValueError(f"batch sizes differ: {query_ids.shape[0]} queries, {doc_ids.shape[0]} documents")
    query_mask, doc_mask = query_mask.bool(), doc_mask.bool()
    query_length = query_mask.sum(dim=1)
    if max_length is not None:
        room = (max_length - 3 - query_length).clamp(min=0)
        doc_rank = doc_mask.long().cumsum(dim=1)
        doc_mask = doc_mask & (doc_rank <= room.unsqueeze(1))
    doc_length = doc_mask.sum(dim=1)
    batch = query_ids.shape[0]
    total = int((query_length + doc_length).max()) + 3 if batch else 3
    device = query_ids.device
    input_ids = torch.zeros((batch, total), dtype=torch.long, device=device)
    rows = torch.arange(batch, device=device)
    # Target positions: query token k (k-th real one) at 1 + k; passage token k at 2 + |q| + k.
    query_position = query_mask.long().cumsum(dim=1)  # 1-based rank = 1 + k
    doc_position = doc_mask.long().cumsum(dim=1) + 1 + query_length.unsqueeze(1)
    query_rows = rows.unsqueeze(1).expand_as(query_ids)
    doc_rows = rows.unsqueeze(1).expand_as(doc_ids)
    input_ids[query_rows[query_mask], query_position[query_mask]] = query_ids[query_mask]
    input_ids[doc_rows[doc_mask], doc_position[doc_mask]] = doc_ids[doc_mask]
    input_ids[:, 0] = cls_id
    input_ids[rows, 1 + query_length] = sep_id
    input_ids[rows, 2 + query_length + doc_length] = sep_id
    positions = torch.arange(total, device=device).unsqueeze(0)
    end = (3 + query_length + doc_length).unsqueeze(1)
    attention_mask = (positions < end).long()
    token_type_ids = ((positions >= (2 + query_length).unsqueeze(1)) & (positions < end)).long()
    return input_ids, token_type_ids, attention_mask


class BertCat(nn.Module):
    """BERT-cat re-ranker: ``score = w · BERT([CLS] q [SEP] d [SEP])[CLS] + b``.

    Args:
        bert: a transformers ``BertModel`` (a ``BertForMaskedLM``'s encoder is taken), or a folder or
            hub name for :func:`lib.representations.bert.load_bert` (the book's small BERT; ``bert-base-uncased``).
        use_pooler: score BERT's pooled output (dense + tanh) instead of the raw ``[CLS]`` vector.
        bert_lr, head_lr: the rates of :meth:`optimizer_groups` (see the module docstring).
        cls_id, sep_id: the special ids of the vocabulary (bert-base-uncased's 101 and 102).
        num_layers: keep only BERT's first ``num_layers`` Transformer layers (``None``: all).
    """

    def __init__(
        self,
        bert: BertModel | BertForMaskedLM | str | os.PathLike,
        use_pooler: bool = False,
        bert_lr: float = BOOK_BERT_LR,
        head_lr: float = HEAD_LR,
        cls_id: int = CLS_ID,
        sep_id: int = SEP_ID,
        num_layers: int | None = None,
    ) -> None:
        super().__init__()
        if isinstance(bert, str | os.PathLike):
            bert = load_bert(bert, pooler=use_pooler)
        if isinstance(bert, BertForMaskedLM):
            bert = bert.bert
        if not isinstance(bert, BertModel):
            raise TypeError(f"parameter 'bert' must be a BertModel, a BertForMaskedLM or a path, got {type(bert)}")
        if num_layers is not None:
            keep_layers(bert, num_layers)
        if use_pooler and bert.pooler is None:
            raise ValueError("use_pooler=True but the BERT has no pooler (load it with load_bert(..., pooler=True))")
        if not use_pooler:
            bert.pooler = None  # untrained after masked-LM pre-training, and unused: keep it out of the optimizer
        self.bert = bert
        self.use_pooler = use_pooler
        self.bert_lr, self.head_lr = bert_lr, head_lr
        self.cls_id, self.sep_id = cls_id, sep_id
        self.dropout = nn.Dropout(bert.config.hidden_dropout_prob)
        self.score = nn.Linear(bert.config.hidden_size, 1)

    @property
    def max_length(self) -> int:
        """The longest packed pair BERT accepts (its position embeddings)."""
        return int(self.bert.config.max_position_embeddings)

    def pack(
        self, query_ids: torch.Tensor, query_mask: torch.Tensor, doc_ids: torch.Tensor, doc_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The packed BERT input of a batch (:func:`pack_pairs` with this model's ids and length)."""
        return pack_pairs(query_ids, query_mask, doc_ids, doc_mask, self.cls_id, self.sep_id, self.max_length)

    def encode_pairs(
        self, query_ids: torch.Tensor, query_mask: torch.Tensor, doc_ids: torch.Tensor, doc_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """BERT's output on the packed pairs: last-layer vectors ``[B, T, H]`` and the attention mask ``[B, T]``."""
        input_ids, token_type_ids, attention_mask = self.pack(query_ids, query_mask, doc_ids, doc_mask)
        output = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        return output.last_hidden_state, attention_mask

    def forward(
        self, query_ids: torch.Tensor, query_mask: torch.Tensor, doc_ids: torch.Tensor, doc_mask: torch.Tensor
    ) -> torch.Tensor:
        """One score per query–passage pair, ``FloatTensor[B]``: BERT's ``[CLS]`` vector of the packed pair, its
        last layer run for that row alone (:func:`lib.models.bert_layers.cls_vector`; the same vector as
        :meth:`encode_pairs` gives, up to float rounding)."""
        input_ids, token_type_ids, attention_mask = self.pack(query_ids, query_mask, doc_ids, doc_mask)
        hidden = self.bert.embeddings(input_ids=input_ids, token_type_ids=token_type_ids)
        vector = cls_vector(self.bert.encoder.layer, hidden, attention_mask)
        if self.use_pooler:
            vector = self.bert.pooler(vector.unsqueeze(1))
        return self.score(self.dropout(vector)).squeeze(-1)

    def optimizer_groups(self, bert_lr: float | None = None, head_lr: float | None = None) -> list[dict]:
        """Two Adam parameter groups: ``bert`` (``bert_lr``) and ``head`` (the linear layer, ``head_lr``)."""
        bert_lr = self.bert_lr if bert_lr is None else bert_lr
        head_lr = self.head_lr if head_lr is None else head_lr
        return [
            {"params": list(self.bert.parameters()), "lr": bert_lr, "name": "bert"},
            {"params": list(self.score.parameters()), "lr": head_lr, "name": "head"},
        ]
