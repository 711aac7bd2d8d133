"""Running a BERT's Transformer layers by hand: what PreTTR needs to split BERT between two inputs.

:class:`transformers.BertModel` runs embeddings and all layers in one call. PreTTR (MacAvaney et al.,
SIGIR 2020, §3) runs the first layers on query and passage separately and the rest on their
concatenation, so it calls the embedding module and the layers itself: :func:`run_layers` with the
additive attention mask of :func:`additive_mask` gives exactly what ``BertModel`` gives for the same
layers (tested).
"""

from __future__ import annotations

import torch
from torch import nn


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
