"""A model served in bfloat16: the clock's precision on a CPU with native bfloat16 arithmetic.

In the stored regime (chapter 3) a query pays for encoding itself, reading its candidates' stored vectors and the
interaction. On 2 CPU cores a MiniLM-sized query encoder is the largest of the three, and it is bound by reading its
weights (six layers of 1.8 million numbers for a query of ten pieces), not by arithmetic: the same layers in
bfloat16 read half the bytes, and on a CPU with native bfloat16 arithmetic (AVX-512 BF16 or AMX) take about half the
time. Index time and a model run whole are the opposite case — hundreds of pairs or passages of a hundred pieces a
batch, bound by arithmetic — and native bfloat16 arithmetic can speed them up too. So that every model is timed in
one precision (:mod:`lib.evaluation.clock`), :func:`served_in_bfloat16` serves any model in bfloat16:
:class:`BFloat16Model` runs its ``forward`` (a model run whole) under bfloat16 autocast and hands back float32 scores;
:class:`BFloat16Encoders`, for a storable model, also runs ``encode_query`` and ``encode_passages`` from a bfloat16
copy of its weights (embeddings, layers, layer norms and eq. 1's mix) and hands back float32 vectors, while the
interaction (``score_stored``: eq. 4–10 of TK) stays the original model's, in float32. What the vectors lose is
measured where the book uses it: the runs scored through the served model
(:func:`lib.evaluation.regimes.stored_run`) are what chapter 3 evaluates for its product-quantised TK. GPUs run
every model under bfloat16 autocast instead (:func:`lib.core.device.autocast`). On a CPU without native bfloat16
arithmetic it is slower, not faster, and the clock does not use it.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

#: What a storable model has: its passage and query sides apart, and the interaction over stored passages.
STORABLE: tuple[str, ...] = ("encode_passages", "encode_query", "score_stored")


class BFloat16Model(nn.Module):
    """``model`` run whole in bfloat16 (module docstring): ``forward`` under bfloat16 autocast — the parts the model
    keeps in float32 (the kernels of :mod:`lib.models.kernels`) stay float32 — its scores handed back in float32.
    Run whole, a batch holds tens of pairs of a hundred pieces, so casting the weights once a batch costs little
    beside the arithmetic."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        """The model's scores of a batch, its matrix products in bfloat16, as float32."""
        with torch.autocast(inputs[0].device.type, dtype=torch.bfloat16):
            return self.model(*inputs).float()


class BFloat16Encoders(BFloat16Model):
    """A storable ``model`` (``encode_passages``, ``encode_query``, ``score_stored``) with both its encoders run from a
    bfloat16 copy of its weights — a query of ten pieces would otherwise pay for casting every weight — and its
    interaction the original's, in float32 (module docstring); run whole, as :class:`BFloat16Model`. The copy is
    taken once, from ``model`` as it is now."""

    def __init__(self, model: nn.Module) -> None:
        missing = [name for name in STORABLE if not callable(getattr(model, name, None))]
        if missing:
            raise TypeError(f"{type(model).__name__} cannot store passages: it has no {', '.join(missing)}")
        super().__init__(model)
        self.half_model = copy.deepcopy(model).to(torch.bfloat16).eval()

    def encode_passages(self, doc_ids: torch.Tensor, doc_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The passage side (index time), in bfloat16; its vectors handed back in float32."""
        vectors, mask = self.half_model.encode_passages(doc_ids, doc_mask)
        return vectors.float(), mask

    def encode_query(self, query_ids: torch.Tensor, query_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The query side, in bfloat16; its vectors handed back in float32."""
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

    def score_rows(self, cosines: torch.Tensor, lengths: torch.Tensor, query_mask: torch.Tensor) -> torch.Tensor:
        """The original model's scoring from the match matrix's real columns (a TK's
        :meth:`lib.models.tk.TK.score_rows`), in float32."""
        return self.model.score_rows(cosines, lengths, query_mask)


def served_in_bfloat16(model: nn.Module) -> BFloat16Model:
    """``model`` served in bfloat16: :class:`BFloat16Encoders` for a storable model, :class:`BFloat16Model`
    otherwise."""
    storable = all(callable(getattr(model, name, None)) for name in STORABLE)
    return BFloat16Encoders(model) if storable else BFloat16Model(model)


__all__ = ["STORABLE", "BFloat16Encoders", "BFloat16Model", "served_in_bfloat16"]
