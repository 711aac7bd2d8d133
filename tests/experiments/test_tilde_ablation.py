"""TILDE's ablation (``lib.experiments.tilde_ablation``): a row per loss and scoring, tested against BiQDL/QDL."""

from __future__ import annotations

import math

import pytest

from lib.evaluation import measures as evaluation
from lib.experiments.tilde_ablation import SEPARATE_LOSSES, ablation
from lib.reranking.tilde_scoring import TildeScores
from tests.experiments.test_tilde_scorings import FIRST_STAGE, QRELS, scores


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
