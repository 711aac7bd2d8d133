"""TILDE's three scorings (``lib.experiments.tilde_scorings``): their runs, the α sweep, storage precision."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lib.core.types import ranking_from_run
from lib.evaluation import measures as evaluation
from lib.experiments.tilde_scorings import alpha_sweep, best_alpha, scoring_runs, storage_precision
from lib.reranking.tilde_scoring import TildeScores

FIRST_STAGE = {q: {"a": 3.0, "b": 2.0, "c": 1.0} for q in ("q1", "q2", "q3")}
QRELS = {"q1": {"c": 3}, "q2": {"b": 2, "c": 1}, "q3": {"a": 2}}


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


def test_alpha_sweep_evaluates_eq6_at_every_alpha() -> None:
    main = scores([-3, -2, -1], [-1, -5, -4])
    sweep = alpha_sweep(main, FIRST_STAGE, QRELS, [0.0, 0.5, 1.0], ["nDCG@10", "MAP"])
    assert len(sweep) == 6 and list(sweep.columns) == ["alpha", "measure", "value"]
    at_one = sweep[(sweep["alpha"] == 1.0) & (sweep["measure"] == "nDCG@10")]["value"].item()
    assert at_one == pytest.approx(evaluation.evaluate(main.rerank(FIRST_STAGE, 1.0), QRELS, ["nDCG@10"])["nDCG@10"])
    with pytest.raises(ValueError, match="alpha"):
        alpha_sweep(main, FIRST_STAGE, QRELS, [1.5])
    with pytest.raises(ValueError, match="'alphas' is empty"):
        alpha_sweep(main, FIRST_STAGE, QRELS, [])


def test_storage_precision_counts_ties_and_evaluates_ql_per_precision() -> None:
    tied = TildeScores({q: {"a": -1.0, "b": -1.0, "c": -2.0} for q in FIRST_STAGE}, None)
    exact = TildeScores({q: {"a": -3.0, "b": -2.0, "c": -1.0} for q in FIRST_STAGE}, None)
    table = storage_precision({"dl19": {"float16": tied, "float32": exact}}, {"dl19": FIRST_STAGE}, {"dl19": QRELS})
    assert table[["test set", "index"]].values.tolist() == [["DL19", "float16"], ["DL19", "float32"]]
    assert table["tied candidates"].tolist() == pytest.approx([2 / 3, 0.0])
    want = evaluation.evaluate(exact.rerank(FIRST_STAGE, 1.0), QRELS, ["nDCG@10"])["nDCG@10"]
    assert table["TILDE-QL nDCG@10"].iloc[1] == pytest.approx(want)


def test_best_alpha_takes_the_highest_value_and_the_smallest_alpha_among_equals() -> None:
    sweeps = pd.DataFrame(
        {
            "alpha": [0.0, 0.5, 1.0, 0.0, 0.5],
            "measure": ["nDCG@10"] * 5,
            "value": [0.2, 0.4, 0.4, 0.3, 0.1],
            "set": ["dl19"] * 3 + ["dl20"] * 2,
            "first_stage": ["BM25"] * 5,
        }
    )
    best = best_alpha(sweeps)
    assert best.loc[("dl19", "BM25"), "best α"] == 0.5 and best.loc[("dl20", "BM25"), "best α"] == 0.0
    assert best.loc[("dl19", "BM25"), "nDCG@10 at best α"] == 0.4
