"""Chapter 6's TILDE tables (``lib.chapters.tilde_tables``): ablation, α sweep, index size, passage dependence."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lib.chapters.tilde_tables import (
    MS_MARCO_PASSAGES,
    SEPARATE_LOSSES,
    ablation,
    alpha_sweep,
    index_size,
    mean_rank_correlation,
    passage_dependence,
    scoring_runs,
)
from lib.evaluation import measures as evaluation
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
    assert evaluation.ranking_from_run(runs["TILDE-QL"]["q1"]) == ["c", "b", "a"]
    assert evaluation.ranking_from_run(runs["TILDE-DL"]["q1"]) == ["a", "c", "b"]
    assert evaluation.ranking_from_run(runs["TILDE-QDL"]["q1"]) == ["c", "a", "b"]  # -1.5, -2.0, -3.5
    assert list(scoring_runs(TildeScores(scores([-3, -2, -1], [0, 0, 0]).ql, None), FIRST_STAGE)) == ["TILDE-QL"]


def test_ablation_has_a_row_per_loss_and_scoring_tested_against_biqdl_qdl() -> None:
    main = scores([-3, -2, -1], [-1, -5, -4])
    variants = {"biqdl": main, "ql": scores([-1, -2, -3], [-1, -5, -4]), "dl": scores([-1, -1, -1], [-6, -2, -4])}
    table = ablation(variants, FIRST_STAGE, QRELS, ["nDCG@10"])
    assert len(table) == 3 * 3 + 1
    assert set(zip(table["loss"], table["scoring"], strict=True)) >= {
        ("L_BiQDL", "TILDE-QDL"),
        ("L_QL", "TILDE-QL"),
        ("L_DL", "TILDE-DL"),
        (SEPARATE_LOSSES, "TILDE-QDL"),
    }
    rows = table.set_index(["loss", "scoring"])
    assert math.isnan(rows.loc[("L_BiQDL", "TILDE-QDL"), "p nDCG@10"])
    # the L_QL model was given BiQDL's DL scores, so their TILDE-DL rows agree
    assert rows.loc[("L_QL", "TILDE-DL"), "nDCG@10"] == rows.loc[("L_BiQDL", "TILDE-DL"), "nDCG@10"]
    mixed = TildeScores(variants["ql"].ql, variants["dl"].dl).rerank(FIRST_STAGE, 0.5)
    expected = evaluation.evaluate(mixed, QRELS, ["nDCG@10"])["nDCG@10"]
    assert rows.loc[(SEPARATE_LOSSES, "TILDE-QDL"), "nDCG@10"] == pytest.approx(expected)
    p_values = table["p nDCG@10"].dropna()
    assert len(p_values) == len(table) - 1 and p_values.between(0, 1).all()
    with pytest.raises(KeyError, match="'biqdl'"):
        ablation({"ql": main}, FIRST_STAGE, QRELS)


def test_a_row_identical_to_the_baseline_has_p_one() -> None:
    main = scores([-3, -2, -1], [-1, -5, -4])
    table = ablation({"biqdl": main, "ql": main}, FIRST_STAGE, QRELS, ["nDCG@10"]).set_index(["loss", "scoring"])
    assert table.loc[("L_QL", "TILDE-QDL"), "p nDCG@10"] == 1.0
    assert not table.loc[("L_QL", "TILDE-QDL"), "significant nDCG@10"]


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


def test_index_size_scales_bytes_per_passage_to_ms_marco() -> None:
    table = index_size(61_150.0, 61_044, 4_000)
    assert table["passages"].tolist() == [4_000, MS_MARCO_PASSAGES]
    assert table["GB"].tolist() == pytest.approx([4_000 * 61_150 / 1e9, MS_MARCO_PASSAGES * 61_150 / 1e9])
    with pytest.raises(ValueError, match="negative"):
        index_size(-1.0, 0, 1)


def test_passage_dependence_is_the_mean_spread_of_kept_pieces() -> None:
    keep = np.array([True, True, False])
    assert passage_dependence(np.array([[0.0, 1.0, 5.0], [2.0, 1.0, 9.0]]), keep) == pytest.approx(0.5)
    assert passage_dependence(np.ones((4, 3)), keep) == 0.0
    with pytest.raises(ValueError, match="passages >= 2"):
        passage_dependence(np.ones((1, 3)), keep)
    with pytest.raises(ValueError, match="mask"):
        passage_dependence(np.ones((2, 3)), np.array([True, False]))


def test_mean_rank_correlation_averages_spearman_over_queries_and_skips_constant_ones() -> None:
    scores = {"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"a": 1.0, "b": 2.0, "c": 3.0}, "q3": {"a": 1.0, "b": 1.0}}
    feature = {"q1": {"a": 30, "b": 20, "c": 10}, "q2": {"a": 10, "b": 20, "c": 5}, "q3": {"a": 1, "b": 2}}
    assert mean_rank_correlation(scores, feature) == pytest.approx((1.0 - 0.5) / 2)  # q2: ranks 1,2,3 vs 2,3,1
    assert math.isnan(mean_rank_correlation({"q3": scores["q3"]}, feature))
    with pytest.raises(KeyError, match="'q1'.*'c'"):
        mean_rank_correlation({"q1": scores["q1"]}, {"q1": {"a": 1, "b": 2}})
