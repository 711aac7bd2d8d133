"""TILDE's three scorings (``lib.experiments.tilde_scorings``): the runs they make of a first stage's candidates."""

from __future__ import annotations

import numpy as np

from lib.core.types import ranking_from_run
from lib.experiments.tilde_scorings import scoring_runs
from lib.reranking.tilde_scoring import TildeScores

FIRST_STAGE = {q: {"a": 3.0, "b": 2.0, "c": 1.0} for q in ("q1", "q2", "q3")}


def scores(ql: list[float], dl: list[float]) -> TildeScores:
    """The same QL / DL candidate scores for a, b, c on every query, shifted per query."""
    return TildeScores(
        {q: dict(zip("abc", np.add(ql, i).tolist(), strict=True)) for i, q in enumerate(FIRST_STAGE)},
        {q: dict(zip("abc", np.add(dl, -i).tolist(), strict=True)) for i, q in enumerate(FIRST_STAGE)},
    )


def test_scoring_runs_rerank_by_ql_dl_and_their_even_mix() -> None:
    runs = scoring_runs(scores([-3, -2, -1], [-1, -5, -2]), FIRST_STAGE)
    assert ranking_from_run(runs["TILDE-QL"]["q1"]) == ["c", "b", "a"]
    assert ranking_from_run(runs["TILDE-DL"]["q1"]) == ["a", "c", "b"]
    assert ranking_from_run(runs["TILDE-QDL"]["q1"]) == ["c", "a", "b"]  # -1.5, -2.0, -3.5
    assert list(scoring_runs(TildeScores(scores([-3, -2, -1], [0, 0, 0]).ql, None), FIRST_STAGE)) == ["TILDE-QL"]
