"""Chapter 6's TILDE tables as shown (``lib.chapters.tilde_tables``): the marks, training data, index size."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from lib.chapters.tilde_tables import (
    MS_MARCO_PASSAGES,
    index_size,
    loss_curves,
    mark,
    marked_ablation,
    marked_table2,
    table2_value,
    training_data_table,
)
from lib.evaluation import measures as evaluation
from lib.experiments.tilde_comparisons import ablation, effectiveness_table
from lib.training.tilde_variants import VARIANTS
from tests.experiments.test_tilde_scorings import FIRST_STAGE, QRELS, scores


def test_index_size_scales_bytes_per_passage_to_ms_marco() -> None:
    table = index_size({"TILDE": 61_150.0, "TILDEv2": 200.0}, 4_000)
    assert table.index.tolist() == ["TILDE", "TILDEv2"]
    assert table["GB, the book's index"].tolist() == pytest.approx([4_000 * 61_150 / 1e9, 4_000 * 200 / 1e9])
    assert table.loc["TILDE", "GB, MS MARCO passage (8.8M)"] == pytest.approx(MS_MARCO_PASSAGES * 61_150 / 1e9)
    with pytest.raises(ValueError, match="negative"):
        index_size({"TILDE": -1.0}, 1)


def test_mark_adds_a_dagger_only_for_true() -> None:
    assert mark(0.12345, True) == "0.123 †"
    assert mark(0.12345, False) == mark(0.12345, float("nan")) == "0.123"


def test_marked_ablation_shows_marks_and_p_values() -> None:
    table = ablation(
        {"biqdl": scores([-3, -2, -1], [-1, -5, -2]), "ql": scores([-1, -2, -3], [0, 0, 0])}, FIRST_STAGE, QRELS
    )
    shown = marked_ablation(table, ["nDCG@10", "MAP"])
    assert shown.columns.tolist() == ["loss", "scoring", "nDCG@10", "MAP", "p nDCG@10", "p MAP"]
    marks = zip(table["nDCG@10"], table["significant nDCG@10"], strict=True)
    assert shown["nDCG@10"].tolist() == [mark(value, significant) for value, significant in marks]


def test_training_data_table_and_loss_curves() -> None:
    sources = {"DL21 judged pairs": 6, "teacher": 2, "own pieces": 4}
    data = SimpleNamespace(sources=sources, pairs=[("q1", "a")] * 8, reconstruction=["a", "b", "c", "d"])
    table = training_data_table(data, steps=6, batch_size=4)
    assert table["examples"].tolist() == [6, 2, 4, 12]
    assert table.loc["all", "epochs"] == 2.0 and table["epochs"].isna().sum() == 3
    curves = loss_curves({"biqdl": SimpleNamespace(losses=[3.0, 2.0])})
    assert curves.values.tolist() == [[VARIANTS["biqdl"].label, 1, 3.0], [VARIANTS["biqdl"].label, 2, 2.0]]


def test_marked_table2_marks_the_significant_means() -> None:
    good = {q: {"c": 3.0, "b": 2.0, "a": 1.0} for q in FIRST_STAGE}
    systems = {"dl19": {"BM25": FIRST_STAGE, "BM25 + X": good, "Other": FIRST_STAGE}}
    table = effectiveness_table(
        systems, {"dl19": {"BM25": "BM25", "BM25 + X": "BM25", "Other": "Other"}}, {"dl19": QRELS}
    )
    want = evaluation.evaluate(good, QRELS, ["nDCG@10"])["nDCG@10"]
    shown = marked_table2(table.fillna({("DL19", "nDCG@10 †"): True}), ["dl19"], ["nDCG@10"])
    assert shown.loc["BM25 + X", ("DL19", "nDCG@10")] == f"{want:.3f}"
    assert shown.loc["Other", ("DL19", "nDCG@10")].endswith(" †")
    assert table2_value(table, "BM25 + X", "dl19") == pytest.approx(want)
