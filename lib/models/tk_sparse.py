"""TK-Sparse: TK with contextualised stopwords (Hofstätter et al., CIKM 2020; lecture 8, slides 30–33).

TK's passage side is query-independent, so an index can store each passage's contextualised vectors
(TK paper §3) — at a cost of one vector per passage term. TK-Sparse learns which stored terms no query
will need: after the contextualisation, a small network gives every passage term a score

``a_i = w₂ · tanh(W₁ · ŝ_i + b₁)``,  ``ŝ_i = α_s · t_i + (1 − α_s) · context(t_i)``

(its own mixer ``α_s`` of the plain embedding and the Transformer output, as eq. 1 mixes them for
matching), and a term whose score is at most a threshold ``τ`` is removed: its gate ``s_i = 1[a_i > τ]`` multiplies
every kernel activation of term ``i`` (eq. 6 with a weight per passage term, :func:`lib.models.kernels.kernel_sums`),
so a removed term adds nothing to the score, and an index need not store it (:meth:`GatedPassages.encode_passages`:
TK's own stored passage with the kept terms only).

The authors train ``s_i = ReLU(a_i + b₂)`` with an L1 penalty ``λ · mean_i s_i`` added to the ranking loss. **The
book trains a share instead of a penalty** (a deviation, book/deviations): at book scale the penalty acted as a
switch — λ moved every gate together (TK's log path is unchanged by a common scale of a passage's gates, so the
ranking loss barely resists it) until they closed at once, whatever the form of the gate (an L1 on a ReLU gate, an
expected L0 on a hard-concrete one, a penalty relative to each passage's largest gate; lib.core.decisions,
``removal_targets``). So the share of terms removed, ``t``, is the setting, and the gate learns only *which* terms:

- **τ is the ``t``-quantile of the scores** of the real passage terms of each training batch (its running average,
  :data:`THRESHOLD_MOMENTUM`, at scoring and indexing, as a batch norm's statistics), so the gate removes a share
  ``t`` of the terms it sees, more in one passage and fewer in another, and the scores' scale and offset do not
  matter (``b₂`` is left out: it would only shift τ). The gradient passes through τ too, so that the ranking, which
  would keep every term, cannot push all scores up together and leave the running τ behind.
- **Straight-through** (Bengio et al., 2013): the forward pass is the 0/1 gate, the backward pass that of
  ``sigmoid(a_i − τ)``, so the ranking gradient of every term — kept, or removed (it stays in the kernel sums with
  weight 0 during training, so its kernels tell the gate what it would add) — moves its score, most near τ.
- **``t`` ramped** from 0 over the first :data:`SPARSITY_RAMP_STEPS` training steps, at most :data:`MAX_RAMP_SHARE`
  of the schedule (a step is a forward pass in training mode, counted in the buffer ``steps_seen``, so a resumed run
  continues the ramp), so the ranking loss shapes the scores before many terms go.
- **Its own Adam group** (``gate``: ``W₁``, ``b₁``, ``w₂``, ``α_s``) at :data:`GATE_LR`
  (:meth:`TKSparse.optimizer_groups`); TK's other layers keep TK's rates.
- **Checkpoints before the end of the ramp are not eligible** (trained to a smaller share than their own), nor one
  removing at least :data:`MAX_REMOVED` of the validation passages' terms (:meth:`GatedPassages.validation_records`;
  the trainer does not count the first against its patience).

Kept from the authors: **the gate acts on the kernels, not on the match matrix** (zeroing the cosine would put the
removed term into the kernel at μ = 0 instead of removing it); the hidden width 100 and ``α_s`` starting at 0.5.
**Both of TK's pooling paths** (eq. 7–8) are kept; the length path divides by the number of kept terms, the length an
index of kept terms knows. The authors' TK-Sparse scored the log path only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import torch
from torch import nn

from lib.models.kernels import cosine_match_matrix, full_precision, length_normalise
from lib.models.tk import EMBEDDING_LR, OTHER_LR, TK, TKConfig, distinct_queries, param_groups, take_rows

#: The book's share of passage terms the gate removes: within 0.01 of TK-2 on validation in the book profile's probe
#: (lib.core.decisions, ``removal_targets``); chapter 8's sweep chooses among its targets on validation.
REMOVAL_TARGET = 0.3
#: Hidden width of the stopword gate (the authors' code).
GATE_WIDTH = 100
#: Adam rate of the gate's own group: the book's word-model rate.
GATE_LR = 1e-3
#: Training steps over which the removed share rises linearly from 0 to its target.
SPARSITY_RAMP_STEPS = 300
#: The ramp takes at most this share of a training schedule (:meth:`GatedPassages.fit_schedule`): TK-2's 300 of
#: its 1,000 steps.
MAX_RAMP_SHARE = 0.3
#: The weight of a training batch's quantile in the running threshold used at scoring (a batch norm's default).
THRESHOLD_MOMENTUM = 0.1
#: A checkpoint whose gates remove at least this share of the validation passages' terms cannot be chosen.
MAX_REMOVED = 0.99
#: The gate's form, in a checkpoint's fingerprint (a checkpoint of another form is not resumed).
GATE_FORM = "kept above the target share's quantile, straight-through"


class _StraightThroughGate(torch.autograd.Function):
    """``1[x > 0]`` forward; backward, the derivative of ``sigmoid(x)`` (the module docstring's straight-through)."""

    @staticmethod
    def forward(ctx: Any, above: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(above)
        return (above > 0).to(above.dtype)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (above,) = ctx.saved_tensors
        smooth = torch.sigmoid(above.float())
        return grad * (smooth * (1 - smooth)).to(grad.dtype)


def quantile_threshold(scores: torch.Tensor, mask: torch.Tensor, share: float) -> torch.Tensor:
    """The ``share``-quantile of the real terms' ``scores`` (``mask``): at most ``share`` of them lie at or below it
    (−∞ for a share of 0: nothing removed). It is one of the scores, and the gradient passes through it: a gate
    ``1[a_i > τ]`` then sees no common shift of the scores, so the ranking cannot drift them all up together."""
    if share <= 0:
        return torch.tensor(float("-inf"), device=scores.device)
    real = scores.float()[mask]
    count = int(share * real.numel())
    if count == 0:
        return torch.tensor(float("-inf"), device=scores.device)
    return real.kthvalue(count).values


def fitted_ramp(ramp_steps: int, max_steps: int) -> int:
    """The ramp a schedule of ``max_steps`` steps trains with: ``ramp_steps``, at most :data:`MAX_RAMP_SHARE` of the
    schedule (:meth:`GatedPassages.fit_schedule`)."""
    return min(ramp_steps, round(MAX_RAMP_SHARE * max_steps))


class GatedPassages:
    """The stopword gate of a TK (module docstring), as a mixin before a :class:`lib.models.tk.TK` (or a subclass such
    as :class:`lib.models.tk_bert.TKBert`) in the bases: the subclass calls :meth:`init_gate` after its TK's
    ``__init__``. It scores as TK does with the gate on the kernels; :meth:`encode_passages` stores only the kept
    terms, which TK's own stored scoring reads (a kept term weighs 1)."""

    def init_gate(self, dim: int, removal_target: float, ramp_steps: int) -> None:
        """The gate's layers on ``dim``-d hybrid vectors, the share of terms to remove and its ramp (module
        docstring)."""
        if not 0 <= removal_target < MAX_REMOVED:
            raise ValueError(f"parameter 'removal_target' must be in [0, {MAX_REMOVED}), got {removal_target}")
        if ramp_steps < 0:
            raise ValueError(f"parameter 'ramp_steps' must be >= 0, got {ramp_steps}")
        self.removal_target, self.ramp_steps = float(removal_target), int(ramp_steps)
        self.stop_alpha = nn.Parameter(torch.tensor(0.5))
        self.gate_hidden = nn.Linear(dim, GATE_WIDTH)
        self.gate_out = nn.Linear(GATE_WIDTH, 1, bias=False)
        self.register_buffer("steps_seen", torch.zeros((), dtype=torch.long))
        self.register_buffer("threshold", torch.tensor(float("-inf")))

    def gate_parameters(self) -> list[nn.Parameter]:
        """The gate's parameters (``α_s``, ``W₁``, ``b₁``, ``w₂``): their own Adam group."""
        return [self.stop_alpha, *self.gate_hidden.parameters(), *self.gate_out.parameters()]

    def _gate_inputs(self, doc_ids: torch.Tensor, doc_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The passage's hybrid vectors (eq. 1, the TK's own mix) ``[N, Ld, D]`` and its terms' scores ``a_i``
        ``[N, Ld]``."""
        embeddings, context = self.embed_and_context(doc_ids, doc_mask)
        vectors = self._mix(embeddings, context, doc_mask)
        stop_input = self.stop_alpha * embeddings + (1 - self.stop_alpha) * context
        return vectors, self.gate_out(torch.tanh(self.gate_hidden(stop_input))).squeeze(-1)

    def gates(self, doc_ids: torch.Tensor, doc_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The passage's hybrid vectors (eq. 1) ``[N, Ld, D]`` and its gates ``s_i`` ``[N, Ld]`` at the running
        threshold (1: kept, 0: removed or padding)."""
        doc_mask = doc_mask.bool()
        vectors, scores = self._gate_inputs(doc_ids, doc_mask)
        return vectors, ((scores > self.threshold) & doc_mask).to(vectors.dtype)

    def forward(
        self, query_ids: torch.Tensor, query_mask: torch.Tensor, doc_ids: torch.Tensor, doc_mask: torch.Tensor
    ) -> torch.Tensor:
        """One score per pair, ``[B]``: TK's score with every passage term's kernels weighted by its gate. In
        training mode τ is the batch's quantile at the ramp's current target (the running threshold follows it), and
        the step is counted; otherwise τ is the running threshold."""
        query_mask, doc_mask = query_mask.bool(), doc_mask.bool()
        distinct_ids, distinct_mask, row_query = distinct_queries(query_ids, query_mask)
        query_vectors = take_rows(self.contextualise(distinct_ids, distinct_mask), row_query)
        doc_vectors, scores = self._gate_inputs(doc_ids, doc_mask)
        threshold = self.threshold
        if self.training:
            self.steps_seen += 1
            threshold = quantile_threshold(scores, doc_mask, self.current_target())
            self._follow(threshold)
        gate = _StraightThroughGate.apply(scores - threshold) * doc_mask
        with full_precision(doc_vectors.device):
            match = cosine_match_matrix(query_vectors, doc_vectors, query_mask, doc_mask)
            return self._score_gated_match(match, query_mask, doc_mask, gate)

    @torch.no_grad()
    def _follow(self, threshold: torch.Tensor) -> None:
        """Move the running threshold towards a training batch's (:data:`THRESHOLD_MOMENTUM`); the first finite one is
        taken as it is."""
        if not torch.isfinite(threshold):
            return
        if not torch.isfinite(self.threshold):
            self.threshold.copy_(threshold.detach())
        else:
            self.threshold.lerp_(threshold.detach().to(self.threshold.dtype), THRESHOLD_MOMENTUM)

    def _score_gated_match(
        self, match: torch.Tensor, query_mask: torch.Tensor, doc_mask: torch.Tensor, gate: torch.Tensor
    ) -> torch.Tensor:
        """Eq. 5–10 from the match matrix of eq. 4 ``[B, Lq, Ld]`` with a gate per passage term ``[B, Ld]``: every
        real term enters the kernel sums with its gate as weight (a removed term adds nothing, but its kernels reach
        the gate's gradient), and the length path (eq. 8) divides by the number of kept terms."""
        with full_precision(match.device):
            gate = gate.float()
            pooled = self.kernel_pooling(match, query_mask, doc_mask, doc_weights=gate)
            kept = doc_mask & (gate > 0)
            length = length_normalise(pooled.kernel_sums, query_mask, kept, self.kernel_pooling.length_plus_one)
            _, log_weighted, len_weighted = self._weighted(replace(pooled, length=length))
            return self.beta.float() * log_weighted.sum(dim=-1) + self.gamma.float() * len_weighted.sum(dim=-1)

    def encode_passages(self, doc_ids: torch.Tensor, doc_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """What an index stores: the passage's hybrid vectors (eq. 1) ``[N, Ld, D]`` and the mask of its kept terms
        ``[N, Ld]`` (a removed term needs no storage); TK's stored scoring reads them as TK's own."""
        vectors, gate = self.gates(doc_ids, doc_mask)
        return vectors, gate > 0

    def fit_schedule(self, max_steps: int) -> None:
        """Fit the ramp to a training schedule of ``max_steps`` steps (the trainer calls it): at most
        :data:`MAX_RAMP_SHARE` of it, so that a short schedule (the ``smoke`` profile's few steps) reaches its target
        and an eligible checkpoint; the target itself is unchanged."""
        self.ramp_steps = fitted_ramp(self.ramp_steps, max_steps)

    def training_settings(self) -> dict[str, float | int | str]:
        """What a resumed training run must share with the interrupted one (its fingerprint): the target, the ramp and
        the gate's form."""
        return {"removal_target": self.removal_target, "ramp_steps": self.ramp_steps, "gate": GATE_FORM}

    def current_target(self) -> float:
        """The removal target at the current training step: ramped from 0 over ``ramp_steps`` steps (0 steps: the
        target at once)."""
        if self.ramp_steps == 0:
            return self.removal_target
        return self.removal_target * min(1.0, int(self.steps_seen) / self.ramp_steps)

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
        less than :data:`MAX_REMOVED`, and its target has finished its ramp (a checkpoint before was trained to a
        smaller share, so a sweep would mix the checkpoint's choice with the target)."""
        removed = self.removed_share(tokenizer, texts, max_length)
        ramped = int(self.steps_seen) >= self.ramp_steps
        return {"removed": removed, "eligible": removed < MAX_REMOVED and ramped}


class TKSparse(GatedPassages, TK):
    """TK (eq. 1–10) with a learned stopword gate on the passage terms (:class:`GatedPassages`; the module
    docstring). Takes TK's arguments (its settings a :class:`lib.models.tk.TKConfig`), ``removal_target`` (the share
    of terms to remove) and ``ramp_steps``."""

    def __init__(
        self,
        embeddings: torch.Tensor,
        freeze_embeddings: bool = False,
        config: TKConfig | None = None,
        *,
        removal_target: float = REMOVAL_TARGET,
        ramp_steps: int = SPARSITY_RAMP_STEPS,
    ) -> None:
        TK.__init__(self, embeddings, freeze_embeddings, config)
        self.init_gate(self.embedding.embedding_dim, removal_target, ramp_steps)

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
