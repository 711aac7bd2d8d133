"""Score fusion: several models' scores of the same candidates combined into one run.

The TU Wien TREC 2019 notebook (Hofstätter, Zlabinger, Hanbury, §3.2) ensembles several TK inits (TUW19-p3)
without saying how scores are combined. TK's scores live on an arbitrary scale that differs between inits,
so :func:`ensemble` standardises each model's scores within a query (z-scores, :func:`standardised`) and
averages them: the CombSUM of z-scored scores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from lib.core.types import Run, query_order


def standardised(scores: Mapping[str, float]) -> dict[str, float]:
    """One query's scores as z-scores (mean 0, standard deviation 1); equal scores all become 0."""
    values = np.array(list(scores.values()), dtype=np.float64)
    spread = values.std()
    centred = values - values.mean()
    z = centred / spread if spread > 0 else np.zeros_like(values)
    return dict(zip(scores, z.tolist(), strict=True))


def ensemble(runs: Sequence[Run]) -> dict[str, dict[str, float]]:
    """Per query, the mean of each run's z-scored scores (module docstring).

    Every run must score the same candidates of the same queries; a difference is a ``ValueError``
    naming the query.
    """
    if not runs:
        raise ValueError("an ensemble needs at least one run")
    queries = set(runs[0])
    for index, run in enumerate(runs[1:], start=2):
        if set(run) != queries:
            raise ValueError(f"run {index} scores other queries than run 1: {sorted(set(run) ^ queries)[:5]}")
    combined: dict[str, dict[str, float]] = {}
    for qid in sorted(queries, key=query_order):
        candidates = set(runs[0][qid])
        for index, run in enumerate(runs[1:], start=2):
            if set(run[qid]) != candidates:
                raise ValueError(f"query {qid!r}: run {index} scores other candidates than run 1")
        parts = [standardised(run[qid]) for run in runs]
        combined[qid] = {pid: float(np.mean([part[pid] for part in parts])) for pid in runs[0][qid]}
    return combined
