"""Fine-tuning TILDE on (query, relevant passage) pairs (TILDE paper §3.3 and §4.3), resumable.

The paper fine-tunes ``bert-base-uncased`` with BiQDL on the ~533k (query, relevant passage)
judgments of the MS MARCO training set: Adam, learning rate 2e-5, batch 128, 10 epochs, no
validation. The book subset has no MS MARCO training data (ARCHITECTURE.md, "Conventions"): it trains
on the judged TREC DL queries of the years that are not test years — DL21 — whichever test year a
fold names (:func:`fold_training_data`), so no DL19 or DL20 judgment ever trains TILDE
(:func:`lib.data.splits.train_validation_split` holds out a validation slice of them). Full MS MARCO's
export (the ``paper`` profile, :mod:`lib.training.paper_tilde`) has the paper's pairs
(:func:`msmarco_training_pairs`, :func:`msmarco_training_data`).

Named choices:

- **Relevance threshold** :data:`MIN_RELEVANCE` = 2: a pair is (query, passage judged ≥ 2, "highly
  relevant"), the TREC DL convention for binary relevance (``trec_eval -l 2``); grade 1 ("related")
  passages are not treated as text the query would generate.
- **Objective**: ``loss`` is ``"ql"`` (L_QL, eq. 7), ``"dl"`` (L_DL) or ``"biqdl"`` (eq. 8, the
  paper's); ``vocabulary`` is ``"cleaned"`` (§4.3) or ``"full"`` (the ablation). Losses are summed
  over the pairs of a batch (eq. 7, :mod:`lib.training.tilde_losses`).
- **Optimiser**: Adam with a constant learning rate, as the paper (:data:`PAPER_LR` for
  bert-base). The book's small BERT and few pairs need a larger rate (:data:`BOOK_LR`). A fixed
  number of steps, no early stopping and no validation, as the paper.

Training goes through the book's one loop (:func:`lib.training.loop.run_loop`): every
``checkpoint_every`` steps the model, optimizer, step and losses go atomically to
``output_dir/checkpoint.pt``; the batch of a step and its dropout come from ``(seed, step)`` only,
so on CPU a resumed run ends with exactly the weights of an uninterrupted one. At the end the model
(:meth:`lib.models.tilde.Tilde.save`) and ``training.json`` (parameters and losses, the completion
marker) are written into ``output_dir``;
a complete folder with the same parameters is loaded instead of trained again, and a checkpoint or
folder of *other* parameters is a ``ValueError`` naming the differences.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from lib.core import distributed
from lib.core.device import autocast, resolve_device
from lib.core.types import query_order
from lib.data import load_qrels, load_queries
from lib.data.splits import FOLDS, TEST_SETS, check_disjoint_from_tests, train_validation_split, without_test_queries
from lib.models.tilde import Tilde
from lib.models.tilde_pooled_cache import PooledCache
from lib.models.tilde_vocabulary import TargetVocabulary
from lib.representations.bert import WordPieceTokenizer
from lib.training.loop import (
    CHECKPOINT_NAME,
    BatchOrder,
    LoopSettings,
    as_json,
    check_positive,
    finish_run,
    processes_sharing,
    read_marker,
    run_loop,
    step_seed,
    texts_fingerprint,
)
from lib.training.tilde_losses import LOSSES, dl_loss, ql_loss, vocabulary_bce

#: Pairs are (query, passage judged at least this grade): "highly relevant" in TREC DL (module doc).
MIN_RELEVANCE = 2
#: MS MARCO's training judgments are binary: a judged passage (grade 1) is relevant.
MSMARCO_MIN_RELEVANCE = 1
#: MS MARCO's training queries and judgments in the export (``queries.train.tsv``, ``qrels.train.txt``).
MSMARCO_TRAIN_SET = "train"
#: The paper's Adam learning rate for bert-base-uncased (§4.3).
PAPER_LR = 2e-5
#: The book's rate for its small BERT and few queries (:func:`lib.training.masked_lm.pretrain_mlm`'s rate too):
#: in a sweep of 1e-4, 3e-4, 1e-3 and 3e-3 (300 steps of 16 pairs, DL19 fold) it reached the lowest training loss.
BOOK_LR = 1e-3
MARKER_NAME = "training.json"

Pair = tuple[str, str]


def relevant_pairs(
    qrels: Mapping[str, Mapping[str, int]], texts: Mapping[str, str], min_relevance: int = MIN_RELEVANCE
) -> list[Pair]:
    """``(qid, pid)`` of every judgment with grade ≥ ``min_relevance`` whose passage has text; by query id, then pid."""
    return [
        (qid, pid)
        for qid in sorted(qrels, key=query_order)
        for pid in sorted(qrels[qid])
        if qrels[qid][pid] >= min_relevance and pid in texts
    ]


def msmarco_training_pairs(
    queries: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
    texts: Mapping[str, str],
    min_relevance: int = MSMARCO_MIN_RELEVANCE,
) -> list[Pair]:
    """The paper's pairs (§4.3): :func:`relevant_pairs` of MS MARCO's training ``qrels`` whose query has text."""
    return [(qid, pid) for qid, pid in relevant_pairs(qrels, texts, min_relevance) if qid in queries]


@dataclass
class TildeTrainingData:
    """A fold's training material for TILDE (:func:`fold_training_data`).

    Attributes:
        fold: the test set (``dl19`` or ``dl20``).
        train_sets: the judged sets the pairs come from (``("dl21",)``, or MS MARCO's ``("train",)``: never a
            test year).
        pairs: ``(qid, pid)`` training pairs of the training queries.
        queries: texts of the training and validation queries; ``qrels``: their judgments.
        train_qids, validation_qids: the split of the training years' queries (as every chapter's), or MS
            MARCO's judged training queries and the judged queries of a validation set.
        sources: each source of training examples and how many it gives (for the chapter's table).
        reconstruction: passages that learn to predict their own pieces (:func:`with_reconstruction`).
    """

    fold: str
    train_sets: tuple[str, ...]
    pairs: list[Pair]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    train_qids: list[str]
    validation_qids: list[str]
    sources: dict[str, int] = field(default_factory=dict)
    reconstruction: list[str] = field(default_factory=list)


def teacher_pairs(teacher: Mapping[str, Mapping[str, float]]) -> list[Pair]:
    """``(qid, the teacher's first passage)`` of every teacher-labelled query with candidates, in query order."""
    return [(qid, max(teacher[qid], key=teacher[qid].get)) for qid in sorted(teacher, key=query_order) if teacher[qid]]


def with_teacher_pairs(
    data: TildeTrainingData, teacher: Mapping[str, Mapping[str, float]], queries: Mapping[str, str]
) -> TildeTrainingData:
    """``data`` plus one pair per teacher-labelled query: the query and the passage the teacher ranks first.

    ``teacher`` is the teacher's scores of each query's candidates (chapter 2's distillation set,
    :mod:`lib.experiments.distillation_set`), ``queries`` their texts. A query that is also one of
    ``data``'s is a ``ValueError``: the two sources must not overlap.
    """
    overlap = sorted(set(teacher) & set(data.queries))
    if overlap:
        raise ValueError(f"teacher-labelled queries {overlap[:5]} are also judged training or validation queries")
    added = teacher_pairs(teacher)
    return dataclasses.replace(
        data,
        pairs=[*data.pairs, *added],
        queries={**data.queries, **{qid: queries[qid] for qid, _ in added}},
        sources={**data.sources, "teacher-labelled queries (the teacher's first passage)": len(added)},
    )


def with_reconstruction(data: TildeTrainingData, texts: Mapping[str, str], count: int, seed: int) -> TildeTrainingData:
    """``data`` plus ``count`` passages of ``texts`` (a seeded sample) that learn to predict their own pieces.

    Text only, no judgment: the book's convention for the collection, as chapter 2's pseudo-queries
    cut from it (:mod:`lib.data.pseudo_queries`). A passage's own pieces are the densest signal a new
    head can learn P(t|d) from; the judged and teacher-labelled pairs add which pieces a *query* uses.
    """
    if not isinstance(count, int) or count < 0:
        raise ValueError(f"parameter 'count' must be a non-negative integer, got {count!r}")
    if count > len(texts):
        raise ValueError(f"parameter 'count' ({count}) is larger than the {len(texts)} passages of 'texts'")
    chosen = sorted(random.Random(seed).sample(sorted(texts), count))
    return dataclasses.replace(
        data, reconstruction=chosen, sources={**data.sources, "passages predicting their own pieces": count}
    )


def fold_training_data(
    fold: str,
    texts: Mapping[str, str],
    min_relevance: int = MIN_RELEVANCE,
    seed: int = 42,
    max_train_queries: int | None = None,
) -> TildeTrainingData:
    """The training pairs of test year ``fold``'s TILDE: the non-test years' queries minus the validation slice.

    The training years are the fold's (:data:`lib.data.splits.FOLDS`) without any test year
    (:data:`lib.data.splits.TEST_SETS`): DL21 alone, for DL19 and DL20 alike. ``texts`` are the
    passages (``lib.data.book_texts()``: v1 and v2); ``max_train_queries`` keeps the first training
    queries only (the smoke profile).
    """
    if fold not in FOLDS:
        raise ValueError(f"parameter 'fold' must be one of {sorted(FOLDS)}, got {fold!r}")
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    train_sets = tuple(name for name in FOLDS[fold].train if name not in TEST_SETS)
    for train_set in train_sets:
        queries.update(load_queries(train_set))
        qrels.update(load_qrels(train_set))
    train_qids, validation_qids = train_validation_split(list(queries), seed=seed)
    train_qids = sorted(train_qids, key=query_order)[:max_train_queries]
    pairs = relevant_pairs({q: qrels[q] for q in train_qids if q in qrels}, texts, min_relevance)
    source = f"{' + '.join(s.upper() for s in train_sets)} judged pairs (grade ≥ {min_relevance})"
    return TildeTrainingData(fold, train_sets, pairs, queries, qrels, train_qids, validation_qids, {source: len(pairs)})


def msmarco_training_data(
    fold: str,
    texts: Mapping[str, str],
    validation_set: str,
    min_relevance: int = MSMARCO_MIN_RELEVANCE,
    max_train_queries: int | None = None,
) -> TildeTrainingData:
    """Test year ``fold``'s TILDE on the paper's data: MS MARCO's judged training queries, ``validation_set``'s.

    The training queries are the judged ones of ``queries.train.tsv`` less any that shares an id or a
    text with a test year (:func:`lib.data.splits.without_test_queries`), in query order
    (``max_train_queries``: the first only); their pairs are :func:`msmarco_training_pairs`. The
    validation queries are ``validation_set``'s judged ones (MS MARCO dev-small for the ``paper``
    profile); a validation query that is a test query is a ``ValueError``
    (:func:`lib.data.splits.check_disjoint_from_tests`). Every test year trains on the same pairs.
    """
    if fold not in FOLDS:
        raise ValueError(f"parameter 'fold' must be one of {sorted(FOLDS)}, got {fold!r}")
    tests = {name: load_queries(name) for name in TEST_SETS}
    train_queries = without_test_queries(load_queries(MSMARCO_TRAIN_SET), tests)
    train_qrels = load_qrels(MSMARCO_TRAIN_SET)
    train_qids = sorted((q for q in train_qrels if q in train_queries), key=query_order)[:max_train_queries]
    queries = {qid: train_queries[qid] for qid in train_qids}
    pairs = msmarco_training_pairs(queries, train_qrels, texts, min_relevance)
    validation_queries, validation_qrels = load_queries(validation_set), load_qrels(validation_set)
    validation_qids = sorted((q for q in validation_qrels if q in validation_queries), key=query_order)
    check_disjoint_from_tests({qid: validation_queries[qid] for qid in validation_qids}, tests)
    queries.update({qid: validation_queries[qid] for qid in validation_qids})
    qrels = {qid: train_qrels[qid] for qid in train_qids} | {q: validation_qrels[q] for q in validation_qids}
    source = f"MS MARCO {MSMARCO_TRAIN_SET} judged pairs (grade ≥ {min_relevance})"
    return TildeTrainingData(
        fold, (MSMARCO_TRAIN_SET,), pairs, queries, qrels, train_qids, validation_qids, {source: len(pairs)}
    )


@dataclass
class TildeTrainingResult:
    """What :func:`train_tilde` did.

    Attributes:
        path: the output folder (``Tilde.load(path)``).
        model: the trained :class:`~lib.models.tilde.Tilde`, in eval mode.
        losses: the loss of every step from step 1, per example (the summed batch loss / batch size).
        steps_run: steps run by this call; ``resumed_from``: the step it started at (0: fresh).
        seconds: wall-clock time of this call's steps; ``pairs_per_second`` its throughput.
        epochs: passes over the examples (pairs and reconstruction passages) that ``steps`` make.
        params: the run's parameters (what a resumption must match).
        device: where it ran; ``complete``: all ``steps`` done (``False`` after ``stop_after``).
    """

    path: Path
    model: Tilde = field(repr=False)
    losses: list[float]
    steps_run: int
    resumed_from: int
    seconds: float
    pairs_per_second: float
    epochs: float
    params: dict
    device: str
    complete: bool


def _weights_digest(model: torch.nn.Module) -> str:
    hasher = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        hasher.update(name.encode("utf-8"))
        hasher.update(tensor.detach().to("cpu", torch.float32).contiguous().numpy().tobytes())
    return hasher.hexdigest()[:16]


@dataclass(frozen=True)
class TildeTrainingConfig:
    """How :func:`train_tilde` fine-tunes (module doc).

    Attributes:
        loss: ``"ql"``, ``"dl"`` or ``"biqdl"``; vocabulary: ``"cleaned"`` or ``"full"``.
        steps: optimizer steps of ``batch_size`` examples, Adam at ``lr``, batches and dropout from ``seed``.
        device: ``"auto"`` (CUDA when available), ``"cpu"``, ``"cuda"``; ``amp``: bf16 autocast
            (:func:`lib.training.pairwise.autocast`; ``"auto"`` = on CUDA only).
        checkpoint_every: steps between checkpoints; ``progress``: show a progress bar.
        stop_after: stop (as an interruption would) after this step, checkpointing it.
        trainable_layers: fine-tune only the top this many Transformer layers and the head
            (:meth:`lib.models.tilde.Tilde.train_only_top`); ``None``: the whole network, as the paper;
            ``0``: the head alone (decoder untied) on a frozen encoder, whose pooled vectors of every
            training text are then computed once (eval mode) and reused by every step.
        head_lr: the head's own Adam rate (transform and bias, new weights for an encoder without an
            MLM head); ``None``: ``lr`` for everything, as the paper.
    """

    loss: str = "biqdl"
    vocabulary: str = "cleaned"
    steps: int = 300
    batch_size: int = 16
    lr: float = BOOK_LR
    seed: int = 0
    device: str | torch.device = "auto"
    amp: bool | str = "auto"
    checkpoint_every: int = 50
    stop_after: int | None = None
    progress: bool = True
    trainable_layers: int | None = None
    head_lr: float | None = None


def train_tilde(
    model: Tilde,
    tokenizer: WordPieceTokenizer,
    pairs: Sequence[Pair],
    queries: Mapping[str, str],
    texts: Mapping[str, str],
    output_dir: str | os.PathLike,
    config: TildeTrainingConfig = TildeTrainingConfig(),
    reconstruction: Sequence[str] = (),
    pooled_cache: PooledCache | None = None,
) -> TildeTrainingResult:
    """Fine-tune ``model`` on ``(qid, pid)`` pairs with ``config``'s loss over its vocabulary's targets (module doc).

    Each step takes ``config.batch_size`` examples in a seeded epoch-wise order. A pair's passage predicts the
    query's pieces (L_QL) and/or the query the passage's (L_DL); a ``reconstruction`` passage predicts
    its own pieces (the same binary cross-entropy, eq. 7, with the passage as its own "query"; the
    book's addition, :func:`with_reconstruction`). Inputs are the model's capped word pieces; targets
    are the whole texts' pieces (:class:`~lib.models.tilde_vocabulary.TargetVocabulary`).

    Args:
        model: the starting TILDE (e.g. ``Tilde(bert_folder)``); trained in place and returned.
        config: the schedule and what is trained (:class:`TildeTrainingConfig`).
        pooled_cache: where the encoder's pooled vectors are read and kept
            (:meth:`lib.models.tilde.Tilde.use_pooled_cache`, set on the returned model too); with a
            frozen encoder, texts another run or chapter already encoded are not encoded again.

    Under torchrun with several processes (:mod:`lib.core.distributed`) each process takes its share
    of every step's ``batch_size`` pairs (a multiple of the number of processes) with its own dropout;
    as the loss sums over the pairs, each process's share is scaled by the number of processes, so the
    averaged gradient is the whole batch's. Rank 0 alone writes the checkpoint, the model and the marker.
    """
    _check_inputs(pairs, queries, texts, reconstruction, config)
    processes = processes_sharing(config.batch_size)
    target_vocabulary = TargetVocabulary.named(config.vocabulary, tokenizer)
    output_dir, device = Path(output_dir), resolve_device(config.device)
    params = _fingerprint(model, pairs, queries, texts, reconstruction, config, target_vocabulary)
    marker = output_dir / MARKER_NAME
    epochs = config.steps * config.batch_size / (len(pairs) + len(reconstruction))
    record = read_marker(marker, params)
    if record is not None:
        trained = Tilde.load(output_dir).eval().use_pooled_cache(pooled_cache)
        return TildeTrainingResult(
            output_dir, trained, record["losses"], 0, config.steps, 0.0, 0.0, epochs, params, str(device), True
        )

    model.to(device).use_pooled_cache(pooled_cache)
    optimizer = _optimizer(model, config)
    pieces = _pieces(tokenizer, pairs, queries, texts, reconstruction)
    pooled = _frozen_vectors(model, pieces, config.loss) if config.trainable_layers == 0 else {}
    loss_of_step = _loss_of_step(
        model, pairs, reconstruction, pieces, pooled, target_vocabulary, config, device, processes
    )
    desc = f"TILDE ({config.loss}, {config.vocabulary})"
    settings = LoopSettings(
        config.steps, config.checkpoint_every, config.stop_after, desc=desc, progress=config.progress
    )
    state = run_loop(model, optimizer, loss_of_step, output_dir / CHECKPOINT_NAME, params, settings)
    model.eval()
    losses = [value / config.batch_size for value in state.losses]
    finished = {"losses": losses, "seconds": state.seconds, "device": str(device)}
    finish_run(state, marker, params, finished, lambda: model.save(output_dir, tokenizer))
    return TildeTrainingResult(
        path=output_dir,
        model=model,
        losses=losses,
        steps_run=state.steps_run,
        resumed_from=state.resumed_from,
        seconds=state.seconds,
        pairs_per_second=state.steps_run * config.batch_size / state.seconds if state.steps_run else 0.0,
        epochs=epochs,
        params=params,
        device=str(device),
        complete=state.finished,
    )


def _check_inputs(
    pairs: Sequence[Pair],
    queries: Mapping[str, str],
    texts: Mapping[str, str],
    reconstruction: Sequence[str],
    config: TildeTrainingConfig,
) -> None:
    if config.loss not in LOSSES:
        raise ValueError(f"parameter 'loss' must be one of {list(LOSSES)}, got {config.loss!r}")
    check_positive(steps=config.steps, batch_size=config.batch_size, checkpoint_every=config.checkpoint_every)
    if not pairs:
        raise ValueError("parameter 'pairs' is empty: nothing to train on")
    missing = [pid for pid in reconstruction if pid not in texts]
    if missing:
        raise KeyError(f"parameter 'reconstruction': passage(s) {missing[:5]} have no text in 'texts'")
    for qid, pid in pairs:
        if qid not in queries:
            raise KeyError(f"training pair ({qid!r}, {pid!r}): query {qid!r} has no text in 'queries'")
        if pid not in texts:
            raise KeyError(f"training pair ({qid!r}, {pid!r}): passage {pid!r} has no text in 'texts'")


def _fingerprint(
    model: Tilde,
    pairs: Sequence[Pair],
    queries: Mapping[str, str],
    texts: Mapping[str, str],
    reconstruction: Sequence[str],
    config: TildeTrainingConfig,
    target_vocabulary: TargetVocabulary,
) -> dict:
    """What a resumption must match (the keys of every book-scale checkpoint: unchanged)."""
    params = {
        "loss": config.loss,
        "vocabulary": config.vocabulary,
        "vocabulary_fingerprint": target_vocabulary.fingerprint,
        "steps": config.steps,
        "batch_size": config.batch_size,
        "lr": config.lr,
        "seed": config.seed,
        "pairs": len(pairs),
        "pairs_sha256": texts_fingerprint([f"{q}\t{p}\t{queries[q]}\t{texts[p]}" for q, p in pairs]),
        "initial_weights_sha256": _weights_digest(model),
        "model_settings": model.settings(),
        "trainable_layers": config.trainable_layers,
        "head_lr": config.head_lr,
        "reconstruction": len(reconstruction),
        "reconstruction_sha256": texts_fingerprint([f"{p}\t{texts[p]}" for p in reconstruction]),
    }
    return as_json(params)


def _optimizer(model: Tilde, config: TildeTrainingConfig) -> torch.optim.Adam:
    """Adam over the trainable part (:meth:`~lib.models.tilde.Tilde.train_only_top`), the head at its own rate."""
    trainable = model.train_only_top(config.trainable_layers)
    head = {id(p) for p in model.bert.cls.predictions.transform.parameters()} | {id(model.bert.cls.predictions.bias)}
    head_lr = config.lr if config.head_lr is None else config.head_lr
    groups = [
        {"params": [p for p in trainable if id(p) not in head], "lr": config.lr},
        {"params": [p for p in trainable if id(p) in head], "lr": head_lr},
    ]
    return torch.optim.Adam([group for group in groups if group["params"]])


def _pieces(
    tokenizer: WordPieceTokenizer,
    pairs: Sequence[Pair],
    queries: Mapping[str, str],
    texts: Mapping[str, str],
    reconstruction: Sequence[str],
) -> dict[str, dict[str, list[int]]]:
    """The word pieces of every training query (by query order) and passage (by pid), by direction."""
    qids = sorted({q for q, _ in pairs}, key=query_order)
    pids = sorted({p for _, p in pairs} | set(reconstruction))
    return {
        "query": dict(zip(qids, tokenizer.pieces([queries[q] for q in qids]), strict=True)),
        "passage": dict(zip(pids, tokenizer.pieces([texts[p] for p in pids]), strict=True)),
    }


def _frozen_vectors(
    model: Tilde, pieces: Mapping[str, Mapping[str, list[int]]], loss: str
) -> dict[str, dict[str, torch.Tensor]]:
    """A frozen encoder's pooled vectors of every training text, computed once: the head alone then trains."""
    pooled: dict[str, dict[str, torch.Tensor]] = {}
    for direction, keys in (
        ("passage", list(pieces["passage"])),
        ("query", list(pieces["query"]) if loss != "ql" else []),
    ):
        vectors = model.pooled([pieces[direction][key] for key in keys], direction)
        pooled[direction] = dict(zip(keys, vectors, strict=True))
    return pooled


def _loss_of_step(
    model: Tilde,
    pairs: Sequence[Pair],
    reconstruction: Sequence[str],
    pieces: Mapping[str, Mapping[str, list[int]]],
    pooled: Mapping[str, Mapping[str, torch.Tensor]],
    target_vocabulary: TargetVocabulary,
    config: TildeTrainingConfig,
    device: torch.device,
    processes: int,
) -> Callable[[int], torch.Tensor]:
    """The loss of a step (eq. 7–8 and the reconstruction term), summed over this process's share of its batch."""
    keep = target_vocabulary.mask().to(device)
    order = BatchOrder(len(pairs) + len(reconstruction), config.batch_size, config.seed)

    def logits(direction: str, keys: Sequence[str]) -> torch.Tensor:
        if pooled:
            return model.head(torch.stack([pooled[direction][key] for key in keys]))
        return model.logits([pieces[direction][key] for key in keys], direction)

    def targets(direction: str, keys: Sequence[str]) -> torch.Tensor:
        clean = (target_vocabulary.clean(pieces[direction][key]) for key in keys)
        return target_vocabulary.targets(clean).to(device)

    def loss_of_step(step: int) -> torch.Tensor:
        chosen = distributed.shard(order.batch(step))
        batch = [pairs[i] for i in chosen if i < len(pairs)]
        own = [reconstruction[i - len(pairs)] for i in chosen if i >= len(pairs)]
        torch.manual_seed(step_seed(config.seed, step, distributed.rank()))  # dropout
        terms = torch.zeros((), device=device)
        with autocast(device, config.amp):
            if batch:
                q_ids, p_ids = [q for q, _ in batch], [p for _, p in batch]
                pair_terms = torch.zeros((), device=device)
                if config.loss in ("ql", "biqdl"):
                    pair_terms = pair_terms + ql_loss(logits("passage", p_ids), targets("query", q_ids), keep)
                if config.loss in ("dl", "biqdl"):
                    pair_terms = pair_terms + dl_loss(logits("query", q_ids), targets("passage", p_ids), keep)
                terms = terms + (pair_terms / 2 if config.loss == "biqdl" else pair_terms)  # eq. 8
            if own:
                terms = terms + vocabulary_bce(logits("passage", own), targets("passage", own), keep).sum()
        return terms * processes if processes > 1 else terms  # a sum over the examples: the global batch's scale

    return loss_of_step


__all__ = [
    "BOOK_LR",
    "MIN_RELEVANCE",
    "MSMARCO_MIN_RELEVANCE",
    "MSMARCO_TRAIN_SET",
    "PAPER_LR",
    "TildeTrainingConfig",
    "TildeTrainingData",
    "TildeTrainingResult",
    "fold_training_data",
    "msmarco_training_data",
    "msmarco_training_pairs",
    "relevant_pairs",
    "teacher_pairs",
    "train_tilde",
    "with_reconstruction",
    "with_teacher_pairs",
]
