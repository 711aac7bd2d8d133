"""A storable model served with its encoders in bfloat16: the stored regime's query and index time at half the bytes.

In the stored regime (chapter 3) a query pays for encoding itself, reading its candidates' stored vectors and the
interaction. On 2 CPU cores a MiniLM-sized query encoder is the largest of the three, and it is bound by reading its
weights (six layers of 1.8 million numbers for a query of ten pieces), not by arithmetic: the same layers in
bfloat16 read half the bytes, and on a CPU with native bfloat16 arithmetic (AVX-512 BF16 or AMX) take about half the
time. Index time is the opposite case — hundreds of passages of a hundred pieces a batch, bound by arithmetic — and
native bfloat16 arithmetic speeds it up too. :class:`BFloat16Encoders` serves a model that way: ``encode_query``
(and, with ``passages``, ``encode_passages``) runs a bfloat16 copy of the whole model (embeddings, layers, layer
norms and eq. 1's mix) and hands back float32 vectors; the interaction (``score_stored``: eq. 4–10 of TK) is always
the original model's, in float32. What the vectors lose is measured where the book uses it: the runs scored through
the served model (:func:`lib.evaluation.regimes.stored_run`) are what the chapter evaluates, not the float32
model's. GPUs already run every model under bfloat16 autocast (:func:`lib.core.device.autocast`); this is the
CPU's counterpart for the encoders alone. On a CPU without native bfloat16 arithmetic it is slower, not faster (the
profile settings ``regime_pq_query_bf16`` / ``regime_pq_index_bf16`` turn it off).
"""

from __future__ import annotations

import copy

import torch
from torch import nn


class BFloat16Encoders(nn.Module):
    """``model`` (a storable model: ``encode_passages``, ``encode_query``, ``score_stored``) with its query side (if
    ``query``) and its passage side (if ``passages``) run in bfloat16 (module docstring). The copy is taken once, from
    ``model`` as it is now."""

    def __init__(self, model: nn.Module, query: bool = True, passages: bool = False) -> None:
        super().__init__()
        missing = [name for name in ("encode_passages", "encode_query", "score_stored") if not hasattr(model, name)]
        if missing:
            raise TypeError(f"{type(model).__name__} cannot store passages: it has no {', '.join(missing)}")
        if not (query or passages):
            raise ValueError("parameters 'query' and 'passages' are both False: no side to serve in bfloat16")
        self.model = model
        self.query = query
        self.passages = passages
        self.half_model = copy.deepcopy(model).to(torch.bfloat16).eval()

    def encode_passages(self, doc_ids: torch.Tensor, doc_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The passage side (index time): in bfloat16 if ``passages`` (its vectors handed back in float32), else
        the original model's."""
        if not self.passages:
            return self.model.encode_passages(doc_ids, doc_mask)
        vectors, mask = self.half_model.encode_passages(doc_ids, doc_mask)
        return vectors.float(), mask

    def encode_query(self, query_ids: torch.Tensor, query_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The query side: in bfloat16 if ``query`` (its vectors handed back in float32), else the original model's."""
        if not self.query:
            return self.model.encode_query(query_ids, query_mask)
        vectors, mask = self.half_model.encode_query(query_ids, query_mask)
        return vectors.float(), mask

    def score_stored(self, query_vectors: torch.Tensor, query_mask: torch.Tensor, doc_vectors: torch.Tensor,
                     doc_mask: torch.Tensor) -> torch.Tensor:  # fmt: skip
        """The original model's interaction over stored passages (float32)."""
        return self.model.score_stored(query_vectors, query_mask, doc_vectors, doc_mask)

    @property
    def scores_from_match(self) -> bool:
        """Whether the original model scores a stored passage from eq. 4's cosines alone (a TK's)."""
        return bool(getattr(self.model, "scores_from_match", False))

    def score_match(self, match: torch.Tensor, query_mask: torch.Tensor, doc_mask: torch.Tensor) -> torch.Tensor:
        """The original model's scoring from a match matrix (a TK's :meth:`lib.models.tk.TK.score_match`)."""
        return self.model.score_match(match, query_mask, doc_mask)


def served_in_bfloat16(model: nn.Module, query: bool, passages: bool) -> nn.Module:
    """``model`` with its query side (if ``query``) and passage side (if ``passages``) in bfloat16
    (:class:`BFloat16Encoders`), or ``model`` itself when neither is."""
    return BFloat16Encoders(model, query, passages) if query or passages else model


__all__ = ["BFloat16Encoders", "served_in_bfloat16"]
