"""TILDE's comparisons (``lib.experiments.tilde_comparisons``): Table 2, against random order, the ablation."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from lib.evaluation import measures as evaluation
from lib.experiments.tilde_comparisons import SEPARATE_LOSSES, ablation, effectiveness_table, versus_random
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


def test_effectiveness_table_tests_each_system_against_the_first_stage_it_reranks() -> None:
    qrels = {"dl19": QRELS}
    good = {q: {"c": 3.0, "b": 2.0, "a": 1.0} for q in FIRST_STAGE}  # q1's relevant passage first
    systems = {"dl19": {"BM25": FIRST_STAGE, "BM25 + X": good, "Other": FIRST_STAGE}}
    baseline_of = {"dl19": {"BM25": "BM25", "BM25 + X": "BM25", "Other": "Other"}}
    table = effectiveness_table(systems, baseline_of, qrels, ["nDCG@10"])
    assert table.index.tolist() == ["BM25", "BM25 + X", "Other"]
    want = evaluation.evaluate(good, QRELS, ["nDCG@10"])["nDCG@10"]
    assert table.loc["BM25 + X", ("DL19", "nDCG@10")] == pytest.approx(want)
    assert table.loc["BM25 + X", ("DL19", "nDCG@10 †")] is False  # three queries: no significance
    assert pd.isna(table.loc["Other", ("DL19", "nDCG@10 †")]), "a first stage alone has no test"


def test_versus_random_tests_tilde_against_the_random_order_per_set() -> None:
    qrels = {"dl19": {f"q{i}": {"good": 2} for i in range(6)}}
    good = {f"q{i}": {"good": 2.0, "bad": 1.0} for i in range(6)}
    shuffled = {f"q{i}": ({"good": 2.0, "bad": 1.0} if i % 3 == 0 else {"bad": 2.0, "good": 1.0}) for i in range(6)}
    systems = {"dl19": {"BM25 in random order": shuffled, "BM25 + TILDE-QL": good, "BM25 + TILDE-QDL": shuffled}}
    table = versus_random(systems, qrels).set_index("system")
    assert list(table.index) == ["BM25 + TILDE-QL", "BM25 + TILDE-QDL"] and set(table["set"]) == {"DL19"}
    assert table.loc["BM25 + TILDE-QL", "nDCG@10"] == 1.0
    assert table.loc["BM25 + TILDE-QL", "nDCG@10"] > table.loc["BM25 + TILDE-QL", "random order"]
    assert table.loc["BM25 + TILDE-QDL", "p (Bonferroni)"] == 1.0 and not table.loc["BM25 + TILDE-QDL", "significant"]
    assert versus_random({"dl19": {"BM25 + TILDE-QL": good}}, qrels).empty  # no random order, no test
