"""Training a re-ranker with the TK paper's recipe, resumable and deterministic on CPU.

The recipe (TK paper, §4 and §4.3): a **pairwise hinge loss** over (query, better passage, worse
passage) triples, **Adam** over the model's own parameter groups (``model.optimizer_groups()``:
10⁻⁴ for word embeddings and contextualisation, 10⁻³ elsewhere), batches of 64 pairs, 30 / 200
token caps for queries / passages, and **early stopping on the validation MRR@10**
(``TrainingConfig.metric``; the book profile validates on nDCG@10 over DL21's graded judgments; both are
always recorded). Validation re-ranks the first stage's top ``rerank_depth`` of a held-out slice of
the training queries (ARCHITECTURE.md, "Conventions").

- :func:`training_pairs` turns graded judgments and first-stage candidates into pairs.
- :func:`hinge_loss` is ``mean(max(0, margin - s⁺ + s⁻))``.
- :func:`warmup_decay` is the optional warm-up-and-decay schedule of the rates (BERT's fine-tuning).
- :func:`train` runs the loop; see its docstring for the checkpoint and resume contract. Given a
  teacher's ``margins`` for the pairs, it minimises Margin-MSE instead
  (:func:`lib.training.distillation.margin_mse`); given groups of a positive and several negatives with
  the teacher's ``teacher_scores``, the listwise KL (:func:`lib.training.distillation.listwise_kl`): the
  same loop, validation and early stopping.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from lib.core import distributed
from lib.core.atomic import atomic_write, write_csv
from lib.core.device import amp_enabled, autocast, resolve_device
from lib.core.types import JudgedSet, query_order, ranking_from_run
from lib.evaluation.measures import MEASURES, evaluate
from lib.reranking.scoring import ScoringOptions, rerank, score_candidates
from lib.training.distillation import Group, listwise_kl, margin_mse
from lib.training.loop import CHECKPOINT_NAME, LoopSettings, LoopState, run_loop

Pair = tuple[str, str, str]

BEST_NAME = "best.pt"
HISTORY_NAME = "history.csv"

# --- training pairs ------------------------------------------------------------------------------


def training_pairs(
    qrels: Mapping[str, Mapping[str, int]],
    candidates: Mapping[str, Iterable[str]],
    texts: Mapping[str, str],
    seed: int,
    max_pairs_per_query: int | None = None,
) -> list[Pair]:
    """(qid, better pid, worse pid) pairs from graded labels (TK paper §4; ARCHITECTURE.md, "Conventions").

    For every judged query, its labelled passages are its judged passages with their grades plus
    the **unjudged candidates of the first stage** (``candidates[qid]``: a run ``{pid: score}`` or
    any iterable of pids) with **grade 0**, the MS MARCO convention that an unjudged retrieved
    passage is non-relevant. Only passages with text in ``texts`` take part. Every pair of labelled
    passages with different grades gives one pair, the higher grade first (so a grade-3 passage
    beats grade 2, 1 and 0; grade 1 beats 0). Queries without a judgment are skipped; a query
    whose passages all have one grade gives no pairs.

    With ``max_pairs_per_query``, each query keeps a uniform random sample of that many of its
    pairs, drawn with a generator seeded by ``(seed, qid)`` (independent of Python's hash seed and
    of the other queries). The result is deterministic for a given ``seed``: queries in id order,
    each query's pairs by the better passage's grade (descending) and passage ids.
    """
    if max_pairs_per_query is not None and max_pairs_per_query < 1:
        raise ValueError(f"parameter 'max_pairs_per_query' must be >= 1 or None, got {max_pairs_per_query}")
    pairs: list[Pair] = []
    for qid in sorted(qrels, key=query_order):
        grades = {pid: int(grade) for pid, grade in qrels[qid].items() if pid in texts}
        for pid in candidates.get(qid, ()):
            if pid in texts and pid not in qrels[qid]:
                grades[pid] = 0
        ordered = sorted(grades, key=lambda pid: (-grades[pid], pid))
        query_pairs = [
            (qid, better, worse)
            for i, better in enumerate(ordered)
            for worse in ordered[i + 1 :]
            if grades[better] > grades[worse]
        ]
        if max_pairs_per_query is not None and len(query_pairs) > max_pairs_per_query:
            chosen = random.Random(f"{seed}:{qid}").sample(range(len(query_pairs)), max_pairs_per_query)
            query_pairs = [query_pairs[i] for i in sorted(chosen)]
        pairs.extend(query_pairs)
    return pairs


# --- the loss ------------------------------------------------------------------------------------


def hinge_loss(pos: torch.Tensor, neg: torch.Tensor, margin: float = 1.0) -> torch.Tensor:
    """The pairwise hinge loss of the TK paper (§4): ``mean(max(0, margin - pos + neg))``.

    ``pos`` and ``neg`` are the scores of the better and the worse passage of each pair.
    """
    return torch.clamp(margin - pos + neg, min=0.0).mean()


# --- configuration and results -------------------------------------------------------------------


@dataclass(frozen=True)
class TrainingConfig:
    """Settings of :func:`train` (defaults: the TK paper, §4.3, where it states them).

    Attributes:
        batch_size: pairs per optimizer step (paper: 64).
        max_steps: optimizer steps at most, and the step the learning rates decay to (``warmup_steps``).
        stop_at: the last step trained, with ``max_steps``' schedule unchanged (``None``: ``max_steps``) — a budget
            cut that trains a longer schedule's first steps only; a multiple of ``validate_every``, at most
            ``max_steps``. Written into the checkpoint's fingerprint only when set.
        validate_every: validate (and checkpoint) every this many steps, and at ``max_steps``.
        patience: stop after this many validations in a row without improvement of ``metric``
            (``None``: never stop early). The best weights are restored either way.
        metric: the validation measure for early stopping (paper: ``"MRR@10"``); MRR@10 and
            nDCG@10 are always recorded too.
        max_query_length, max_doc_length: token caps (paper: 30 and 200).
        seed: seeds Python, NumPy and torch at the start and the order of the pairs.
        device: ``"auto"`` (CUDA when available), ``"cpu"``, ``"cuda"``, … (see :func:`resolve_device`).
        amp: bf16 mixed precision: ``"auto"`` (CUDA only), ``True`` or ``False`` (see :func:`amp_enabled`).
        grad_clip: clip the gradients' global norm to this value (``None``: no clipping).
        rerank_depth: validation re-ranks the first stage's top this many candidates.
        eval_batch_size: pairs per scoring batch in validation (paper: 256 for non-BERT models, 4 for BERT).
        learning_rates: keyword arguments for ``model.optimizer_groups(**learning_rates)``, to
            override the model's paper learning rates.
        margin: the hinge loss margin.
        warmup_steps: with ``warmup_steps`` > 0 every Adam rate is scaled at step *s* (from 0) by
            ``min(1, (s + 1) / warmup_steps) · (max_steps − s) / max_steps``: a linear warm-up times a
            linear decay to zero at ``max_steps``, as in BERT's fine-tuning (Devlin et al., 2019, §A.2);
            ``0``: constant rates (the TK paper, §4.3).
        bucket_batches: batches of similar passage lengths (less padding, the same pairs per epoch):
            each run of ``bucket_batches`` batches of the seeded shuffle is sorted by the pair's longer
            passage, cut into batches again, and those batches are taken in a seeded order — a bucket
            iterator like AllenNLP's ``BucketIterator``. ``1``: the plain shuffle.
        start: what the model's weights were before training when they are not its own initialisation
            (chapter 8's PreTTR starts from chapter 2's fine-tuned BERT-cat: its checkpoint's sha256), so
            a checkpoint trained from other starting weights is not resumed. ``None`` (the default) adds
            nothing to the checkpoint's fingerprint.
        mismatch: what a checkpoint in ``checkpoint_dir`` written with other arguments (other pairs,
            margins, settings) means: ``"error"`` refuses it, ``"retrain"`` warns and trains afresh
            (:func:`lib.training.loop.check_fingerprint`).
        progress: show the progress bar.
    """

    batch_size: int = 64
    max_steps: int = 1000
    stop_at: int | None = None
    validate_every: int = 100
    patience: int | None = 5
    metric: str = "MRR@10"
    max_query_length: int = 30
    max_doc_length: int = 200
    seed: int = 42
    device: str = "auto"
    amp: bool | str = "auto"
    grad_clip: float | None = None
    rerank_depth: int = 100
    eval_batch_size: int = 256
    learning_rates: dict[str, float] = field(default_factory=dict)
    margin: float = 1.0
    warmup_steps: int = 0
    bucket_batches: int = 1
    start: str | None = None
    mismatch: str = "error"
    progress: bool = True

    def __post_init__(self) -> None:
        positive = (
            "batch_size",
            "max_steps",
            "validate_every",
            "max_query_length",
            "max_doc_length",
            "eval_batch_size",
            "bucket_batches",
        )
        for name in positive:
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"parameter '{name}' must be a positive integer, got {value!r}")
        if not isinstance(self.warmup_steps, int) or self.warmup_steps < 0:
            raise ValueError(f"parameter 'warmup_steps' must be a non-negative integer, got {self.warmup_steps!r}")
        if self.stop_at is not None and (
            not isinstance(self.stop_at, int)
            or not 1 <= self.stop_at <= self.max_steps
            or self.stop_at % self.validate_every
        ):
            raise ValueError(
                f"parameter 'stop_at' must be a multiple of validate_every ({self.validate_every}) in "
                f"[1, max_steps = {self.max_steps}] or None, got {self.stop_at!r}"
            )
        if self.patience is not None and (not isinstance(self.patience, int) or self.patience < 1):
            raise ValueError(f"parameter 'patience' must be a positive integer or None, got {self.patience!r}")
        if self.metric not in MEASURES:
            raise ValueError(f"parameter 'metric' must be one of {list(MEASURES)}, got {self.metric!r}")
        if not isinstance(self.rerank_depth, int) or self.rerank_depth < 1:
            raise ValueError(f"parameter 'rerank_depth' must be a positive integer, got {self.rerank_depth!r}")
        if self.grad_clip is not None and not self.grad_clip > 0:
            raise ValueError(f"parameter 'grad_clip' must be positive or None, got {self.grad_clip!r}")
        if self.amp != "auto" and not isinstance(self.amp, bool):
            raise ValueError(f"parameter 'amp' must be True, False or 'auto', got {self.amp!r}")
        if not isinstance(self.learning_rates, Mapping):
            raise ValueError(f"parameter 'learning_rates' must be a dict, got {self.learning_rates!r}")

    @property
    def measures(self) -> list[str]:
        """The validation measures recorded in the history: ``metric`` first, then MRR@10 and nDCG@10."""
        return list(dict.fromkeys([self.metric, "MRR@10", "nDCG@10"]))


#: Settings that may change between an interrupted run and its resumption (they do not change the
#: sequence of updates on one device): where it runs, mixed precision, the scoring batch size.
_RESUMABLE_CHANGES = ("device", "amp", "eval_batch_size", "mismatch", "progress")


@dataclass
class TrainingResult:
    """What :func:`train` returns.

    Attributes:
        best_step: the step whose weights scored best on validation.
        best_metric: that validation value of ``config.metric``.
        history: one row per validation: ``step, epoch, train_loss`` (mean since the previous
            validation), the validation measures, what the model records besides them (TK-Sparse: ``removed``,
            :meth:`Validator.records`), ``eligible`` (whether the checkpoint could be chosen), ``best`` (a new
            best), ``seconds`` (wall time since the start of training, summed over resumptions).
        best_path: the file with the best weights (a ``state_dict``; ``model.load_state_dict(torch.load(path))``).
        model: the model given to :func:`train`, with the best weights loaded, in eval mode.
        steps: the steps trained (``stop_at`` or ``max_steps`` unless stopped early).
        stopped_early: whether early stopping ended the run.
        checkpoint_path: the resumable checkpoint.
    """

    best_step: int
    best_metric: float
    history: pd.DataFrame
    best_path: Path
    model: nn.Module
    steps: int
    stopped_early: bool
    checkpoint_path: Path


# --- helpers -------------------------------------------------------------------------------------


def _digest(lines: Iterable[str]) -> str:
    hasher = hashlib.sha256()
    for line in lines:
        hasher.update(line.encode("utf-8"))
        hasher.update(b"\n")
    return hasher.hexdigest()


def training_fingerprint(
    model: nn.Module,
    pairs: Sequence[Pair | Group],
    validation: JudgedSet,
    config: TrainingConfig,
    margins: Sequence[float] | None,
    teacher_scores: Sequence[Sequence[float]] | None = None,
) -> dict:
    """What must not change between an interrupted run and its resumption (with a model's own training settings,
    where it has them: ``training_settings()``, TK-Sparse's removal target, ramp and gate form)."""
    settings = {key: value for key, value in asdict(config).items() if key not in _RESUMABLE_CHANGES}
    for optional in ("start", "stop_at"):  # checkpoints written before these fields existed stay resumable
        if settings[optional] is None:
            del settings[optional]
    settings["learning_rates"] = dict(sorted(settings["learning_rates"].items()))
    listwise = {} if teacher_scores is None else {"teacher_scores": _digest(repr(row) for row in teacher_scores)}
    own = getattr(model, "training_settings", None)
    listwise |= {"model_settings": own()} if callable(own) else {}
    return {
        "config": settings,
        "model": type(model).__qualname__,
        "parameters": _digest(f"{name}:{tuple(t.shape)}" for name, t in model.state_dict().items()),
        "pairs": _digest("\t".join(pair) for pair in pairs),
        "validation": _digest(f"{qid}\t{pid}" for qid in sorted(validation.run) for pid in sorted(validation.run[qid])),
        "margins": None if margins is None else _digest(repr(float(margin)) for margin in margins),
        **listwise,
    }


def _cpu_state(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: tensor.detach().to("cpu", copy=True) for name, tensor in model.state_dict().items()}


def _save(obj: Any, path: Path) -> None:
    with atomic_write(path, "wb") as handle:
        torch.save(obj, handle)


class _PairOrder:
    """The order in which training sees the pairs: an endless stream of seeded epoch shuffles.

    Position ``p`` of the stream is pair ``permutation(epoch = p // n)[p % n]``; the permutation of
    an epoch depends only on ``(seed, epoch)``. Step ``s`` (from 0) trains on positions
    ``[s·B, (s+1)·B)``, so the step number alone fixes the data order on resumption.
    """

    def __init__(self, n: int, seed: int) -> None:
        self.n = n
        self.seed = seed
        self._epoch = -1
        self._permutation: list[int] = []

    def _permutation_of(self, epoch: int) -> list[int]:
        if epoch != self._epoch:
            permutation = list(range(self.n))
            random.Random(f"pairs:{self.seed}:{epoch}").shuffle(permutation)
            self._epoch, self._permutation = epoch, permutation
        return self._permutation

    def batch(self, start: int, size: int) -> list[int]:
        return [self._permutation_of(p // self.n)[p % self.n] for p in range(start, start + size)]


class _BucketedOrder:
    """Batches of similar passage lengths over a :class:`_PairOrder` stream (``TrainingConfig.bucket_batches``).

    Steps ``[g·k, (g+1)·k)`` (``k`` = ``bucket``) share group ``g``: the stream positions
    ``[g·k·B, (g+1)·k·B)``, sorted by ``lengths`` (stable), cut into ``k`` batches of ``B``, and taken in
    the order of a shuffle seeded by ``(seed, g)``. The step number alone fixes the batch, so a
    resumed run sees the same batches; every pair of an epoch is still seen once per epoch (up to the
    groups that straddle an epoch's end).
    """

    def __init__(self, order: _PairOrder, lengths: np.ndarray, batch_size: int, bucket: int, seed: int) -> None:
        self.order, self.lengths, self.batch_size, self.bucket, self.seed = order, lengths, batch_size, bucket, seed
        self._group = -1
        self._batches: list[list[int]] = []

    def _batches_of(self, group: int) -> list[list[int]]:
        if group != self._group:
            size = self.batch_size * self.bucket
            chosen = sorted(self.order.batch(group * size, size), key=lambda i: self.lengths[i])
            batches = [chosen[k : k + self.batch_size] for k in range(0, size, self.batch_size)]
            random.Random(f"buckets:{self.seed}:{group}").shuffle(batches)
            self._group, self._batches = group, batches
        return self._batches

    def batch(self, step: int) -> list[int]:
        """The pair indices of step ``step`` (from 0)."""
        if self.bucket == 1:
            return self.order.batch(step * self.batch_size, self.batch_size)
        return self._batches_of(step // self.bucket)[step % self.bucket]


def pair_lengths(pairs: Sequence[Pair | Group], texts: Mapping[str, str]) -> np.ndarray:
    """Each pair's (group's) longest passage, in characters: the key of the length buckets (a batch pads to its
    longest)."""
    lengths = (max(len(texts[pid]) for pid in pair[1:]) for pair in pairs)
    return np.fromiter(lengths, dtype=np.int32, count=len(pairs))


def _check_inputs(
    pairs: Sequence[Pair | Group],
    queries: Mapping[str, str],
    texts: Mapping[str, str],
    margins: Sequence[float] | None,
    teacher_scores: Sequence[Sequence[float]] | None = None,
) -> None:
    if not pairs:
        raise ValueError("parameter 'pairs' is empty: nothing to train on")
    if margins is not None and teacher_scores is not None:
        raise ValueError("parameters 'margins' and 'teacher_scores' exclude each other (Margin-MSE or listwise)")
    size = len(pairs[0])
    if teacher_scores is None and size != 3:
        raise ValueError(f"training pair {pairs[0]!r} is not (qid, better, worse): groups need 'teacher_scores'")
    for name, values in (("margins", margins), ("teacher_scores", teacher_scores)):
        if values is not None and len(values) != len(pairs):
            raise ValueError(f"parameter '{name}' has {len(values)} values for {len(pairs)} pairs")
    for index, pair in enumerate(pairs):
        if len(pair) != size or size < 3:
            raise ValueError(f"training pair {index} {pair!r} has {len(pair) - 1} passages; the first has {size - 1}")
        if teacher_scores is not None and len(teacher_scores[index]) != size - 1:
            raise ValueError(f"teacher_scores[{index}] has {len(teacher_scores[index])} values for {size - 1} passages")
        if pair[0] not in queries:
            raise KeyError(f"training pair {pair!r}: query {pair[0]!r} has no text in 'queries'")
        for pid in pair[1:]:
            if pid not in texts:
                raise KeyError(f"training pair {pair!r}: passage {pid!r} has no text in 'texts'")


def _batch_loss(
    model: nn.Module,
    tokenizer: Any,
    batch: Sequence[Pair | Group],
    queries: Mapping[str, str],
    texts: Mapping[str, str],
    config: TrainingConfig,
    device: torch.device,
    margins: Sequence[float] | None = None,
    teacher_scores: Sequence[Sequence[float]] | None = None,
) -> torch.Tensor:
    """The batch's loss from one forward pass over every (query, passage) of its pairs (groups): hinge,
    Margin-MSE (``margins``) or the listwise KL (``teacher_scores``)."""
    width = len(batch[0]) - 1
    query_ids, query_mask = tokenizer.encode([queries[pair[0]] for pair in batch], config.max_query_length)
    doc_texts = [texts[pair[column]] for column in range(1, width + 1) for pair in batch]
    doc_ids, doc_mask = tokenizer.encode(doc_texts, config.max_doc_length)
    query_ids = query_ids.to(device, non_blocking=True).repeat(width, 1)
    query_mask = query_mask.to(device, non_blocking=True).repeat(width, 1)
    doc_ids, doc_mask = doc_ids.to(device, non_blocking=True), doc_mask.to(device, non_blocking=True)
    with autocast(device, config.amp):
        scores = model(query_ids, query_mask, doc_ids, doc_mask)
    scores = scores.float().view(width, len(batch)).T
    if teacher_scores is not None:
        loss = listwise_kl(scores, torch.tensor(teacher_scores, dtype=torch.float32, device=device))
    elif margins is not None:
        target = torch.tensor(margins, dtype=torch.float32, device=device)
        loss = margin_mse(scores[:, 0], scores[:, 1], target)
    else:
        loss = hinge_loss(scores[:, 0], scores[:, 1], config.margin)
    return loss


class Validator:
    """A trainer's checkpoint hook: validate, keep the best weights, stop early, record history.

    :meth:`metrics` re-ranks the validation candidates with a pointwise model (the pairwise trainer's); a trainer
    whose model re-ranks otherwise (:mod:`lib.training.duo`) overrides it and keeps the rest."""

    def __init__(
        self,
        model: nn.Module,
        tokenizer: Any,
        validation: JudgedSet,
        texts: Mapping[str, str],
        config: TrainingConfig,
        device: torch.device,
        folder: Path,
        pairs: int,
    ) -> None:
        self.model, self.tokenizer, self.validation, self.texts = model, tokenizer, validation, texts
        self.config, self.device, self.folder, self.pairs = config, device, folder, pairs

    def metrics(self) -> dict[str, float]:
        """Re-rank the validation candidates at ``config.rerank_depth`` and evaluate them."""
        config = self.config
        scores = score_candidates(
            self.model,
            self.tokenizer,
            self.validation.queries,
            self.texts,
            self.validation.run,
            depth=config.rerank_depth,
            options=ScoringOptions(config.eval_batch_size, config.max_query_length, config.max_doc_length, config.amp),
            device=self.device,
        )
        return evaluate(
            rerank(self.validation.run, scores, config.rerank_depth), self.validation.qrels, config.measures
        )

    def records(self) -> dict[str, float | bool]:
        """What the model records besides the ranking (its ``validation_records`` on the validation candidates'
        passages at ``config.rerank_depth``, e.g. TK-Sparse's share of removed terms and whether the checkpoint is
        ``eligible``); nothing for a model without such a method."""
        record = getattr(getattr(self.model, "module", self.model), "validation_records", None)
        if not callable(record):
            return {}
        depth = self.config.rerank_depth
        run = self.validation.run
        pids = sorted(
            {pid for qid in self.validation.queries if qid in run for pid in ranking_from_run(run[qid])[:depth]}
        )
        return record(self.tokenizer, [self.texts[pid] for pid in pids], self.config.max_doc_length)

    def __call__(self, state: LoopState) -> None:
        config, extra = self.config, state.extra
        extra.setdefault("history", [])
        metrics = self.metrics()
        value = metrics[config.metric]
        records = self.records()
        eligible = bool(records.pop("eligible", True))
        improved = eligible and (extra.get("best_step") is None or value > extra["best_metric"])
        if improved:
            extra.update(best_step=state.step, best_metric=value, best_model=_cpu_state(self.model), bad_validations=0)
            _save(extra["best_model"], self.folder / BEST_NAME)
        elif eligible or "best_step" in extra:  # before a first eligible checkpoint, nothing is lost: not counted
            extra["bad_validations"] = extra.get("bad_validations", 0) + 1
        since = extra["history"][-1]["step"] if extra["history"] else 0
        losses = state.losses[since : state.step]
        extra["history"].append(
            {
                "step": state.step,
                "epoch": state.step * config.batch_size / self.pairs,
                "train_loss": sum(losses) / len(losses),
                **{name: float(metrics[name]) for name in config.measures},
                **{name: float(recorded) for name, recorded in records.items()},
                "eligible": eligible,
                "best": improved,
                "seconds": state.elapsed,
            }
        )
        if config.patience is not None and extra.get("bad_validations", 0) >= config.patience:
            state.finished, extra["stop_reason"] = True, "early_stopping"
        elif config.stop_at is not None and state.step >= config.stop_at:
            state.finished, extra["stop_reason"] = True, "stop_at"
        elif state.step >= config.max_steps:
            extra["stop_reason"] = "max_steps"
        write_csv(self.folder / HISTORY_NAME, pd.DataFrame(extra["history"]))
        best = f"{extra['best_metric']:.4f}@{extra['best_step']}" if "best_step" in extra else "none eligible"
        extra["postfix"] = {config.metric: f"{value:.4f}", "best": best}


# --- the trainer ---------------------------------------------------------------------------------


def warmup_decay(
    optimizer: torch.optim.Optimizer, warmup_steps: int, max_steps: int
) -> torch.optim.lr_scheduler.LambdaLR:
    """Scale every rate of ``optimizer`` at step *s* by ``min(1, (s + 1) / warmup_steps)`` times
    ``(max_steps − s) / max_steps`` (:attr:`TrainingConfig.warmup_steps`)."""
    if warmup_steps < 1 or max_steps < 1:
        raise ValueError(f"parameters 'warmup_steps' and 'max_steps' must be >= 1, got {warmup_steps}, {max_steps}")

    def factor(step: int) -> float:
        return min(1.0, (step + 1) / warmup_steps) * max(0.0, (max_steps - step) / max_steps)

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def train(
    model: nn.Module,
    tokenizer: Any,
    pairs: Sequence[Pair | Group],
    queries: Mapping[str, str],
    texts: Mapping[str, str],
    validation: JudgedSet,
    config: TrainingConfig,
    checkpoint_dir: str | Path,
    margins: Sequence[float] | None = None,
    teacher_scores: Sequence[Sequence[float]] | None = None,
) -> TrainingResult:
    """Train ``model`` on ``pairs`` with the pairwise hinge loss (or Margin-MSE), early-stopped on validation.

    With ``margins`` (a teacher's margin ``t⁺ − t⁻`` for each pair, :mod:`lib.training.distillation`)
    the loss is Margin-MSE instead of the hinge loss. With ``teacher_scores`` the ``pairs`` are groups
    ``(qid, d⁺, d⁻₁ … d⁻ₖ)`` of one size (:func:`lib.training.distillation.teacher_groups`), the teacher's
    score of each passage beside each, and the loss is the listwise KL
    (:func:`lib.training.distillation.listwise_kl`); ``batch_size`` then counts groups. Everything else is the
    same.

    Each step takes the next ``batch_size`` pairs of a seeded shuffle (a new shuffle every epoch,
    batches run across epoch boundaries; with ``config.bucket_batches`` > 1, batches of similar passage
    lengths cut from runs of that many batches), scores (query, better) and (query, worse) in one forward
    pass of ``2·batch_size`` rows, and takes an Adam step over ``model.optimizer_groups(**config.learning_rates)``.
    Every ``validate_every`` steps and at ``max_steps`` it re-ranks the validation run's top
    ``rerank_depth`` (``validation``, a :class:`lib.core.types.JudgedSet` whose passages' texts are in ``texts``;
    :func:`lib.reranking.scoring.score_candidates`), evaluates MRR@10 and nDCG@10, keeps
    the best weights by ``config.metric`` (strict improvement) and stops after ``patience``
    validations without one.

    The run goes through :func:`lib.training.loop.run_loop`: ``checkpoint_dir/checkpoint.pt`` is written
    atomically at the start and after every validation (the history, best weights and early-stopping
    counter travel in it), and calling ``train`` again with the same arguments resumes from it: on
    CPU the resumed run ends with exactly the weights and history of an uninterrupted one (up to the
    ``seconds`` column). A finished run returns at once; a checkpoint made with other arguments (other
    pairs, validation run, model class or shapes, or settings except ``device``, ``amp``,
    ``eval_batch_size`` and ``progress``) is a ``ValueError``. ``best.pt`` holds the best weights, ``history.csv`` the
    history so far. The global Python, NumPy and torch generators are seeded with ``config.seed``
    at the start (dropout and any other randomness in the model draw from them).

    Under torchrun with several processes (:mod:`lib.core.distributed`; the page "The paper path", "Paper
    scale and several GPUs") each process scores its share of every step's ``batch_size`` pairs (which must be a
    multiple of the number of processes) on its own GPU, gradients are averaged over the processes,
    and rank 0 alone validates and writes ``checkpoint.pt``, ``best.pt`` and ``history.csv``; every
    process returns the same result.
    """
    distributed.init_from_env()
    if config.batch_size % distributed.world_size():
        raise ValueError(
            f"config.batch_size ({config.batch_size}) must be a multiple of the number of processes "
            f"({distributed.world_size()}): each process takes an equal share of every batch"
        )
    device = resolve_device(config.device)
    amp_enabled(device, config.amp)  # validates the value
    checkpoint_dir = Path(checkpoint_dir)
    _check_inputs(pairs, queries, texts, margins, teacher_scores)
    fit_schedule = getattr(model, "fit_schedule", None)
    if callable(fit_schedule):  # a model whose training depends on its schedule's length (TK-Sparse's ramp)
        fit_schedule(config.max_steps)
    fingerprint = training_fingerprint(model, pairs, validation, config, margins, teacher_scores)
    model.to(device)
    optimizer = torch.optim.Adam(model.optimizer_groups(**config.learning_rates))
    lengths = pair_lengths(pairs, texts) if config.bucket_batches > 1 else np.zeros(0, dtype=np.int32)
    stream = _PairOrder(len(pairs), config.seed)
    order = _BucketedOrder(stream, lengths, config.batch_size, config.bucket_batches, config.seed)

    def loss_of_step(step: int) -> torch.Tensor:
        chosen = distributed.shard(order.batch(step))
        batch_margins = None if margins is None else [margins[i] for i in chosen]
        batch_scores = None if teacher_scores is None else [teacher_scores[i] for i in chosen]
        batch = [pairs[i] for i in chosen]
        return _batch_loss(model, tokenizer, batch, queries, texts, config, device, batch_margins, batch_scores)

    settings = LoopSettings(
        steps=config.max_steps,
        checkpoint_every=config.validate_every,
        grad_clip=config.grad_clip,
        seed=config.seed,
        desc="train",
        progress=config.progress,
        mismatch=config.mismatch,
    )
    validator = Validator(model, tokenizer, validation, texts, config, device, checkpoint_dir, len(pairs))
    checkpoint_path = checkpoint_dir / CHECKPOINT_NAME
    schedule = warmup_decay(optimizer, config.warmup_steps, config.max_steps) if config.warmup_steps else None
    state = run_loop(
        model, optimizer, loss_of_step, checkpoint_path, fingerprint, settings, schedule, on_checkpoint=validator
    )
    return best_of(model, state, checkpoint_dir)


def best_of(model: nn.Module, state: LoopState, checkpoint_dir: Path) -> TrainingResult:
    """The end of :func:`train`: ``model`` with its best weights (kept in ``best.pt`` too), and the run's result."""
    extra = state.extra
    if "best_model" not in extra:
        removed = [f"{row.get('removed', float('nan')):.0%} at {row['step']}" for row in extra["history"]]
        raise ValueError(
            f"{checkpoint_dir}: none of the {len(removed)} validations was eligible to be chosen (terms removed: "
            f"{', '.join(removed)}); a TK-Sparse's checkpoint is eligible after its ramp and below 99 % removed: "
            "it needs a longer schedule or a smaller removal target"
        )
    model.load_state_dict(extra["best_model"])
    model.eval()
    best_path = checkpoint_dir / BEST_NAME
    if distributed.is_main():  # rewritten from the checkpoint each time: a broken copy heals on the next run
        _save(extra["best_model"], best_path)
    distributed.barrier()
    return TrainingResult(
        best_step=extra["best_step"],
        best_metric=extra["best_metric"],
        history=pd.DataFrame(extra["history"]),
        best_path=best_path,
        model=model,
        steps=state.step,
        stopped_early=extra["stop_reason"] == "early_stopping",
        checkpoint_path=checkpoint_dir / CHECKPOINT_NAME,
    )


__all__ = [
    "Pair",
    "TrainingConfig",
    "TrainingResult",
    "Validator",
    "best_of",
    "hinge_loss",
    "train",
    "training_fingerprint",
    "training_pairs",
]
