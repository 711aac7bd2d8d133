"""Running a BERT's Transformer layers by hand: what PreTTR needs to split BERT between two inputs.

:class:`transformers.BertModel` runs embeddings and all layers in one call. PreTTR (MacAvaney et al.,
SIGIR 2020, §3) runs the first layers on query and passage separately and the rest on their
concatenation, so it calls the embedding module and the layers itself: :func:`run_layers` with the
additive attention mask of :func:`additive_mask` gives exactly what ``BertModel`` gives for the same
layers (tested). :func:`starting_bert` is the encoder PreTTR and ColBERT start from.
"""

from __future__ import annotations

import os

import torch
from torch import nn
from transformers import BertModel

from lib.models.bert_cat import keep_layers
from lib.representations.bert import load_bert


def starting_bert(bert: BertModel | str | os.PathLike, num_layers: int | None) -> BertModel:
    """The encoder a split model starts from: ``bert`` (or loaded from its folder), cut to its first
    ``num_layers`` layers (``None``: all), without its pooler (a split model scores no pooled vector)."""
    if isinstance(bert, str | os.PathLike):
        bert = load_bert(bert)
    if not isinstance(bert, BertModel):
        raise TypeError(f"parameter 'bert' must be a BertModel or a path, got {type(bert)}")
    if num_layers is not None:
        keep_layers(bert, num_layers)
    bert.pooler = None
    return bert


def bert_and_head_groups(bert: nn.Module, head: list[nn.Parameter], bert_lr: float, head_lr: float) -> list[dict]:
    """Two Adam groups: ``bert`` (the encoder, ``bert_lr``) and ``head`` (the layers added on top, ``head_lr``)."""
    return [
        {"params": list(bert.parameters()), "lr": bert_lr, "name": "bert"},
        {"params": head, "lr": head_lr, "name": "head"},
    ]


def additive_mask(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """BERT's attention mask ``[B, 1, 1, T]``: 0 where ``mask`` is true, the dtype's minimum elsewhere."""
    blocked = torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(~mask.bool(), torch.finfo(dtype).min)
    return blocked[:, None, None, :]


def run_layers(layers: nn.ModuleList | list[nn.Module], hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``hidden`` ``[B, T, H]`` through ``layers`` (BERT layers) with keys masked by ``mask`` ``[B, T]``."""
    attention = additive_mask(mask, hidden.dtype)
    for layer in layers:
        output = layer(hidden, attention_mask=attention)
        hidden = output[0] if isinstance(output, tuple) else output
    return hidden
