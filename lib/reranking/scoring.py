"""Re-ranking a first stage with a neural model: one scoring pass, the depth tuned on validation.

- :func:`score_candidates` scores each query's first-stage top ``depth`` once, in eval mode and
  without autograd, in batches that run across queries.
- :func:`rerank` re-orders the top ``depth`` by those scores and keeps the first stage below it
  (TK paper §5.2, "re-ranking depth"; :func:`lib.evaluation.measures.rerank_at_depth`).
- :func:`tune_depth` picks the depth to use on test queries from the validation queries: the depth
  whose mean metric is best (ties go to the smallest, the cheapest), in the spirit of the TK paper's
  cs@N. Every depth comes from the one scoring pass (:func:`lib.evaluation.measures.depth_sweep`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import torch
from torch import nn
from tqdm import tqdm

from lib.core.device import autocast, resolve_device
from lib.evaluation.measures import depth_sweep, ranking_from_run, rerank_at_depth, run_from_rankings

Run = Mapping[str, Mapping[str, float]]


def _model_device(model: nn.Module) -> torch.device:
    for tensor in model.parameters():
        return tensor.device
    for tensor in model.buffers():
        return tensor.device
    return torch.device("cpu")


def score_candidates(
    model: nn.Module,
    tokenizer: Any,
    queries: Mapping[str, str],
    texts: Mapping[str, str],
    run: Run,
    depth: int | None = 100,
    batch_size: int = 256,
    max_query_length: int = 30,
    max_doc_length: int = 200,
    device: str | torch.device | None = None,
    amp: bool | str = "auto",
    progress: bool = False,
) -> dict[str, dict[str, float]]:
    """The model's score for each query's first-stage top ``depth`` candidates: ``{qid: {pid: score}}``.

    Candidates are taken in first-stage order (:func:`lib.evaluation.measures.ranking_from_run`); ``depth``
    ``None`` scores all of them, 0 none. The (query, passage) rows of all queries, sorted by passage
    length (less padding), are cut into batches of ``batch_size``; the model runs in eval mode under
    ``torch.inference_mode()`` (its training mode is restored afterwards), with bf16 autocast as
    :func:`lib.training.pairwise.autocast` decides for ``amp``. ``device`` ``None`` keeps the model where it
    is; otherwise the model is moved there. Every query of ``run`` is a key of the result.

    A query missing from ``queries``, or a candidate missing from ``texts``, is a ``KeyError``
    naming the query and the passage, raised before any scoring.
    """
    if depth is not None and depth < 0:
        raise ValueError(f"parameter 'depth' must be >= 0 or None, got {depth}")
    if batch_size < 1:
        raise ValueError(f"parameter 'batch_size' must be >= 1, got {batch_size}")
    if device is None:
        target = _model_device(model)
    else:
        target = resolve_device(device)
        model.to(target)

    rows: list[tuple[str, str]] = []
    for qid in sorted(run, key=lambda q: (len(q), q)):
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
    scores: dict[str, dict[str, float]] = {qid: {} for qid in run}
    was_training = model.training
    model.eval()
    try:
        starts = range(0, len(rows), batch_size)
        with torch.inference_mode(), autocast(target, amp):
            for start in tqdm(starts, desc="score", unit="batch", disable=not progress):
                batch = rows[start : start + batch_size]
                query_ids, query_mask = tokenizer.encode([queries[qid] for qid, _ in batch], max_query_length)
                doc_ids, doc_mask = tokenizer.encode([texts[pid] for _, pid in batch], max_doc_length)
                output = model(
                    query_ids.to(target, non_blocking=True),
                    query_mask.to(target, non_blocking=True),
                    doc_ids.to(target, non_blocking=True),
                    doc_mask.to(target, non_blocking=True),
                )
                for (qid, pid), value in zip(batch, output.float().cpu().tolist(), strict=True):
                    scores[qid][pid] = float(value)
    finally:
        model.train(was_training)
    return {qid: {pid: scores[qid][pid] for pid in ordered[qid]} for qid in run}


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


def tune_depth(
    first_stage: Run,
    scores: Run,
    qrels: Mapping[str, Mapping[str, int]],
    metric: str = "MRR@10",
    depths: Sequence[int] | None = None,
) -> tuple[int, pd.DataFrame]:
    """The re-ranking depth whose mean ``metric`` over the (validation) queries is best, and the curve.

    ``depths`` defaults to 0 … :func:`scored_depth` (depth 0 is the first stage). Ties go to the
    smallest depth. The curve is a frame indexed by ``depth`` with the mean of ``metric``, MRR@10
    and nDCG@10 at each depth (queries both judged and in the run, as :func:`lib.evaluation.measures.evaluate`).
    """
    if depths is None:
        depths = range(0, scored_depth(first_stage, scores) + 1)
    depths = sorted(set(depths))
    if not depths:
        raise ValueError("parameter 'depths' is empty")
    measures = list(dict.fromkeys([metric, "MRR@10", "nDCG@10"]))
    frame = depth_sweep(first_stage, scores, qrels, depths, measures)
    if frame.empty:
        raise ValueError("no query of the first stage is judged in the qrels: nothing to tune on")
    curve = frame.drop(columns="qid").groupby("depth").mean()
    values = curve[metric]
    best = int(values.index[values >= values.max() - 1e-12].min())
    return best, curve


__all__ = ["rerank", "score_candidates", "scored_depth", "tune_depth"]
