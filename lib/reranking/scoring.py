"""Re-ranking a first stage with a neural model: one scoring pass, every depth from it.

- :func:`score_candidates` scores each query's first-stage top ``depth`` once, in eval mode and
  without autograd, in batches that run across queries; :func:`score_candidate_columns` does the same for a
  model that gives several scores per pair (``[B, C]``: one run per column).
- :func:`rerank_at_depth` / :func:`rerank` re-order the top ``depth`` by those scores and keep the
  first stage below it (TK paper §5.2, "re-ranking depth"); :func:`scored_depth` is the deepest
  depth the scores cover. Choosing the depth on validation is :func:`lib.evaluation.depths.tune_depth`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from tqdm import tqdm

from lib.core.device import autocast, resolve_device
from lib.core.types import Run, query_order, ranking_from_run, run_from_rankings
from lib.representations.text import DOC_MAX_LENGTH, QUERY_MAX_LENGTH


def _model_device(model: nn.Module) -> torch.device:
    for tensor in model.parameters():
        return tensor.device
    for tensor in model.buffers():
        return tensor.device
    return torch.device("cpu")


@dataclass(frozen=True)
class ScoringOptions:
    """How :func:`score_candidates` runs a model: pairs per batch, the token caps of queries and passages
    (the TK paper's 30 and 200, §4.3), bf16 autocast as :func:`lib.core.device.autocast` decides for ``amp``,
    and a progress bar."""

    batch_size: int = 256
    max_query_length: int = QUERY_MAX_LENGTH
    max_doc_length: int = DOC_MAX_LENGTH
    amp: bool | str = "auto"
    progress: bool = False

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ValueError(f"parameter 'batch_size' must be >= 1, got {self.batch_size}")


def score_candidates(
    model: nn.Module,
    tokenizer: Any,
    queries: Mapping[str, str],
    texts: Mapping[str, str],
    run: Run,
    depth: int | None = 100,
    options: ScoringOptions | None = None,
    device: str | torch.device | None = None,
) -> dict[str, dict[str, float]]:
    """The model's score for each query's first-stage top ``depth`` candidates: ``{qid: {pid: score}}``.

    Candidates are taken in first-stage order (:func:`lib.core.types.ranking_from_run`); ``depth``
    ``None`` scores all of them, 0 none. The (query, passage) rows of all queries, sorted by passage
    length (less padding), are cut into batches of ``options.batch_size`` (:class:`ScoringOptions`); the model
    runs in eval mode under ``torch.inference_mode()`` (its training mode is restored afterwards), with bf16
    autocast as ``options.amp`` asks. ``device`` ``None`` keeps the model where it is; otherwise the model is
    moved there. Every query of ``run`` is a key of the result.

    A query missing from ``queries``, or a candidate missing from ``texts``, is a ``KeyError``
    naming the query and the passage, raised before any scoring.
    """
    return score_candidate_columns(model, tokenizer, queries, texts, run, depth, options, device, columns=None)[0]


def score_candidate_columns(
    model: nn.Module,
    tokenizer: Any,
    queries: Mapping[str, str],
    texts: Mapping[str, str],
    run: Run,
    depth: int | None = 100,
    options: ScoringOptions | None = None,
    device: str | torch.device | None = None,
    columns: int | None = None,
) -> list[dict[str, dict[str, float]]]:
    """:func:`score_candidates` for a model whose output is ``[B, columns]`` (``columns`` ``None``: ``[B]``, one
    run): one run per column, in the columns' order. An output of another shape is a ``ValueError``."""
    options = options or ScoringOptions()
    if depth is not None and depth < 0:
        raise ValueError(f"parameter 'depth' must be >= 0 or None, got {depth}")
    if device is None:
        target = _model_device(model)
    else:
        target = resolve_device(device)
        model.to(target)

    rows: list[tuple[str, str]] = []
    for qid in sorted(run, key=query_order):
        candidates = ranking_from_run(run[qid])
        candidates = candidates if depth is None else candidates[:depth]
        if candidates and qid not in queries:
            raise KeyError(f"query {qid!r} of the run has no text in 'queries'")
        for pid in candidates:
            if pid not in texts:
                raise KeyError(f"query {qid!r}: candidate passage {pid!r} has no text in 'texts'")
        rows.extend((qid, pid) for pid in candidates)

    # Length-sorted batches: the models are padding- and batch-invariant (tested), so grouping
    # passages of similar length changes no score but saves most of the padded computation.
    ordered: dict[str, list[str]] = {qid: [] for qid in run}
    for qid, pid in rows:
        ordered[qid].append(pid)
    rows.sort(key=lambda row: (len(texts[row[1]]), row))
    width = 1 if columns is None else columns
    scores: list[dict[str, dict[str, float]]] = [{qid: {} for qid in run} for _ in range(width)]
    was_training = model.training
    model.eval()
    try:
        starts = range(0, len(rows), options.batch_size)
        with torch.inference_mode(), autocast(target, options.amp):
            for start in tqdm(starts, desc="score", unit="batch", disable=not options.progress):
                batch = rows[start : start + options.batch_size]
                query_ids, query_mask = tokenizer.encode([queries[qid] for qid, _ in batch], options.max_query_length)
                doc_ids, doc_mask = tokenizer.encode([texts[pid] for _, pid in batch], options.max_doc_length)
                output = model(
                    query_ids.to(target, non_blocking=True),
                    query_mask.to(target, non_blocking=True),
                    doc_ids.to(target, non_blocking=True),
                    doc_mask.to(target, non_blocking=True),
                )
                expected = (len(batch),) if columns is None else (len(batch), columns)
                if tuple(output.shape) != expected:
                    raise ValueError(f"the model gave scores of shape {tuple(output.shape)}, expected {expected}")
                values = output.float().cpu().reshape(len(batch), width).tolist()
                for (qid, pid), row in zip(batch, values, strict=True):
                    for column, value in zip(scores, row, strict=True):
                        column[qid][pid] = float(value)
    finally:
        model.train(was_training)
    return [{qid: {pid: column[qid][pid] for pid in ordered[qid]} for qid in run} for column in scores]


def rerank_at_depth(first_stage: Sequence[str], scores: Mapping[str, float], depth: int) -> list[str]:
    """Re-order the top ``depth`` of a first-stage ranking by ``scores`` and keep the rest below.

    Ties among model scores keep the first stage's order. ``depth`` 0 returns the first stage.
    """
    if depth < 0:
        raise ValueError(f"parameter 'depth' must be >= 0, got {depth}")
    head = list(first_stage[:depth])
    missing = [pid for pid in head if pid not in scores]
    if missing:
        raise KeyError(f"no model score for passages {missing[:5]} in the top-{depth}")
    position = {pid: index for index, pid in enumerate(head)}
    head.sort(key=lambda pid: (-scores[pid], position[pid]))
    return head + list(first_stage[depth:])


def rerank(first_stage: Run, scores: Run, depth: int) -> dict[str, dict[str, float]]:
    """The run that re-orders each query's first-stage top ``depth`` by ``scores``, the rest below.

    Model ties keep the first stage's order; depth 0 gives the first stage's order. The returned
    scores (``len - position``) encode the order exactly (:func:`lib.evaluation.measures.run_from_rankings`).
    """
    rankings = {
        qid: rerank_at_depth(ranking_from_run(candidates), scores.get(qid, {}), depth)
        for qid, candidates in first_stage.items()
    }
    return run_from_rankings(rankings)


def scored_depth(first_stage: Run, scores: Run) -> int:
    """The deepest N at which every query's first-stage top N is scored (the default sweep of :func:`tune_depth`)."""
    limit: int | None = None
    longest = 0
    for qid, candidates in first_stage.items():
        order = ranking_from_run(candidates)
        longest = max(longest, len(order))
        scored = scores.get(qid, {})
        covered = next((i for i, pid in enumerate(order) if pid not in scored), len(order))
        if covered < len(order):
            limit = covered if limit is None else min(limit, covered)
    return longest if limit is None else limit


__all__ = ["ScoringOptions", "rerank", "rerank_at_depth", "score_candidate_columns", "score_candidates", "scored_depth"]
