"""TILDEv2: contextualised exact term matching, one weight per passage token (Zhuang & Zuccon 2021, §3).

TILDEv2 keeps TILDE's promise — no neural network at query time — but stores far less: instead of a
likelihood for every vocabulary piece, BERT gives each *passage token* one non-negative weight,

    w_j = ReLU(W · h_j + b)          (h_j: BERT's output vector at passage position j),

and a query is scored by exact matching of its pieces:

    s(q, d) = Σ_{i=1..|q|} max_{j : d_j = q_i} w_j      (0 for a query piece the passage lacks).

Only the passage's own pieces need storing (with the maximum weight of each), so the index is a
sparse vector per passage (:mod:`lib.reranking.tilde_v2_index`). Named choices, as the authors' code
(ielab/TILDE, ``modelingv2.py``, ``train_tildev2.py``): the passage input is ``[CLS] pieces [SEP]``
(weights of ``[CLS]`` and ``[SEP]`` are not matched); the query is its word pieces with stopwords and
symbols removed (:meth:`lib.models.tilde_vocabulary.TargetVocabulary.cleaned`, TILDE §4.3's cleaning),
duplicates kept (a repeated query piece counts twice); no passage expansion (the paper expands passages
with TILDE; the book states that deviation). Training: :mod:`lib.training.tilde_v2`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn
from transformers import BertModel

from lib.core.atomic import write_json
from lib.models.bi_encoder import wrap
from lib.representations.bert import load_bert, staged_folder
from lib.representations.text import DOC_MAX_LENGTH

#: The settings file that :meth:`TildeV2.save` writes beside the BERT checkpoint.
SETTINGS_NAME = "tilde_v2.json"
PROJECTION_NAME = "projection.pt"


def pad_pieces(pieces: Sequence[Sequence[int]], cap: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ``(ids, mask)`` of piece lists (each cut at ``cap``), at least one column wide."""
    rows = [list(ids)[:cap] for ids in pieces]
    width = max([len(row) for row in rows] + [1])
    ids = torch.zeros((len(rows), width), dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.bool)
    for index, row in enumerate(rows):
        ids[index, : len(row)] = torch.tensor(row, dtype=torch.long)
        mask[index, : len(row)] = True
    return ids, mask


def exact_match_scores(
    query_ids: torch.Tensor, query_mask: torch.Tensor, doc_ids: torch.Tensor, doc_weights: torch.Tensor
) -> torch.Tensor:
    """``s(q, d)`` of every query against every passage (module doc): ``FloatTensor[Q, D]``.

    ``query_ids``/``query_mask`` ``[Q, Lq]``; ``doc_ids``/``doc_weights`` ``[D, Ld]`` with weight 0 at padding.
    """
    match = query_ids[:, :, None, None] == doc_ids[None, None, :, :]  # Q × Lq × D × Ld
    best = (doc_weights[None, None, :, :] * match).amax(dim=3)  # Q × Lq × D
    return (best * query_mask[:, :, None]).sum(dim=1)


class TildeV2(nn.Module):
    """BERT plus one linear layer and a ReLU: a weight per passage token (module doc).

    Args:
        bert: a transformers ``BertModel``, or a folder / hub name for :func:`lib.representations.bert.load_bert`.
        max_passage_length: word pieces of a passage fed to BERT (the book's cap, 200).
    """

    def __init__(self, bert: BertModel | str | os.PathLike, max_passage_length: int = DOC_MAX_LENGTH) -> None:
        super().__init__()
        if isinstance(bert, str | os.PathLike):
            bert = load_bert(bert)
        if not isinstance(bert, BertModel):
            raise TypeError(f"parameter 'bert' must be a BertModel or a path, got {type(bert).__name__}")
        positions = int(bert.config.max_position_embeddings)
        if not 1 <= max_passage_length <= positions - 2:
            raise ValueError(
                f"parameter 'max_passage_length' must be in [1, {positions - 2}], got {max_passage_length}"
            )
        self.bert = bert
        self.projection = nn.Linear(bert.config.hidden_size, 1)
        nn.init.normal_(self.projection.weight, std=bert.config.initializer_range)  # as BERT's new weights
        nn.init.zeros_(self.projection.bias)
        self.max_passage_length = max_passage_length

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def settings(self) -> dict[str, int]:
        """The constructor arguments besides ``bert`` (what :meth:`save` records)."""
        return {"max_passage_length": self.max_passage_length}

    def train_only_top(self, layers: int | None) -> list[nn.Parameter]:
        """Freeze the embeddings and all but the top ``layers`` Transformer layers; the parameters left to train.

        ``None`` trains everything (the paper); the projection always trains.
        """
        depth = len(self.bert.encoder.layer)
        if layers is not None and not 1 <= layers <= depth:
            raise ValueError(f"parameter 'layers' must be in [1, {depth}] or None, got {layers}")
        frozen = 0 if layers is None else depth - layers
        for parameter in self.parameters():
            parameter.requires_grad = frozen == 0
        for module in [*self.bert.encoder.layer[frozen:], self.projection]:
            for parameter in module.parameters():
                parameter.requires_grad = True
        return [parameter for parameter in self.parameters() if parameter.requires_grad]

    def forward(self, doc_ids: torch.Tensor, doc_mask: torch.Tensor) -> torch.Tensor:
        """The weight ``w_j`` of every passage piece, ``FloatTensor[B, L]`` (0 at padding), from right-padded pieces."""
        wrapped, attention = wrap(doc_ids, doc_mask)
        hidden = self.bert(input_ids=wrapped, attention_mask=attention).last_hidden_state[:, 1 : doc_ids.shape[1] + 1]
        weights = torch.relu(self.projection(hidden).squeeze(-1)).float()
        return weights * doc_mask

    def piece_weights(self, pieces: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """``(ids, weights)`` of passages given as piece lists (cut at the cap), on the model's device."""
        ids, mask = pad_pieces(pieces, self.max_passage_length)
        ids, mask = ids.to(self.device), mask.to(self.device)
        return ids, self(ids, mask)

    def save(self, path: str | os.PathLike) -> Path:
        """Write BERT (``save_pretrained``), the projection and :data:`SETTINGS_NAME` into ``path``, atomically."""
        with staged_folder(path) as staging:
            self.bert.save_pretrained(staging)
            torch.save(self.projection.state_dict(), staging / PROJECTION_NAME)
            write_json(staging / SETTINGS_NAME, self.settings())
        return Path(path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> TildeV2:
        """A model written by :meth:`save`."""
        path = Path(path)
        settings = path / SETTINGS_NAME
        if not settings.is_file():
            raise FileNotFoundError(f"{settings}: no such file, so {path} is not a saved TILDEv2 model")
        model = cls(load_bert(path), **json.loads(settings.read_text(encoding="utf-8")))
        model.projection.load_state_dict(torch.load(path / PROJECTION_NAME, map_location="cpu", weights_only=True))
        return model


__all__ = ["SETTINGS_NAME", "TildeV2", "exact_match_scores", "pad_pieces"]
