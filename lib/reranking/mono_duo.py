"""Mono-duo re-ranking (lecture 8, slide 12): a duo model re-orders the top ``k`` of a mono model's ranking.

Nogueira, Yang, Cho and Lin, *Multi-Stage Document Ranking with BERT* (2019), §3.2 (duoBERT; the pattern named
in Pradeep, Nogueira and Lin's *Expando-Mono-Duo*, 2021): the duo model (:class:`lib.models.duo_bert.DuoBert`)
scores every ordered pair ``(d_i, d_j)``, ``i ≠ j``, of mono's top ``k`` — ``k (k − 1)`` passes, each on a query
and two passages — and each passage's duo score is an aggregate of its probabilities of beating the others; of
the paper's aggregations (SUM, BINARY, MIN, MAX, SAMPLE) the book uses **SUM**, ``s_i = Σ_{j≠i} p_ij``
(:func:`sum_aggregate`). The top ``k`` are re-ordered by ``s_i`` (ties: mono's order) and stay above the rest of
mono's ranking, which keeps its order (:func:`duo_rerank`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from lib.core.device import autocast, resolve_device
from lib.core.types import Run, query_order, ranking_from_run
from lib.reranking.scoring import ScoringOptions


def pair_probabilities(
    model: nn.Module,
    tokenizer: Any,
    query: str,
    passages: Sequence[str],
    options: ScoringOptions,
    device: torch.device,
) -> np.ndarray:
    """``P[i, j] = p_ij``, the duo model's probability that passage ``i`` is more relevant than passage ``j`` to
    ``query``, for every ordered pair ``i ≠ j`` of ``passages`` (``[k, k]``; NaN on the diagonal). The query and each
    passage are tokenised once; ``options.batch_size`` pairs per forward pass."""
    count = len(passages)
    probabilities = np.full((count, count), np.nan)
    pairs = [(i, j) for i in range(count) for j in range(count) if i != j]
    if not pairs:
        return probabilities
    query_ids, query_mask = (t.to(device) for t in tokenizer.encode([query], options.max_query_length))
    doc_ids, doc_mask = (t.to(device) for t in tokenizer.encode(list(passages), options.max_doc_length))
    model.eval()
    for start in range(0, len(pairs), options.batch_size):
        chunk = torch.tensor(pairs[start : start + options.batch_size], device=device)
        rows = len(chunk)
        with torch.inference_mode(), autocast(device, options.amp):
            logits = model(
                query_ids.expand(rows, -1), query_mask.expand(rows, -1),
                doc_ids[chunk[:, 0]], doc_mask[chunk[:, 0]], doc_ids[chunk[:, 1]], doc_mask[chunk[:, 1]],
            )  # fmt: skip
        values = torch.sigmoid(logits.float()).cpu().numpy()
        chosen = chunk.cpu().numpy()
        probabilities[chosen[:, 0], chosen[:, 1]] = values
    return probabilities


def sum_aggregate(probabilities: np.ndarray) -> np.ndarray:
    """SUM of the duoBERT paper (§3.2): ``s_i = Σ_{j≠i} p_ij`` over a ``[k, k]`` matrix with a NaN diagonal."""
    return np.nansum(probabilities, axis=1)


def duo_order(mono_ranking: Sequence[str], duo_scores: Sequence[float]) -> list[str]:
    """The re-ranked list: mono's top ``len(duo_scores)`` by descending duo score (ties in mono's order), then the
    rest of ``mono_ranking`` in its order."""
    top = len(duo_scores)
    order = sorted(range(top), key=lambda i: (-duo_scores[i], i))
    return [mono_ranking[i] for i in order] + list(mono_ranking[top:])


def duo_rerank(
    model: nn.Module,
    tokenizer: Any,
    queries: Mapping[str, str],
    texts: Mapping[str, str],
    mono: Run,
    top_k: int,
    options: ScoringOptions | None = None,
    device: str | torch.device | None = None,
) -> tuple[Run, dict[str, float]]:
    """Every query of ``mono`` (a run: its scores give mono's order, trec_eval's ties) re-ranked by the duo model
    over its top ``top_k`` (:func:`duo_order`), and each query's duo time in seconds (tokenising, the ``k (k − 1)``
    passes and the aggregation; reading the probabilities back waits for the device). The returned run scores rank
    ``r`` (from 0) of ``n`` as ``n − r``, so any reader sees the order."""
    if top_k < 2:
        raise ValueError(f"parameter 'top_k' must be >= 2 (a duo model compares pairs), got {top_k}")
    options = options or ScoringOptions()
    device = resolve_device(device if device is not None else next(model.parameters()).device)
    reranked: Run = {}
    seconds: dict[str, float] = {}
    for qid in tqdm(sorted(mono, key=query_order), desc="duo", unit="query", disable=not options.progress):
        ranking = ranking_from_run(mono[qid])
        start = time.perf_counter()
        top = [texts[pid] for pid in ranking[:top_k]]
        scores = sum_aggregate(pair_probabilities(model, tokenizer, queries[qid], top, options, device))
        seconds[qid] = time.perf_counter() - start
        order = duo_order(ranking, scores.tolist())
        reranked[qid] = {pid: float(len(order) - rank) for rank, pid in enumerate(order)}
    return reranked, seconds


__all__ = ["duo_order", "duo_rerank", "pair_probabilities", "sum_aggregate"]
