"""Running a BERT's Transformer layers by hand: what PreTTR needs to split BERT between two inputs.

:class:`transformers.BertModel` runs embeddings and all layers in one call. PreTTR (MacAvaney et al.,
SIGIR 2020, §3) runs the first layers on query and passage separately and the rest on their
concatenation, so it calls the embedding module and the layers itself: :func:`run_layers` with the
additive attention mask of :func:`additive_mask` gives exactly what ``BertModel`` gives for the same
layers (tested). :func:`starting_bert` is the encoder PreTTR and ColBERT start from.

A re-ranker that scores the ``[CLS]`` vector (BERT-cat, PreTTR) needs only that row of the last layer:
:func:`cls_of_layer` computes every position's keys and values but the attention, the feed-forward
block and the layer norms for position 0 alone — about a sixth of a layer's work instead of all of it,
the same vector up to float rounding (tested), and about a seventh less work for a 6-layer BERT-cat.
"""

from __future__ import annotations

import os

import torch
from torch import nn
from torch.nn import functional
from transformers import BertModel

from lib.representations.bert import load_bert


def keep_layers(bert: BertModel, num_layers: int) -> BertModel:
    """Cut ``bert`` to its first ``num_layers`` Transformer layers, in place (1 ≤ N ≤ its layers)."""
    layers = len(bert.encoder.layer)
    if not isinstance(num_layers, int) or not 1 <= num_layers <= layers:
        raise ValueError(f"parameter 'num_layers' must be an integer in 1..{layers}, got {num_layers!r}")
    bert.encoder.layer = bert.encoder.layer[:num_layers]
    bert.config.num_hidden_layers = num_layers
    return bert


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


def cls_of_layer(layer: nn.Module, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The ``[CLS]`` row ``[B, H]`` of one BERT layer on ``hidden`` ``[B, T, H]`` with keys masked by ``mask``
    ``[B, T]``: ``run_layers([layer], hidden, mask)[:, 0]``, computing the keys and values of every position
    and everything else for position 0 only (dropout as the layer's, in training)."""
    attention = layer.attention.self
    batch, length, _ = hidden.shape
    heads, size = attention.num_attention_heads, attention.attention_head_size
    cls = hidden[:, :1]
    query = attention.query(cls).view(batch, 1, heads, size).transpose(1, 2)
    key = attention.key(hidden).view(batch, length, heads, size).transpose(1, 2)
    value = attention.value(hidden).view(batch, length, heads, size).transpose(1, 2)
    context = functional.scaled_dot_product_attention(
        query, key, value, attn_mask=additive_mask(mask, hidden.dtype),
        dropout_p=attention.dropout.p if attention.training else 0.0, scale=attention.scaling,
    )  # fmt: skip
    attended = layer.attention.output(context.transpose(1, 2).reshape(batch, 1, heads * size), cls)
    return layer.output(layer.intermediate(attended), attended)[:, 0]


def cls_vector(layers: nn.ModuleList | list[nn.Module], hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``run_layers(layers, hidden, mask)[:, 0]`` with the last layer's ``[CLS]`` row alone (:func:`cls_of_layer`);
    no layer: ``hidden[:, 0]``."""
    if len(layers) == 0:
        return hidden[:, 0]
    return cls_of_layer(layers[-1], run_layers(layers[:-1], hidden, mask), mask)
