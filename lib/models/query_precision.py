"""A storable model served with its query side in bfloat16: the stored regime's query encoder at half the bytes.

In the stored regime (chapter 3) a query pays for encoding itself, reading its candidates' stored vectors and the
interaction. On 2 CPU cores a MiniLM-sized query encoder is the largest of the three, and it is bound by reading its
weights (six layers of 1.8 million numbers for a query of ten pieces), not by arithmetic: the same layers in
bfloat16 read half the bytes, and on a CPU with native bfloat16 arithmetic (AVX-512 BF16 or AMX) take about half the
time. :class:`QueryInBFloat16` serves a model that way: ``encode_query`` runs a bfloat16 copy of the whole model
(embeddings, layers, layer norms and eq. 1's mix) and hands back float32 vectors; the passage side
(``encode_passages``, computed once at index time) and the interaction (``score_stored``: eq. 4–10 of TK, always in
float32) are the original model's. What the query vectors lose is measured where the book uses it: the runs scored
through it (:func:`lib.evaluation.regimes.stored_run`) are what the chapter evaluates, not the float32 model's.
GPUs already run every model under bfloat16 autocast (:func:`lib.core.device.autocast`); this is the CPU's
counterpart for the query side alone.
"""

from __future__ import annotations

import copy

import torch
from torch import nn


class QueryInBFloat16(nn.Module):
    """``model`` (a storable model: ``encode_passages``, ``encode_query``, ``score_stored``) with its query side run
    in bfloat16 (module docstring). The copy is taken once, from ``model`` as it is now."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        missing = [name for name in ("encode_passages", "encode_query", "score_stored") if not hasattr(model, name)]
        if missing:
            raise TypeError(f"{type(model).__name__} cannot store passages: it has no {', '.join(missing)}")
        self.model = model
        self.query_model = copy.deepcopy(model).to(torch.bfloat16).eval()

    def encode_passages(self, doc_ids: torch.Tensor, doc_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The original model's passage side (index time: float32)."""
        return self.model.encode_passages(doc_ids, doc_mask)

    def encode_query(self, query_ids: torch.Tensor, query_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The query side in bfloat16, its vectors handed back in float32."""
        vectors, mask = self.query_model.encode_query(query_ids, query_mask)
        return vectors.float(), mask

    def score_stored(self, query_vectors: torch.Tensor, query_mask: torch.Tensor, doc_vectors: torch.Tensor,
                     doc_mask: torch.Tensor) -> torch.Tensor:  # fmt: skip
        """The original model's interaction over stored passages."""
        return self.model.score_stored(query_vectors, query_mask, doc_vectors, doc_mask)


__all__ = ["QueryInBFloat16"]
