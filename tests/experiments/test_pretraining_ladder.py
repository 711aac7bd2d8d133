"""Chapter 2's ladder of pre-training depth (``lib.experiments.pretraining_ladder``): rungs and table."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from lib.experiments.pretraining_ladder import beats_bm25_everywhere, ladder_table, rung

MODELS = ["bert-cat", "tk2", "tk2-pieces", "tk-bert2", "bi-encoder", "knrm"]


def test_every_model_sits_on_its_rung() -> None:
    assert [rung(name) for name in MODELS] == [
        "all of BERT, fine-tuned", "word vectors", "static pieces", "BERT's first layers", "teacher (zero-shot)",
        "word vectors",
    ]  # fmt: skip


def _inputs(all_100: dict[str, tuple[float, float]], significant: set[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 2 and t-test rows for two years: BM25 at 0.5, each model's nDCG@10 (all) per year, its speed."""
    speeds = {"bert-cat": 1.0, "tk2": 300.0, "tk2-pieces": 200.0, "tk-bert2": 4.0, "bi-encoder": 5.0, "knrm": 900.0}
    table, tests = [], []
    for year, fold in enumerate(("dl19", "dl20")):
        table.append({"set": fold, "model": "BM25", "nDCG@10": 0.5})
        for name in MODELS:
            value = all_100[name][year]
            table.append({"set": fold, "model": name, "nDCG@10": value, "depth": 50, "nDCG@10 (all)": value,
                          "docs/ms": speeds[name]})  # fmt: skip
            for depth in ("all", "tuned"):
                tests.append({"set": fold, "depth": depth, "system": name, "p_bonferroni": 0.01 if name in
                              significant else 0.4, "significant": name in significant})  # fmt: skip
    return pd.DataFrame(table), pd.DataFrame(tests)


SCORES = {
    "bert-cat": (0.60, 0.56), "tk2": (0.49, 0.49), "tk2-pieces": (0.55, 0.52), "tk-bert2": (0.58, 0.55),
    "bi-encoder": (0.64, 0.61), "knrm": (0.30, 0.28),
}  # fmt: skip


def test_the_table_orders_models_by_rung_and_reads_each_years_numbers() -> None:
    table, tests = _inputs(SCORES, {"bert-cat", "tk-bert2", "bi-encoder", "knrm"})
    rows = ladder_table(table, tests, MODELS, {"tk2": 0.45, "tk-bert2": 0.50})
    assert list(rows["model"].iloc[:6]) == ["tk2", "knrm", "tk2-pieces", "tk-bert2", "bert-cat", "bi-encoder"]
    dl20 = rows[rows["set"] == "dl20"].set_index("model")
    assert dl20.loc["tk-bert2", "nDCG@10 (all)"] == 0.55 and dl20.loc["tk-bert2", "Δ BM25 (all)"] == pytest.approx(0.05)
    assert dl20.loc["tk-bert2", "significant (all)"] and not dl20.loc["tk2-pieces", "significant (all)"]
    assert dl20.loc["tk2", "validation"] == 0.45 and math.isnan(dl20.loc["bert-cat", "validation"])
    assert beats_bm25_everywhere(rows) == ["tk-bert2", "bert-cat", "bi-encoder"], "knrm is below BM25"
