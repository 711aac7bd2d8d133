"""TK-Sparse: TK with contextualised stopwords (Hofstätter et al., CIKM 2020; lecture 8, slides 30–33).

TK's passage side is query-independent, so an index can store each passage's contextualised vectors
(TK paper §3) — at a cost of one vector per passage term. TK-Sparse learns which stored terms no query
will need: after the contextualisation, a small gate gives every passage term a value

``s_i = ReLU(w₂ · tanh(W₁ · ŝ_i + b₁) + b₂)``,  ``ŝ_i = α_s · t_i + (1 − α_s) · context(t_i)``

(its own mixer ``α_s`` of the plain embedding and the Transformer output, as eq. 1 mixes them for
matching). ``s_i`` multiplies every kernel activation of term ``i`` (eq. 6 with a weight per passage
term, :func:`lib.models.kernels.kernel_sums`), so ``s_i = 0`` removes the term from the score, and an
index need not store it. Training adds an L1 penalty on the gates to the ranking loss,
``L = L_rank + λ · mean_i s_i`` over the real passage terms of the batch (:meth:`TKSparse.regularisation`).

Named choices:

- **The gate acts on the kernels, not on the match matrix** (as the authors' code): zeroing the
  cosine would put the removed term into the kernel at μ = 0 instead of removing it.
- ``b₂`` starts at 1 (every term kept), the hidden width of the gate is 100 and ``α_s`` starts at
  0.5, as in the authors' code. The gate is an "other" layer (rate 10⁻³, TK §4.3).
- **Both of TK's pooling paths** (eq. 7–8) are kept; the length path divides by the number of kept
  terms, the length an index of kept terms knows. The authors' TK-Sparse scored the log path only.
- **λ** (:data:`SPARSITY_WEIGHT`, the ``lecture`` profile section) is the book's: it is normalised by
  the number of real passage terms, so that it does not depend on the batch or the passage lengths.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from lib.models.kernels import cosine_match_matrix, full_precision
from lib.models.tk import TK, TKConfig, distinct_queries, take_rows

#: The book's weight λ of the gates' L1 penalty (per real passage term).
SPARSITY_WEIGHT = 0.5
#: Hidden width of the stopword gate (the authors' code).
GATE_WIDTH = 100


class TKSparse(TK):
    """TK (eq. 1–10) with a learned stopword gate on the passage terms; see the module docstring.

    Takes TK's arguments (its settings a :class:`lib.models.tk.TKConfig`) and ``sparsity_weight`` (λ). ``forward``
    scores as TK does with the gate on the kernels; in training mode it keeps the batch's gates for
    :meth:`regularisation`. :meth:`encode_passages` stores only the kept terms.
    """

    #: A stored vector's length is its gate: the cosines alone do not score a passage.
    scores_from_match = False

    def __init__(
        self,
        embeddings: torch.Tensor,
        freeze_embeddings: bool = False,
        config: TKConfig | None = None,
        *,
        sparsity_weight: float = SPARSITY_WEIGHT,
    ) -> None:
        super().__init__(embeddings, freeze_embeddings, config)
        if sparsity_weight < 0:
            raise ValueError(f"parameter 'sparsity_weight' must be >= 0, got {sparsity_weight}")
        dim = self.embedding.embedding_dim
        self.sparsity_weight = float(sparsity_weight)
        self.stop_alpha = nn.Parameter(torch.tensor(0.5))
        self.gate_hidden = nn.Linear(dim, GATE_WIDTH)
        self.gate_out = nn.Linear(GATE_WIDTH, 1)
        nn.init.constant_(self.gate_out.bias, 1.0)
        self._last_gates: tuple[torch.Tensor, torch.Tensor] | None = None

    def gates(self, doc_ids: torch.Tensor, doc_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The passage's hybrid vectors (eq. 1) ``[N, Ld, D]`` and its gates ``s_i`` ``[N, Ld]`` (0 at padding)."""
        doc_mask = doc_mask.bool()
        embeddings, context = self.embed_and_context(doc_ids, doc_mask)
        vectors = (self.alpha * embeddings + (1 - self.alpha) * context) * doc_mask.unsqueeze(-1)
        stop_input = self.stop_alpha * embeddings + (1 - self.stop_alpha) * context
        gate = torch.relu(self.gate_out(torch.tanh(self.gate_hidden(stop_input))).squeeze(-1))
        return vectors, gate * doc_mask

    def forward(
        self, query_ids: torch.Tensor, query_mask: torch.Tensor, doc_ids: torch.Tensor, doc_mask: torch.Tensor
    ) -> torch.Tensor:
        """One score per pair, ``[B]``: TK's score with every passage term's kernels weighted by its gate."""
        query_mask, doc_mask = query_mask.bool(), doc_mask.bool()
        distinct_ids, distinct_mask, row_query = distinct_queries(query_ids, query_mask)
        query_vectors = take_rows(self.contextualise(distinct_ids, distinct_mask), row_query)
        doc_vectors, gate = self.gates(doc_ids, doc_mask)
        if self.training:
            self._last_gates = (gate, doc_mask)
        return self.score_gated(query_vectors, query_mask, doc_vectors, doc_mask & (gate > 0), gate)

    def score_gated(
        self,
        query_vectors: torch.Tensor,
        query_mask: torch.Tensor,
        doc_vectors: torch.Tensor,
        doc_mask: torch.Tensor,
        gate: torch.Tensor,
    ) -> torch.Tensor:
        """Eq. 4–10 with the gate ``[B, Ld]`` weighing each passage term's kernel activations."""
        with full_precision(doc_vectors.device):
            match = cosine_match_matrix(query_vectors, doc_vectors, query_mask, doc_mask)
            pooled = self.kernel_pooling(match, query_mask, doc_mask, doc_weights=gate)
            _, log_weighted, len_weighted = self._weighted(pooled)
            return self.beta.float() * log_weighted.sum(dim=-1) + self.gamma.float() * len_weighted.sum(dim=-1)

    def encode_passages(self, doc_ids: torch.Tensor, doc_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """What an index stores: each kept term's unit vector times its gate, ``[N, Ld, D]``, and the
        mask of the kept terms (gate > 0), ``[N, Ld]``. A removed term needs no storage; the cosine
        ignores the length of a stored vector, which carries the gate."""
        vectors, gate = self.gates(doc_ids, doc_mask)
        return F.normalize(vectors, dim=-1) * gate.unsqueeze(-1), gate > 0

    def score_stored(
        self, query_vectors: torch.Tensor, query_mask: torch.Tensor, doc_vectors: torch.Tensor, doc_mask: torch.Tensor
    ) -> torch.Tensor:
        """One encoded query (:meth:`encode_query`, TK's) against ``N`` stored passages (:meth:`encode_passages`):
        each stored vector's length is its gate, ``[N]``."""
        count = doc_vectors.shape[0]
        doc_vectors = doc_vectors.to(query_vectors.dtype)
        gate = doc_vectors.float().norm(dim=-1)
        expanded = query_vectors.expand(count, -1, -1), query_mask.expand(count, -1)
        return self.score_gated(*expanded, doc_vectors, doc_mask.bool(), gate)

    def regularisation(self) -> torch.Tensor:
        """``λ · mean_i s_i`` over the real passage terms of the last training batch (the L1 penalty)."""
        if self._last_gates is None:
            raise RuntimeError("regularisation() needs a forward pass in training mode first")
        gate, mask = self._last_gates
        self._last_gates = None
        return self.sparsity_weight * gate.sum() / mask.sum().clamp(min=1)
