"""Interpolating a re-ranker's scores with the first stage's, the weight tuned on validation queries.

A common companion of neural re-rankers: ``s = λ · m̂ + (1 − λ) · b̂``, where ``m̂`` and ``b̂`` are the
model's and the first stage's scores of a query's candidates, each min-max normalised to [0, 1]
*per query* (their scales differ: a cosine, a kernel sum, a BM25 score). λ = 1 is the model alone,
λ = 0 the first stage. The book reports it as a separate, labelled row, never in place of the model's own ranking.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from lib.core.types import Qrels, Run
from lib.evaluation.measures import evaluate

#: The weights tried by :func:`tune_interpolation`: 0, 0.05, …, 1.
WEIGHTS: tuple[float, ...] = tuple(round(w, 2) for w in np.linspace(0.0, 1.0, 21))


def _normalised(scores: Mapping[str, float]) -> dict[str, float]:
    """Min-max normalisation of one query's scores to [0, 1] (all 0 when they are all equal)."""
    low, high = min(scores.values()), max(scores.values())
    span = high - low
    return {pid: 0.0 if span == 0 else (score - low) / span for pid, score in scores.items()}


def interpolate(first_stage: Run, scores: Run, weight: float) -> dict[str, dict[str, float]]:
    """``λ · m̂ + (1 − λ) · b̂`` for every candidate of ``first_stage`` (module docstring), ``λ = weight``.

    Every candidate must have a model score: a missing one is a ``KeyError`` naming query and passage.
    """
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"parameter 'weight' must be in [0, 1], got {weight}")
    fused = {}
    for qid, candidates in first_stage.items():
        if not candidates:
            fused[qid] = {}
            continue
        model = scores.get(qid, {})
        missing = [pid for pid in candidates if pid not in model]
        if missing:
            raise KeyError(f"query {qid!r}: passage {missing[0]!r} of the first stage has no model score")
        first, learned = _normalised(candidates), _normalised({pid: model[pid] for pid in candidates})
        fused[qid] = {pid: weight * learned[pid] + (1.0 - weight) * first[pid] for pid in candidates}
    return fused


def tune_interpolation(
    first_stage: Run,
    scores: Run,
    qrels: Qrels,
    metric: str = "MRR@10",
    weights: Sequence[float] = WEIGHTS,
) -> tuple[float, pd.Series]:
    """The weight λ whose mean ``metric`` over the (validation) queries is best, and the curve over ``weights``.

    Ties go to the smallest weight (the most first stage).
    """
    if not weights:
        raise ValueError("parameter 'weights' is empty")
    curve = pd.Series(
        {weight: evaluate(interpolate(first_stage, scores, weight), qrels, [metric])[metric] for weight in weights},
        name=metric,
    ).sort_index()
    best = float(curve.index[curve >= curve.max() - 1e-12].min())
    return best, curve
