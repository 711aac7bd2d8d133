"""Training a duo model (:class:`lib.models.duo_bert.DuoBert`) on a teacher's margins, resumable, early-stopped.

The duoBERT paper (Nogueira, Yang, Cho and Lin, 2019, §3.2) trains the duo model with cross-entropy on pairs of
MS MARCO's judged and unjudged passages. The book has no such labels for its training queries; it has chapter 2's
teacher-labelled triples ``(q, d⁺, d⁻)`` with the teacher's margin ``m = scale · (t⁺ − t⁻)``
(:mod:`lib.training.distillation`). The duo model reads both orders of every triple and its logit learns the
margin with its sign — Margin-MSE's target (Hofstätter et al., 2020, eq. 1) for a model that sees both passages
at once:

    L = ½ · mean( (z(q, d⁺, d⁻) − m)² + (z(q, d⁻, d⁺) + m)² ),

so ``p_ij = sigmoid(z_ij)`` is above ½ exactly where the model prefers ``d_i``. Every ``validate_every`` steps the
model re-ranks the top ``rerank_depth`` of the validation set's mono ranking (``validation.run``: the mono model's
scores) with SUM (:func:`lib.reranking.mono_duo.duo_rerank`) and early-stops on ``config.metric`` — the pairwise
trainer's validation, best weights, history and resumption (:class:`lib.training.pairwise.Validator`, the one
training loop :func:`lib.training.loop.run_loop`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from lib.core.device import amp_enabled, autocast, resolve_device
from lib.core.types import JudgedSet
from lib.evaluation.measures import evaluate
from lib.reranking.mono_duo import duo_rerank
from lib.reranking.scoring import ScoringOptions
from lib.training.distillation import Triple
from lib.training.loop import CHECKPOINT_NAME, BatchOrder, LoopSettings, run_loop
from lib.training.pairwise import TrainingConfig, TrainingResult, Validator, best_of, training_fingerprint, warmup_decay


def duo_margin_loss(forward: torch.Tensor, backward: torch.Tensor, margins: torch.Tensor) -> torch.Tensor:
    """The module docstring's loss: ``½ · mean((z⁺⁻ − m)² + (z⁻⁺ + m)²)`` over a batch of triples."""
    if not forward.shape == backward.shape == margins.shape:
        raise ValueError(
            f"shapes differ: logits {tuple(forward.shape)} / {tuple(backward.shape)}, margins {tuple(margins.shape)}"
        )
    return 0.5 * ((forward - margins).pow(2) + (backward + margins).pow(2)).mean()


class DuoValidator(Validator):
    """The pairwise trainer's validation hook, re-ranking the mono ranking's top ``rerank_depth`` with the duo model."""

    def metrics(self) -> dict[str, float]:
        config = self.config
        options = ScoringOptions(config.eval_batch_size, config.max_query_length, config.max_doc_length, config.amp)
        reranked, _ = duo_rerank(
            self.model, self.tokenizer, self.validation.queries, self.texts, self.validation.run, config.rerank_depth,
            options, self.device,
        )  # fmt: skip
        return evaluate(reranked, self.validation.qrels, config.measures)


def _batch_loss(
    model: nn.Module,
    tokenizer: Any,
    batch: Sequence[Triple],
    margins: Sequence[float],
    queries: Mapping[str, str],
    texts: Mapping[str, str],
    config: TrainingConfig,
    device: torch.device,
) -> torch.Tensor:
    """One forward pass over both orders of every triple of ``batch`` (``2·len(batch)`` rows)."""
    query_ids, query_mask = tokenizer.encode([queries[qid] for qid, _, _ in batch], config.max_query_length)
    passages = [texts[pid] for _, pid, _ in batch] + [texts[pid] for _, _, pid in batch]  # better ones, then worse
    doc_ids, doc_mask = tokenizer.encode(passages, config.max_doc_length)
    swapped = torch.roll(torch.arange(len(passages)), len(batch))  # worse ones, then better
    inputs = [
        tensor.to(device)
        for tensor in (query_ids.repeat(2, 1), query_mask.repeat(2, 1), doc_ids, doc_mask, doc_ids[swapped],
                       doc_mask[swapped])
    ]  # fmt: skip
    with autocast(device, config.amp):
        logits = model(*inputs).float().view(2, len(batch))
    return duo_margin_loss(logits[0], logits[1], torch.tensor(margins, dtype=torch.float32, device=device))


def train_duo(
    model: nn.Module,
    tokenizer: Any,
    triples: Sequence[Triple],
    margins: Sequence[float],
    queries: Mapping[str, str],
    texts: Mapping[str, str],
    validation: JudgedSet,
    config: TrainingConfig,
    checkpoint_dir: str | Path,
) -> TrainingResult:
    """Train the duo ``model`` on ``triples`` and the teacher's ``margins`` (module docstring), early-stopped on
    ``validation`` (its ``run``: the mono model's scores of its candidates; ``config.rerank_depth``: the duo's ``k``).

    ``config`` is the pairwise trainer's (:class:`lib.training.pairwise.TrainingConfig`: batch size in triples,
    steps, validation, patience, caps, rates, warm-up, ``start``; ``margin`` and ``bucket_batches`` unused); the
    checkpoint, resumption, ``best.pt`` and ``history.csv`` behave as :func:`lib.training.pairwise.train`'s.
    """
    if not triples or len(triples) != len(margins):
        raise ValueError(f"parameter 'triples' ({len(triples)}) needs one margin each, got {len(margins)} margins")
    device = resolve_device(config.device)
    amp_enabled(device, config.amp)  # validates the value
    checkpoint_dir = Path(checkpoint_dir)
    fingerprint = {"duo": True, **training_fingerprint(model, triples, validation, config, margins)}
    model.to(device)
    optimizer = torch.optim.Adam(model.optimizer_groups(**config.learning_rates))
    order = BatchOrder(len(triples), config.batch_size, config.seed)

    def loss_of_step(step: int) -> torch.Tensor:
        chosen = order.batch(step)
        batch, batch_margins = [triples[i] for i in chosen], [margins[i] for i in chosen]
        return _batch_loss(model, tokenizer, batch, batch_margins, queries, texts, config, device)

    settings = LoopSettings(
        steps=config.max_steps, checkpoint_every=config.validate_every, grad_clip=config.grad_clip, seed=config.seed,
        desc="train duo", progress=config.progress, mismatch=config.mismatch,
    )  # fmt: skip
    validator = DuoValidator(model, tokenizer, validation, texts, config, device, checkpoint_dir, len(triples))
    schedule = warmup_decay(optimizer, config.warmup_steps, config.max_steps) if config.warmup_steps else None
    state = run_loop(
        model, optimizer, loss_of_step, checkpoint_dir / CHECKPOINT_NAME, fingerprint, settings, schedule, validator
    )
    return best_of(model, state, checkpoint_dir)


__all__ = ["DuoValidator", "duo_margin_loss", "train_duo"]
