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
  0.5, as in the authors' code.
- **Both of TK's pooling paths** (eq. 7–8) are kept; the length path divides by the number of kept
  terms, the length an index of kept terms knows. The authors' TK-Sparse scored the log path only.
- **λ** (:data:`SPARSITY_WEIGHT`, the ``lecture`` profile section) is the book's: it is normalised by
  the number of real passage terms, so that it does not depend on the batch or the passage lengths.

How the gate is trained — so that λ sets a share of removed terms instead of acting as an on/off switch
(a gate trained like every "other" layer at 10⁻³ moved with all the others once the penalty's sign
dominated, and a gate whose ReLU reached 0 never came back):

- **Its own Adam group** (``gate``: ``W₁``, ``b₁``, ``w₂``, ``b₂``, ``α_s``) at :data:`GATE_LR`
  (:meth:`TKSparse.optimizer_groups`); TK's other layers keep TK's rates. The authors' 10⁻⁴ removed nothing within
  the book's 1,000 steps, 10⁻² collapsed to removing everything; 10⁻³ (the book's rate for the word models) is the
  book's, chosen on validation.
- **λ ramped** from 0 to its value over the first :data:`SPARSITY_RAMP_STEPS` training steps, at most
  :data:`MAX_RAMP_SHARE` of the schedule (a step is a forward pass in training mode, counted in the buffer
  ``steps_seen``, so a resumed run continues the ramp),
  so the ranking loss shapes the gates before the penalty weighs fully.
- **A gate that cannot die**: the forward pass is the ReLU, but the *ranking* gradient reaches a gate's
  pre-activation also where it is ≤ 0, scaled by :data:`DEAD_GATE_SLOPE` (a straight-through slope, the role of
  the authors' unused ``reanimate``); a removed term stays in the kernel sums with weight 0 during training, so
  its kernels tell the gate what it would add. The L1 penalty is on the true ReLU output: it pushes no gate below
  0. Scoring is unchanged: a gate at 0 removes its term.
- **Checkpoints that remove (nearly) everything are not eligible**: :meth:`GatedPassages.validation_records` gives
  the validator the share of the validation passages' terms removed, and a checkpoint removing at least
  :data:`MAX_REMOVED` of them cannot be chosen (every candidate would score alike); nor can one before the end of
  the ramp, trained under a smaller λ than its own (so a sweep does not mix the checkpoint's choice with λ; the
  trainer does not count such validations against its patience).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from lib.models.kernels import cosine_match_matrix, full_precision, length_normalise
from lib.models.tk import EMBEDDING_LR, OTHER_LR, TK, TKConfig, distinct_queries, param_groups, take_rows

#: The book's weight λ of the gates' L1 penalty (per real passage term): the one the book profile's sweep chose on
#: validation (lib.core.decisions, ``sparsity_weights``).
SPARSITY_WEIGHT = 10.0
#: Hidden width of the stopword gate (the authors' code).
GATE_WIDTH = 100
#: Adam rate of the gate's own group: the book's word-model rate, 10× the authors' 1e-4, which removed nothing in
#: TK-2's schedule on validation (lib.core.decisions, ``sparsity_weights``).
GATE_LR = 1e-3
#: Training steps over which λ rises linearly from 0 to its value.
SPARSITY_RAMP_STEPS = 300
#: The ramp takes at most this share of a training schedule (:meth:`GatedPassages.fit_schedule`): TK-2's 300 of
#: its 1,000 steps.
MAX_RAMP_SHARE = 0.3
#: The share of the ranking gradient that reaches a gate's pre-activation where it is ≤ 0.
DEAD_GATE_SLOPE = 0.1
#: A checkpoint whose gates remove at least this share of the validation passages' terms cannot be chosen.
MAX_REMOVED = 0.99


class _ReLUPassingGradient(torch.autograd.Function):
    """``ReLU(x)`` forward; backward, the gradient where ``x > 0`` and ``slope`` times it where ``x ≤ 0``."""

    @staticmethod
    def forward(ctx: Any, pre: torch.Tensor, slope: float) -> torch.Tensor:
        ctx.save_for_backward(pre)
        ctx.slope = slope
        return pre.clamp_min(0)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (pre,) = ctx.saved_tensors
        return grad * torch.where(pre > 0, torch.ones_like(grad), torch.full_like(grad, ctx.slope)), None


class GatedPassages:
    """The stopword gate of a TK (module docstring), as a mixin before a :class:`lib.models.tk.TK` (or a subclass such
    as :class:`lib.models.tk_bert.TKBert`) in the bases: the subclass calls :meth:`init_gate` after its TK's
    ``__init__``. It scores as TK does with the gate on the kernels; in training mode it keeps the batch's gates for
    :meth:`regularisation`; :meth:`encode_passages` stores only the kept terms, each stored vector's length its gate
    (:attr:`stored_weights`), which :meth:`score_weighted_match` reads beside eq. 4's cosines."""

    #: A stored vector's length is its gate: the cosines alone do not score a passage.
    scores_from_match = False
    #: A stored vector's length weighs its kernels: a product-quantised index stores it beside the codes
    #: (:meth:`score_weighted_match`).
    stored_weights = True

    def init_gate(self, dim: int, sparsity_weight: float, ramp_steps: int) -> None:
        """The gate's layers on ``dim``-d hybrid vectors, λ and its ramp (module docstring)."""
        if sparsity_weight < 0:
            raise ValueError(f"parameter 'sparsity_weight' must be >= 0, got {sparsity_weight}")
        if ramp_steps < 0:
            raise ValueError(f"parameter 'ramp_steps' must be >= 0, got {ramp_steps}")
        self.sparsity_weight, self.ramp_steps = float(sparsity_weight), int(ramp_steps)
        self.stop_alpha = nn.Parameter(torch.tensor(0.5))
        self.gate_hidden = nn.Linear(dim, GATE_WIDTH)
        self.gate_out = nn.Linear(GATE_WIDTH, 1)
        nn.init.constant_(self.gate_out.bias, 1.0)
        self.register_buffer("steps_seen", torch.zeros((), dtype=torch.long))
        self._last_gates: tuple[torch.Tensor, torch.Tensor] | None = None

    def gate_parameters(self) -> list[nn.Parameter]:
        """The gate's parameters (``α_s``, ``W₁``, ``b₁``, ``w₂``, ``b₂``): their own Adam group."""
        return [self.stop_alpha, *self.gate_hidden.parameters(), *self.gate_out.parameters()]

    def _gate_inputs(self, doc_ids: torch.Tensor, doc_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The passage's hybrid vectors (eq. 1, the TK's own mix) ``[N, Ld, D]`` and its gates' pre-activations
        ``[N, Ld]``."""
        embeddings, context = self.embed_and_context(doc_ids, doc_mask)
        vectors = self._mix(embeddings, context, doc_mask)
        stop_input = self.stop_alpha * embeddings + (1 - self.stop_alpha) * context
        return vectors, self.gate_out(torch.tanh(self.gate_hidden(stop_input))).squeeze(-1)

    def gates(self, doc_ids: torch.Tensor, doc_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The passage's hybrid vectors (eq. 1) ``[N, Ld, D]`` and its gates ``s_i`` ``[N, Ld]`` (0 at padding),
        whose ranking gradient also reaches a gate at 0 (:data:`DEAD_GATE_SLOPE`, module docstring)."""
        doc_mask = doc_mask.bool()
        vectors, pre = self._gate_inputs(doc_ids, doc_mask)
        return vectors, _ReLUPassingGradient.apply(pre, DEAD_GATE_SLOPE) * doc_mask

    def forward(
        self, query_ids: torch.Tensor, query_mask: torch.Tensor, doc_ids: torch.Tensor, doc_mask: torch.Tensor
    ) -> torch.Tensor:
        """One score per pair, ``[B]``: TK's score with every passage term's kernels weighted by its gate. In
        training mode it counts the step and keeps the batch's gates (their true ReLU) for :meth:`regularisation`."""
        query_mask, doc_mask = query_mask.bool(), doc_mask.bool()
        distinct_ids, distinct_mask, row_query = distinct_queries(query_ids, query_mask)
        query_vectors = take_rows(self.contextualise(distinct_ids, distinct_mask), row_query)
        doc_vectors, pre = self._gate_inputs(doc_ids, doc_mask)
        gate = _ReLUPassingGradient.apply(pre, DEAD_GATE_SLOPE) * doc_mask
        if self.training:
            self.steps_seen += 1
            self._last_gates = (torch.relu(pre) * doc_mask, doc_mask)
        return self.score_gated(query_vectors, query_mask, doc_vectors, doc_mask, gate)

    def score_gated(
        self,
        query_vectors: torch.Tensor,
        query_mask: torch.Tensor,
        doc_vectors: torch.Tensor,
        doc_mask: torch.Tensor,
        gate: torch.Tensor,
    ) -> torch.Tensor:
        """Eq. 4–10 with the gate ``[B, Ld]`` weighing each passage term's kernel activations (module docstring)."""
        with full_precision(doc_vectors.device):
            match = cosine_match_matrix(query_vectors, doc_vectors, query_mask, doc_mask)
            return self.score_weighted_match(match, query_mask, doc_mask, gate)

    def score_weighted_match(
        self, match: torch.Tensor, query_mask: torch.Tensor, doc_mask: torch.Tensor, weights: torch.Tensor
    ) -> torch.Tensor:
        """Eq. 5–10 from the match matrix of eq. 4 ``[B, Lq, Ld]`` with a weight per passage term ``[B, Ld]`` (its
        gate): every real term of ``doc_mask`` enters the kernel sums with its weight (a weight of 0 adds nothing),
        and the length path (eq. 8) divides by the number of kept terms (weight > 0). A product-quantised index hands
        it the match matrix from its codes and the stored lengths as the weights."""
        with full_precision(match.device):
            weights = weights.float()
            pooled = self.kernel_pooling(match, query_mask, doc_mask, doc_weights=weights)
            kept = doc_mask & (weights > 0)
            length = length_normalise(pooled.kernel_sums, query_mask, kept, self.kernel_pooling.length_plus_one)
            _, log_weighted, len_weighted = self._weighted(replace(pooled, length=length))
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
        """``λ_t · mean_i s_i`` over the real passage terms of the last training batch (the L1 penalty), with
        ``λ_t = λ · min(1, t / ramp_steps)`` at training step ``t`` (the ramp of the module docstring)."""
        if self._last_gates is None:
            raise RuntimeError("regularisation() needs a forward pass in training mode first")
        gate, mask = self._last_gates
        self._last_gates = None
        return self.current_weight() * gate.sum() / mask.sum().clamp(min=1)

    def fit_schedule(self, max_steps: int) -> None:
        """Fit the ramp to a training schedule of ``max_steps`` steps (the trainer calls it): at most
        :data:`MAX_RAMP_SHARE` of it, so that a short schedule (the ``smoke`` profile's few steps) reaches its λ and
        an eligible checkpoint; λ itself is unchanged."""
        self.ramp_steps = min(self.ramp_steps, round(MAX_RAMP_SHARE * max_steps))

    def training_settings(self) -> dict[str, float | int]:
        """What a resumed training run must share with the interrupted one (its fingerprint): λ and the ramp."""
        return {"sparsity_weight": self.sparsity_weight, "ramp_steps": self.ramp_steps}

    def current_weight(self) -> float:
        """λ at the current training step: ramped from 0 over ``ramp_steps`` steps (0 steps: λ at once)."""
        if self.ramp_steps == 0:
            return self.sparsity_weight
        return self.sparsity_weight * min(1.0, int(self.steps_seen) / self.ramp_steps)

    @torch.no_grad()
    def removed_share(self, tokenizer: Any, texts: Sequence[str], max_length: int, batch_size: int = 64) -> float:
        """The share of the real terms of ``texts`` (each cut at ``max_length``) whose gate is 0."""
        removed = real = 0
        device = next(self.parameters()).device
        for start in range(0, len(texts), batch_size):
            ids, mask = tokenizer.encode(list(texts[start : start + batch_size]), max_length)
            ids, mask = ids.to(device), mask.to(device).bool()
            _, gate = self.gates(ids, mask)
            removed += int(((gate <= 0) & mask).sum())
            real += int(mask.sum())
        return removed / max(real, 1)

    def validation_records(self, tokenizer: Any, texts: Sequence[str], max_length: int) -> dict[str, float | bool]:
        """What a validation records besides the ranking (:class:`lib.training.pairwise.Validator`): the share of the
        validation passages' terms ``removed`` and whether the checkpoint is ``eligible`` to be chosen: it removes
        less than :data:`MAX_REMOVED`, and its λ has finished its ramp (a checkpoint before trained under a smaller
        λ, so a sweep would mix the checkpoint's choice with λ)."""
        removed = self.removed_share(tokenizer, texts, max_length)
        ramped = int(self.steps_seen) >= self.ramp_steps
        return {"removed": removed, "eligible": removed < MAX_REMOVED and ramped}


class TKSparse(GatedPassages, TK):
    """TK (eq. 1–10) with a learned stopword gate on the passage terms (:class:`GatedPassages`; the module
    docstring). Takes TK's arguments (its settings a :class:`lib.models.tk.TKConfig`), ``sparsity_weight`` (λ) and
    ``ramp_steps``."""

    def __init__(
        self,
        embeddings: torch.Tensor,
        freeze_embeddings: bool = False,
        config: TKConfig | None = None,
        *,
        sparsity_weight: float = SPARSITY_WEIGHT,
        ramp_steps: int = SPARSITY_RAMP_STEPS,
    ) -> None:
        TK.__init__(self, embeddings, freeze_embeddings, config)
        self.init_gate(self.embedding.embedding_dim, sparsity_weight, ramp_steps)

    def optimizer_groups(
        self, embedding_lr: float = EMBEDDING_LR, other_lr: float = OTHER_LR, gate_lr: float = GATE_LR
    ) -> list[dict]:
        """TK's Adam groups (:meth:`lib.models.tk.TK.optimizer_groups`) with the gate's parameters in a group
        ``gate`` of their own at ``gate_lr`` (module docstring)."""
        return with_gate_group(TK.optimizer_groups(self, embedding_lr, other_lr), self.gate_parameters(), gate_lr)


def with_gate_group(groups: list[dict], gate: list[nn.Parameter], gate_lr: float) -> list[dict]:
    """Adam ``groups`` with the ``gate`` parameters taken out of them and put in a group ``gate`` of their own at
    ``gate_lr`` (a group left empty dropped)."""
    taken = {id(param) for param in gate}
    groups = [{**group, "params": [param for param in group["params"] if id(param) not in taken]} for group in groups]
    return [group for group in groups if group["params"]] + param_groups({"gate": (gate, gate_lr)})
