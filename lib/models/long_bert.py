"""BERT-cat on long documents: document windows, FirstP and MaxP (lecture slide 13).

BERT reads at most its position embeddings' worth of word pieces (512 for bert-base), query and
special tokens included, while a document runs to thousands. Slide 13 ("BERTCAT for Longer
Documents") names the two simple answers of Dai & Callan ("Deeper Text Understanding for IR with
Contextual Neural Language Modeling", SIGIR 2019, §3):

- **FirstP** (:class:`FirstP`): score the query with the document's first window — whatever fits
  into BERT after ``[CLS] q [SEP]`` and the final ``[SEP]``; BERT-cat on the truncated document.
- **MaxP** (:class:`MaxP`): split the document into overlapping windows, score each with BERT-cat and
  take the best window's score.

Both wrap a :class:`lib.models.bert_cat.BertCat` — chapter 2's passage-trained one, or one built
from a BERT as BertCat builds it — so a model trained on passages scores documents unchanged; or a
:class:`lib.models.bi_encoder.BiEncoder` (chapter 9's teacher on documents), whose document side is encoded
apart from the query, ``[CLS] d [SEP]``, so FirstP's room does not depend on the query.
:func:`document_windows` cuts the documents of a batch into windows in one vectorised step
(``unfold``); MaxP and IDCM (:mod:`lib.models.idcm`) share it.

Named choices:

- **Windows over the real tokens.** A document's real word pieces (mask true) are taken in order
  and cut into windows of ``size`` pieces every ``stride`` pieces; the last window is partial. A
  document of ``n`` pieces has ``1 + ceil(max(n − size, 0) / stride)`` windows: no window starts
  after one has reached the document's end. ``overlap`` adds that many pieces of context on each
  side (IDCM's 7), padding where the document has none. An empty document has one empty window, so
  every document has a score (BERT-cat's score of an empty passage).
- **MaxP's window** (:data:`MAXP_SIZE`, :data:`MAXP_STRIDE`): Dai & Callan's 150 and 75 (§3), here
  counted in word pieces, not words. The window must fit BERT beside a one-piece query; a longer
  query cuts the window's end, as BertCat's packing cuts any passage.
- **Each window is a passage**: packed as ``[CLS] q [SEP] w [SEP]`` by
  :func:`lib.models.bert_cat.pack_pairs` with its own ``[SEP]`` and segment ids, position ids
  starting again at 0 — the input BERT-cat was trained on.
- **FirstP's length** (``max_length``): BERT's positions by default, so FirstP is exactly BERT-cat,
  whose packing cuts the passage to fit; a smaller ``max_length`` cuts the document shorter, a larger one
  (the slide's 512 with a BERT of 256 positions) is BERT's positions.
- **MaxP's maximum** is taken over the raw BERT-cat scores; training passes the gradient to the best
  window only. Dai & Callan's SumP and the authors' learned aggregations are not built.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import BertForMaskedLM, BertModel

from lib.models.bert_cat import BertCat
from lib.models.bi_encoder import BiEncoder

__all__ = ["MAXP_SIZE", "MAXP_STRIDE", "FirstP", "MaxP", "Windows", "as_bert_cat", "as_scorer", "document_windows"]

#: MaxP's window length in word pieces (Dai & Callan 2019, §3: 150 words).
MAXP_SIZE = 150
#: MaxP's step between window starts (Dai & Callan 2019, §3: 75 words, half a window).
MAXP_STRIDE = 75


@dataclass(frozen=True)
class Windows:
    """The windows of a batch of ``B`` documents, ``N`` windows in all, each ``W = size + 2 · overlap`` wide.

    Rows are ordered by document, then by window number.
    """

    #: Word-piece ids ``[N, W]``, 0 where masked.
    ids: torch.Tensor
    #: Real tokens ``[N, W]`` (bool): the window's pieces and its overlap's, false beyond the document.
    mask: torch.Tensor
    #: The document (row of the batch) each window belongs to, ``[N]``.
    document: torch.Tensor
    #: The window's number within its document, 0 first, ``[N]``.
    number: torch.Tensor
    #: Windows per document, ``[B]`` (at least 1).
    counts: torch.Tensor

    @property
    def most(self) -> int:
        """The largest number of windows of one document (the width of :meth:`per_document`)."""
        return int(self.counts.max()) if self.counts.numel() else 0

    def per_document(self, values: torch.Tensor, fill: float) -> torch.Tensor:
        """``values`` ``[N]`` (one per window) as ``[B, most]``, ``fill`` where a document has no such window."""
        dense = values.new_full((self.counts.numel(), self.most), fill)
        dense[self.document, self.number] = values
        return dense

    def valid(self) -> torch.Tensor:
        """``[B, most]`` bool: true where the document has that window."""
        numbers = torch.arange(self.most, device=self.counts.device)
        return numbers.unsqueeze(0) < self.counts.unsqueeze(1)


def window_counts(lengths: torch.Tensor, size: int, stride: int) -> torch.Tensor:
    """Windows per document of ``lengths`` real pieces: ``1 + ceil(max(n − size, 0) / stride)``."""
    return 1 + torch.div((lengths - size).clamp(min=0) + stride - 1, stride, rounding_mode="floor")


def real_tokens_first(doc_ids: torch.Tensor, doc_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's real tokens moved to its start, in order (ids 0 and mask false after them)."""
    mask = doc_mask.bool()
    order = torch.argsort((~mask).to(torch.uint8), dim=1, stable=True)
    mask = mask.gather(1, order)
    return doc_ids.gather(1, order).masked_fill(~mask, 0), mask


def document_windows(
    doc_ids: torch.Tensor, doc_mask: torch.Tensor, size: int, stride: int, overlap: int = 0
) -> Windows:
    """The windows of every document of a batch (``[B, L]`` ids and mask), vectorised.

    Window ``j`` of a document holds its real pieces ``j · stride .. j · stride + size − 1`` plus ``overlap``
    pieces before and after (padding where the document has none); see the module docstring for the count.
    """
    if size < 1 or stride < 1 or overlap < 0:
        raise ValueError(f"need size >= 1, stride >= 1 and overlap >= 0, got {size}, {stride}, {overlap}")
    if doc_ids.shape != doc_mask.shape:
        raise ValueError(f"ids {tuple(doc_ids.shape)} and mask {tuple(doc_mask.shape)} differ in shape")
    ids, mask = real_tokens_first(doc_ids, doc_mask)
    counts = window_counts(mask.sum(dim=1), size, stride)
    most = int(counts.max()) if counts.numel() else 1
    width = size + 2 * overlap
    total = (most - 1) * stride + width
    room = max(total - overlap - ids.shape[1], 0)
    ids = F.pad(ids, (overlap, room))[:, :total].unfold(1, width, stride)
    mask = F.pad(mask, (overlap, room))[:, :total].unfold(1, width, stride)
    valid = torch.arange(most, device=ids.device).unsqueeze(0) < counts.unsqueeze(1)
    documents = torch.arange(ids.shape[0], device=ids.device).unsqueeze(1).expand_as(valid)
    numbers = torch.arange(most, device=ids.device).unsqueeze(0).expand_as(valid)
    return Windows(ids[valid], mask[valid], documents[valid], numbers[valid], counts)


def as_bert_cat(bert: BertCat | BertModel | BertForMaskedLM | str | os.PathLike, num_layers: int | None) -> BertCat:
    """``bert`` if it is a :class:`BertCat` (``num_layers`` then ``None``), else a BertCat built from it."""
    if isinstance(bert, BertCat):
        if num_layers is not None:
            raise ValueError("parameter 'num_layers' applies to a BERT, not to a BertCat: cut it when building it")
        return bert
    return BertCat(bert, num_layers=num_layers)


def as_scorer(
    model: BertCat | BiEncoder | BertModel | BertForMaskedLM | str | os.PathLike, num_layers: int | None
) -> BertCat | BiEncoder:
    """``model`` if it is a :class:`BiEncoder` (``num_layers`` then ``None``), else :func:`as_bert_cat`'s BertCat."""
    if isinstance(model, BiEncoder):
        if num_layers is not None:
            raise ValueError("parameter 'num_layers' applies to a BERT, not to a bi-encoder: cut it when building it")
        return model
    return as_bert_cat(model, num_layers)


def _room(scorer: BertCat | BiEncoder, query_mask: torch.Tensor) -> tuple[int, torch.Tensor]:
    """The scorer's positions and, per row, the positions its packing takes besides the document's pieces:
    ``[CLS] q [SEP] … [SEP]`` for BERT-cat, ``[CLS] … [SEP]`` for a bi-encoder's document side."""
    if isinstance(scorer, BiEncoder):
        return scorer.bert.config.max_position_embeddings, torch.full_like(query_mask[:, 0], 2, dtype=torch.long)
    return scorer.max_length, 3 + query_mask.bool().sum(dim=1)


class FirstP(nn.Module):
    """FirstP (slide 13; Dai & Callan 2019, §3): BERT-cat on the document's first ``max_length − 3 − |q|`` pieces
    (a bi-encoder: its first ``max_length − 2``).

    Args:
        bert: a :class:`BertCat` (e.g. trained on passages), what :class:`BertCat` builds one from, or a
            :class:`BiEncoder`.
        num_layers: for a BERT, keep its first ``num_layers`` layers (``None``: all).
        max_length: the packed length ``[CLS] q [SEP] d [SEP]`` is cut to, at most BERT's positions (``None``: those).
    """

    def __init__(
        self,
        bert: BertCat | BiEncoder | BertModel | BertForMaskedLM | str | os.PathLike,
        num_layers: int | None = None,
        max_length: int | None = None,
    ) -> None:
        super().__init__()
        self.scorer = as_scorer(bert, num_layers)
        longest = _room(self.scorer, torch.ones(1, 1))[0]
        if max_length is not None and max_length < 4:
            raise ValueError(
                f"parameter 'max_length' must be at least 4 (three special tokens and a piece), got {max_length}"
            )
        self.max_length = longest if max_length is None else min(max_length, longest)

    def first_window(self, query_mask: torch.Tensor, doc_mask: torch.Tensor) -> torch.Tensor:
        """The document mask cut to the first pieces that fit beside the query, ``[B, L]`` bool."""
        room = (self.max_length - _room(self.scorer, query_mask)[1]).clamp(min=0)
        doc_mask = doc_mask.bool()
        return doc_mask & (doc_mask.long().cumsum(dim=1) <= room.unsqueeze(1))

    def forward(
        self, query_ids: torch.Tensor, query_mask: torch.Tensor, doc_ids: torch.Tensor, doc_mask: torch.Tensor
    ) -> torch.Tensor:
        """One score per query–document pair, ``[B]``: BERT-cat on the first window."""
        ids, mask = real_tokens_first(doc_ids, self.first_window(query_mask, doc_mask))
        width = max(int(mask.sum(dim=1).max()), 1) if mask.numel() else 1  # the window, not the document's width
        return self.scorer(query_ids, query_mask, ids[:, :width], mask[:, :width])

    def optimizer_groups(self, bert_lr: float | None = None, head_lr: float | None = None) -> list[dict]:
        """BERT-cat's groups (:meth:`BertCat.optimizer_groups`)."""
        return self.scorer.optimizer_groups(bert_lr, head_lr)


class MaxP(nn.Module):
    """MaxP (slide 13; Dai & Callan 2019, §3): the best BERT-cat score of the document's windows.

    Args:
        bert: a :class:`BertCat` (e.g. trained on passages), what :class:`BertCat` builds one from, or a
            :class:`BiEncoder` (the best cosine of a window).
        num_layers: for a BERT, keep its first ``num_layers`` layers (``None``: all).
        size, stride: the windows' length and the step between their starts, in word pieces.
    """

    def __init__(
        self,
        bert: BertCat | BiEncoder | BertModel | BertForMaskedLM | str | os.PathLike,
        num_layers: int | None = None,
        size: int = MAXP_SIZE,
        stride: int = MAXP_STRIDE,
    ) -> None:
        super().__init__()
        self.scorer = as_scorer(bert, num_layers)
        if size < 1 or stride < 1:
            raise ValueError(f"parameters 'size' and 'stride' must be >= 1, got {size} and {stride}")
        positions, packing = _room(self.scorer, torch.ones(1, 1))
        if size + int(packing[0]) > positions:
            raise ValueError(f"a window of {size} pieces does not fit BERT's {positions} positions with a query")
        self.size, self.stride = size, stride

    def windows(self, doc_ids: torch.Tensor, doc_mask: torch.Tensor) -> Windows:
        """The documents' windows (:func:`document_windows` with this model's size and stride)."""
        return document_windows(doc_ids, doc_mask, self.size, self.stride)

    def window_scores(
        self, query_ids: torch.Tensor, query_mask: torch.Tensor, doc_ids: torch.Tensor, doc_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Every window's BERT-cat score ``[B, most]`` (−inf where a document has no such window) and its mask."""
        windows = self.windows(doc_ids, doc_mask)
        rows = windows.document
        scores = self.scorer(query_ids[rows], query_mask[rows], windows.ids, windows.mask)
        return windows.per_document(scores, -math.inf), windows.valid()

    def forward(
        self, query_ids: torch.Tensor, query_mask: torch.Tensor, doc_ids: torch.Tensor, doc_mask: torch.Tensor
    ) -> torch.Tensor:
        """One score per query–document pair, ``[B]``: the maximum over its windows."""
        scores, _ = self.window_scores(query_ids, query_mask, doc_ids, doc_mask)
        return scores.max(dim=1).values

    def optimizer_groups(self, bert_lr: float | None = None, head_lr: float | None = None) -> list[dict]:
        """BERT-cat's groups (:meth:`BertCat.optimizer_groups`)."""
        return self.scorer.optimizer_groups(bert_lr, head_lr)
