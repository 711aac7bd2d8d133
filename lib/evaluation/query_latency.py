"""A model's query latency on real test queries, whole and with its passage side stored in memory.

Lecture 8 (slides 16–27) compares re-rankers by what they cost at query time. :func:`latencies` times
re-ranking a query's candidates with the model run whole at query time
(:func:`lib.evaluation.efficiency.measure_latency`) and, for a model whose passage side can be pre-computed,
with that side stored (:func:`lib.evaluation.stored_latency.measure_stored_latency`). Chapter 8 reads PreTTR's
dial with it; the book's cost table of both regimes, with an on-disk index, is :mod:`lib.evaluation.regimes`.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import torch

from lib.evaluation.efficiency import candidate_pairs, encode_pairs, measure_latency
from lib.evaluation.stored_latency import is_precomputable, measure_stored_latency


def latencies(
    model: torch.nn.Module,
    tokenizer: Any,
    first_stage: Mapping[str, Mapping[str, float]],
    queries: Mapping[str, str],
    texts: Mapping[str, str],
    counts: Sequence[int],
    qids: Sequence[str],
    batch_size: int,
    repetitions: int,
) -> pd.DataFrame:
    """The median latency over ``qids`` of re-ranking ``counts`` candidates of each query (its BM25 list,
    repeated when shorter): ``mode`` "whole at query time" for every model, and "passages stored" for a model
    whose passage side can be pre-computed (:mod:`lib.evaluation.stored_latency`). Each query is timed
    ``repetitions`` times; one untimed warm-up run per count and mode precedes the first query's (the
    later queries find the model warm)."""
    device = next(model.parameters()).device
    modes = ["whole at query time"] + (["passages stored"] if is_precomputable(model) else [])
    rows = []
    for count in counts:
        timed: dict[str, list[float]] = {mode: [] for mode in modes}
        for index, qid in enumerate(qids):
            pairs, repeated = candidate_pairs(first_stage, queries, texts, count, qid)
            tensors = encode_pairs(tokenizer, pairs, device)
            warmup = 1 if index == 0 else 0
            timed["whole at query time"].append(
                measure_latency(model, tensors, batch_size, repetitions, warmup, repeated=repeated).milliseconds
            )
            if "passages stored" in timed:
                stored = measure_stored_latency(model, tensors, batch_size, repetitions, warmup, repeated=repeated)
                timed["passages stored"].append(stored.milliseconds)
        rows += [{"candidates": count, "mode": mode, "ms": statistics.median(values)} for mode, values in timed.items()]
    return pd.DataFrame(rows)
