"""What bf16 does to a re-ranker's scores and ranking: the price of the faster number format, measured.

bf16 keeps float32's exponent but only 8 bits of mantissa (about 2–3 significant decimal digits).
Under autocast the matrix products of a model run in bf16, while the book's kernel pooling and
scoring stay in float32 (:mod:`lib.models.kernels`). :func:`precision_effect` scores the same
candidates twice — exact float32 and bf16 autocast — and reports how far the scores move, how
often two candidates of a query swap places, and the effectiveness of both re-rankings.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import numpy as np
from torch import nn

from lib.core.types import Qrels, Run
from lib.evaluation.measures import evaluate
from lib.reranking.scoring import ScoringOptions, rerank, score_candidates


def swapped_pairs(exact: Mapping[str, float], reduced: Mapping[str, float]) -> tuple[int, int]:
    """How many candidate pairs the two scorings order differently (a new or lost tie counts), of how many."""
    pids = list(exact)
    swapped = total = 0
    for left, right in itertools.combinations(pids, 2):
        total += 1
        if np.sign(exact[left] - exact[right]) != np.sign(reduced[left] - reduced[right]):
            swapped += 1
    return swapped, total


def precision_effect(
    model: nn.Module,
    tokenizer: Any,
    queries: Mapping[str, str],
    texts: Mapping[str, str],
    first_stage: Run,
    qrels: Qrels,
    depth: int = 100,
    batch_size: int = 256,
    measure: str = "nDCG@10",
) -> dict[str, float]:
    """Score ``first_stage``'s top ``depth`` in float32 and under bf16 autocast; compare (module docstring).

    Returns ``max_abs_difference`` and ``mean_abs_difference`` of the scores, ``score_range`` (the
    spread of the float32 scores, for scale), ``swapped_fraction`` (candidate pairs of a query whose
    order flips) and ``<measure> (float32)`` / ``<measure> (bf16)`` of re-ranking the top ``depth``.
    """
    exact, reduced = (
        score_candidates(model, tokenizer, queries, texts, first_stage, depth, ScoringOptions(batch_size, amp=amp))
        for amp in (False, True)
    )
    differences = np.array([abs(exact[qid][pid] - reduced[qid][pid]) for qid in exact for pid in exact[qid]])
    values = np.array([score for scores in exact.values() for score in scores.values()])
    if values.size == 0:
        raise ValueError("no candidate was scored: the first-stage run is empty at this depth")
    swaps = [swapped_pairs(exact[qid], reduced[qid]) for qid in exact]
    return {
        "max_abs_difference": float(differences.max()),
        "mean_abs_difference": float(differences.mean()),
        "score_range": float(values.max() - values.min()),
        "swapped_fraction": sum(swapped for swapped, _ in swaps) / max(1, sum(total for _, total in swaps)),
        f"{measure} (float32)": evaluate(rerank(first_stage, exact, depth), qrels, [measure])[measure],
        f"{measure} (bf16)": evaluate(rerank(first_stage, reduced, depth), qrels, [measure])[measure],
    }
