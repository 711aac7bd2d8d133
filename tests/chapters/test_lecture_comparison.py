"""Chapter 8's comparison (``lib.chapters.lecture_comparison``): the table, the figure, the readings."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from types import SimpleNamespace

import pandas as pd
import pytest

from lib.chapters import lecture_comparison
from lib.core.profiles import get_profile
from lib.evaluation.comparison import compare_per_query

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_comparison_table_has_one_row_per_model_in_label_order() -> None:
    effectiveness = {
        "dl19": pd.DataFrame({"nDCG@10": [0.5, 0.45, 0.55]}, index=["bm25", "tk2", "colbert"]),
        "dl20": pd.DataFrame({"nDCG@10": [0.4]}, index=["tk2"]),
    }
    latency = pd.DataFrame([("tk2", 100, 12.0), ("tk2", 1000, 90.0)], columns=["model", "candidates", "ms"])
    table = lecture_comparison.comparison_table(
        effectiveness, latency, {"tk2": 6000.0}, {"bm25": "BM25", "tk2": "TK-2", "colbert": "ColBERT"}
    )
    assert list(table.index) == ["BM25", "TK-2", "ColBERT"]
    assert table.loc["TK-2", "DL20 nDCG@10"] == 0.4 and pd.isna(table.loc["ColBERT", "DL20 nDCG@10"])
    assert table.loc["TK-2", "ms for 1000"] == 90.0 and table.loc["TK-2", "bytes per passage"] == 6000.0
    assert table.columns[:4].tolist() == ["DL19 nDCG@10", "DL20 nDCG@10", "ms for 100", "ms for 1000"]
    assert "kernels" in table.loc["TK-2", "at query time"]


def test_tradeoff_figure_leaves_out_models_without_latency_and_refuses_an_empty_table() -> None:
    table = pd.DataFrame(
        {"DL19 nDCG@10": [0.5, 0.45, 0.55], "ms for 1000": [None, 90.0, 30.0]}, index=["BM25", "TK-2", "ColBERT"]
    )
    figure = lecture_comparison.plot_tradeoff(table, "DL19 nDCG@10", "ms for 1000", [10, 100], "t")
    axis = figure.axes[0]
    assert [text.get_text() for text in axis.texts if "ms" not in text.get_text()] == ["TK-2", "ColBERT"]
    assert axis.get_xscale() == "log"
    with pytest.raises(ValueError, match="no model has both"):
        lecture_comparison.plot_tradeoff(table.iloc[:1], "DL19 nDCG@10", "ms for 1000", [], "t")


def test_labels_of_nearly_coinciding_models_go_above_and_below_and_distant_ones_stay_above() -> None:
    # chapter 8's book build: TK-2 (28.5 ms, 0.497) and TK-Sparse (31.8 ms, 0.499) nearly coincide
    latencies, values = [28.5, 31.8, 13779.0, 438.0], [0.497, 0.499, 0.594, 0.624]
    assert lecture_comparison.label_offsets(latencies, values) == [(6, 4), (6, -12), (6, 4), (6, 4)]
    table = pd.DataFrame({"DL19 nDCG@10": values, "ms for 1000": latencies}, index=["TK-2", "TK-Sparse", "B", "C"])
    figure = lecture_comparison.plot_tradeoff(table, "DL19 nDCG@10", "ms for 1000", [], "t")
    positions = {text.get_text(): text.xyann for text in figure.axes[0].texts}
    assert positions["TK-2"] == (6, 4) and positions["TK-Sparse"] == (6, -12)


def test_the_prettr_dial_is_drawn_on_the_models_axes() -> None:
    table = pd.DataFrame({"DL19 nDCG@10": [0.6, 0.5], "ms for 100": [900.0, 40.0]}, index=["BERT-cat", "TK-2"])
    dial = pd.DataFrame(
        {"DL19 nDCG@10": [0.6, 0.55, 0.3], "ms for 100": [900.0, 500.0, None]}, index=pd.Index([0, 1, 2], name="k")
    )
    figure = lecture_comparison.plot_tradeoff(table, "DL19 nDCG@10", "ms for 100", [], "t", dial=dial)
    axis = figure.axes[0]
    assert [text.get_text() for text in axis.texts] == ["BERT-cat", "TK-2", "k=0", "k=1"]  # k=2 has no latency
    assert axis.lines[-1].get_xdata().tolist() == [900.0, 500.0]


def _prettr_results(validation: float, dl19: float, dl20: float) -> dict:
    training = SimpleNamespace(best_metric=validation)
    return {
        name: SimpleNamespace(training=training, best_step=40, metrics_at_full_depth={"nDCG@10": value})
        for name, value in (("dl19", dl19), ("dl20", dl20))
    }


@pytest.mark.parametrize(
    ("results", "expected"),
    [
        (
            _prettr_results(0.52, 0.58, 0.50),
            ["(nDCG@10) the split", "0.500 untrained and 0.520", "at or above BM25 on every", "holds here"],
        ),
        (_prettr_results(0.45, 0.58, 0.40), ["did not improve", "below BM25 on at least one year", "does not hold"]),
        (_prettr_results(0.52, 0.50, 0.50), ["at or above BM25", "more than 0.05 below", "does not hold"]),
    ],
)
def test_prettr_reading_compares_with_the_untrained_split_bert_cat_and_bm25(
    results: dict, expected: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    qrels = {"q1": {"a": 2, "b": 0}, "q2": {"c": 1}}
    bm25 = {"q1": {"b": 2.0, "a": 1.0}, "q2": {"c": 1.0}}  # nDCG@10 of BM25 below 1, BERT-cat's run is perfect
    tests = {name: SimpleNamespace(run=bm25, qrels=qrels) for name in ("dl19", "dl20")}
    perfect = {"q1": {"a": 2.0, "b": 1.0}, "q2": {"c": 1.0}}
    monkeypatch.setattr(lecture_comparison, "read_run", lambda path: perfect)
    monkeypatch.setattr(lecture_comparison, "evaluate", lambda run, qrels: {"nDCG@10": 0.6 if run is perfect else 0.45})
    sweep = pd.DataFrame({"VALIDATION nDCG@10": [0.6, 0.5]}, index=pd.Index([0, 5], name="k"))  # validation only
    reading = lecture_comparison.prettr_reading(results, sweep, 5, "VALIDATION nDCG@10", tests, get_profile("smoke"))
    assert "k = 5" in reading and "(BERT-cat 0.600, BM25 0.450)" in reading
    for phrase in expected:
        assert phrase in reading, phrase


def test_the_tradeoff_reading_names_the_best_and_the_fastest_re_ranker() -> None:
    table = pd.DataFrame(
        {"DL19 nDCG@10": [0.5, 0.6, 0.7, 0.8], "DL19 p vs bert-cat": ["0.010*", "0.200", "—", "0.300"],
         "ms for 100": [None, 2.0, 30.0, 20.0]},
        index=["BM25", "TK-2", "BERT-cat", "bi-encoder (teacher)"],
    )  # fmt: skip
    assert lecture_comparison.tradeoff_reading(table, 100, "bi-encoder (teacher)") == (
        "On DL19 the highest nDCG@10 among the students here is **BERT-cat**'s (it is BERT-cat; the teacher, "
        "bi-encoder (teacher), is a reference); the fastest at 100 candidates is **TK-2**. BM25 scores nDCG@10 0.500: "
        "a re-ranker above it is worth its latency, one below it is not, whatever its speed."
    )
    students = table.drop("BERT-cat")
    assert "**TK-2**'s (against BERT-cat p = 0.200 (not significant)" in lecture_comparison.tradeoff_reading(
        students, 100, "bi-encoder (teacher)"
    )


def test_the_table_gives_each_models_corrected_p_against_the_baseline() -> None:
    qids = [f"q{i}" for i in range(6)]
    values = {
        "bert-cat": pd.DataFrame({"nDCG@10": [0.6, 0.7, 0.5, 0.8, 0.6, 0.7]}, index=qids),
        "tk2": pd.DataFrame({"nDCG@10": [0.2, 0.3, 0.1, 0.3, 0.2, 0.25]}, index=qids),
        "colbert": pd.DataFrame({"nDCG@10": [0.6, 0.7, 0.5, 0.8, 0.6, 0.69]}, index=qids),
    }
    effectiveness = {"dl19": compare_per_query(values, baseline="bert-cat")}
    latency = pd.DataFrame(columns=["model", "candidates", "ms"])
    labels = {"bert-cat": "BERT-cat", "tk2": "TK-2", "colbert": "ColBERT"}
    table = lecture_comparison.comparison_table(effectiveness, latency, {}, labels)
    assert table.columns[:2].tolist() == ["DL19 nDCG@10", "DL19 p vs bert-cat"]
    assert table.loc["BERT-cat", "DL19 p vs bert-cat"] == "—"
    assert table.loc["TK-2", "DL19 p vs bert-cat"].endswith("*")  # far below on every query
    assert not table.loc["ColBERT", "DL19 p vs bert-cat"].endswith("*")  # one query differs by 0.01


def test_the_mono_duo_reading_gives_each_years_verdict_and_the_cost() -> None:
    table = pd.DataFrame(
        [{"year": "DL19", "mono nDCG@10": 0.6, "mono-duo nDCG@10": 0.65, "delta": 0.05, "p": 0.01,
          "significant": True, "queries": 43, "duo passes / query": 90, "duo ms / query": 1000.0},
         {"year": "DL20", "mono nDCG@10": 0.6, "mono-duo nDCG@10": 0.59, "delta": -0.01, "p": 0.6,
          "significant": False, "queries": 54, "duo passes / query": 90, "duo ms / query": 2000.0}]
    )  # fmt: skip
    text = lecture_comparison.mono_duo_reading(table, "nDCG@10")
    assert "On DL19 mono-duo's nDCG@10 (0.650) is significantly higher than mono BERT-cat's (0.600;" in text
    assert "On DL20 mono-duo's nDCG@10 (0.590) is not significantly different from mono BERT-cat's" in text
    assert "90 passes per query, 1,500 ms per query" in text


def _tested_table() -> pd.DataFrame:
    qids = [f"q{i}" for i in range(6)]
    values = {
        "bert-cat": pd.DataFrame({"nDCG@10": [0.6, 0.7, 0.5, 0.8, 0.6, 0.7]}, index=qids),
        "tk2": pd.DataFrame({"nDCG@10": [0.2, 0.3, 0.1, 0.3, 0.2, 0.25]}, index=qids),
    }
    latency = pd.DataFrame([("bert-cat", 100, 900.0), ("tk2", 100, 7.04)], columns=["model", "candidates", "ms"])
    table = lecture_comparison.comparison_table(
        {"dl19": compare_per_query(values, baseline="bert-cat")}, latency, {"tk2": 5432.0},
        {"bert-cat": "BERT-cat", "tk2": "TK-2"},
    )  # fmt: skip
    table["peak GPU MiB (H200)"] = [2048.0, float("nan")]
    return table


def test_the_effectiveness_table_is_the_comparison_tables_first_columns() -> None:
    table = _tested_table()
    effectiveness = lecture_comparison.effectiveness_table(
        {"dl19": compare_per_query({"bm25": pd.DataFrame({"nDCG@10": [0.1, 0.2]}, index=["a", "b"])})},
        {"bm25": "BM25", "tk2": "TK-2"},
    )  # fmt: skip
    assert effectiveness.columns.tolist() == ["DL19 nDCG@10"]  # no baseline: no test column
    assert effectiveness.loc["BM25", "DL19 nDCG@10"] == pytest.approx(0.15)
    assert pd.isna(effectiveness.loc["TK-2", "DL19 nDCG@10"])
    assert table.columns[:2].tolist() == ["DL19 nDCG@10", "DL19 p vs bert-cat"]


def test_the_projection_view_has_five_columns_and_marks_significant_values() -> None:
    view = lecture_comparison.projection_view(_tested_table(), 100)
    assert view.columns.tolist() == ["DL19 nDCG@10", "ms / 100", "bytes / passage", "GPU MiB (H200)"]
    assert view.loc["TK-2", "DL19 nDCG@10"].endswith("*")  # far below BERT-cat on every query
    assert view.loc["BERT-cat", "DL19 nDCG@10"] == "0.650"  # the baseline carries no mark
    assert view.loc["TK-2", "ms / 100"] == "7.0"
    assert view.loc["TK-2", "bytes / passage"] == "5,432" and view.loc["BERT-cat", "bytes / passage"] == ""
    assert view.loc["BERT-cat", "GPU MiB (H200)"] == "2,048" and view.loc["TK-2", "GPU MiB (H200)"] == ""


def test_whole_latency_keeps_one_run_whole_row_per_model() -> None:
    regimes = pd.DataFrame(
        {"model": ["tk2", "tk2", "bert-cat"], "regime": ["whole", "stored", "whole"], "ms_100": [20.0, 5.0, 900.0]}
    )
    latency = lecture_comparison.whole_latency(regimes, 100)
    assert latency.to_dict("records") == [
        {"model": "tk2", "candidates": 100, "ms": 20.0},
        {"model": "bert-cat", "candidates": 100, "ms": 900.0},
    ]


def test_the_sweep_reading_says_whether_a_larger_target_always_removes_more() -> None:
    rows = {"model": ["TK-2", "TK-Sparse", "TK-Sparse", "TK-Sparse"], "target": [None, 0.4, 0.1, 0.2],
            "removed (validation passages)": [0.0, 0.45, 0.12, 0.2]}  # fmt: skip
    assert lecture_comparison.monotone_reading(pd.DataFrame(rows)) == (
        "The sweep is monotone: each larger target removes at least the share of the one before "
        "(target 10%: 12%, target 20%: 20%, target 40%: 45%)."
    )
    rows["removed (validation passages)"] = [0.0, 0.26, 0.0, 1.0]  # the old gate: a collapse at a middle setting
    assert lecture_comparison.monotone_reading(pd.DataFrame(rows)) == (
        "The sweep is not monotone: target 40% removes 26%, less than target 20%'s 100% "
        "(target 10%: 0%, target 20%: 100%, target 40%: 26%)."
    )
