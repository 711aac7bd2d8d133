"""Chapter 3's tables and reading of the two regimes, on small frames whose answers are known."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from lib.chapters import regimes_reading
from lib.evaluation import time_budget

LABELS = {"tk": "TK", "bert": "BERT-cat", "teacher": "Bi (teacher)", "bm25": "BM25"}
CURVES = {
    "tk": pd.DataFrame({"nDCG@10": [0.5, 0.6, 0.65]}, index=pd.Index(range(3), name="depth")),
    "bert": pd.DataFrame({"nDCG@10": [0.5, 0.7, 0.8]}, index=pd.Index(range(3), name="depth")),
    "teacher": pd.DataFrame({"nDCG@10": [0.5, 0.75, 0.9]}, index=pd.Index(range(3), name="depth")),
}


def frame(speeds: dict[str, float], fixed: dict[str, float] | None = None) -> pd.DataFrame:
    budgets = time_budget.breakpoints(speeds, dict.fromkeys(speeds, 2), fixed)
    chosen = dict(CURVES) | {"bm25": time_budget.first_stage_curve(CURVES["tk"])}
    return time_budget.budget_curves(chosen, speeds, budgets, fixed)


def test_the_cost_table_shows_labels_sizes_and_flags_estimates() -> None:
    table = pd.DataFrame(
        [{"model": "tk", "regime": "stored", "dtype": "int8", "bytes_per_passage": 3102.6, "index_seconds": 71.51,
          "ms_10": 4.9, "ms_100": 25.94, "measured_10": True, "measured_100": False}]
    )  # fmt: skip
    shown = regimes_reading.cost_display(table, [10, 100], LABELS).iloc[0].to_dict()
    assert shown == {"model": "TK", "regime": "stored", "index": "int8", "bytes / passage": 3103,
                     "index build (s)": 71.5, "ms for 10": "4.9", "ms for 100": "25.9 (est.)"}  # fmt: skip


def test_the_best_student_leaves_the_teacher_out_and_shows_its_value() -> None:
    frames = {"whole": frame({"tk": 1.0, "bert": 0.1, "teacher": 0.1})}
    table = regimes_reading.student_leaders(frames, "teacher", [1.0, 20.0], LABELS, "nDCG@10")
    assert table["whole: best student(s)"].to_list() == ["TK", "BERT-cat"]
    assert table["whole: nDCG@10"].to_list() == [0.6, 0.8]
    assert table["whole: teacher"].to_list() == [0.5, 0.9]  # better than every student: still not listed


def test_tests_and_reading_name_where_the_order_is_significant_and_where_not() -> None:
    frames = {("dl19", "stored"): frame({"tk": 1.0, "bert": 0.1, "teacher": 0.1}, {"tk": 0.5})}
    tests = {
        ("dl19", "stored"): pd.DataFrame(
            [{"budget_ms": 1.0, "model": "tk", "rival": "bert", "model depth": 1, "rival depth": 0, "delta": 0.1,
              "p_bonferroni": 0.01, "significant": True},
             {"budget_ms": 2.0, "model": "tk", "rival": "bert", "model depth": 2, "rival depth": 0, "delta": 0.15,
              "p_bonferroni": 0.2, "significant": False},
             {"budget_ms": 50.0, "model": "tk", "rival": "bert", "model depth": 2, "rival depth": 2, "delta": 0.0,
              "p_bonferroni": 1.0, "significant": False}]
        )
    }  # fmt: skip
    shown = regimes_reading.tests_display(tests)
    assert shown["DL19 stored"].to_list()[:2] == ["+0.100 (1 / 0) p=0.010*", "+0.150 (2 / 0) p=0.200"]
    text = regimes_reading.regimes_reading(frames, tests, "teacher", ["tk"], LABELS)
    assert "**DL19, stored**" in text and "a TK leads (TK)" in text
    assert "significantly different at 1 ms, not significantly different at 2 ms" in text
    assert "Bi (teacher)" in text and "not a contestant" in text


def test_the_compact_table_tests_each_index_against_bm25_and_the_full_tk() -> None:
    table = pd.DataFrame(
        [{"model": name, "regime": "stored", "dtype": dtype, "bytes_per_passage": size, "ms_100": ms,
          "ms_1000": 10 * ms}
         for name, dtype, size, ms in [("full", "float16", 60000, 30.0), ("full", "int8", 30000, 25.0),
                                       ("small", "float16", 5000, 8.0), ("small", "int8", 2600, 9.0)]]
    )  # fmt: skip
    qids = [f"q{i}" for i in range(8)]
    values = {
        "dl19": {
            "bm25": pd.Series([0.1, 0.2, 0.1, 0.3, 0.2, 0.1, 0.2, 0.3], index=qids),
            "full": pd.Series([0.6, 0.7, 0.5, 0.8, 0.7, 0.6, 0.6, 0.9], index=qids),
            "small": pd.Series([0.6, 0.7, 0.5, 0.8, 0.7, 0.6, 0.6, 0.8], index=qids),
        }
    }
    shown = regimes_reading.compact_table(
        table, values, ["full", "small"], "full", {"full": "TK", "small": "TK d32", "bm25": "BM25"}
    )
    small = shown.set_index("model").loc["TK d32"]
    assert small["bytes / passage (int8)"] == 2600 and small["stored ms for 100"] == 8.0
    assert small["DL19 nDCG@10"] == pytest.approx(0.6625)
    assert small["DL19 p vs BM25"].endswith("*") and not small["DL19 p vs TK"].endswith("*")
    assert math.isnan(shown.set_index("model").loc["TK"].get("DL19 p vs TK", math.nan))


def test_the_ladder_verdict_measures_each_tk_against_bert_cat_in_both_regimes() -> None:
    table = pd.DataFrame(
        [{"model": "bert", "regime": "whole", "ms_100": 1000.0},
         {"model": "tk", "regime": "whole", "ms_100": 500.0},
         {"model": "tk", "regime": "stored", "ms_100": 150.0},
         {"model": "tk", "regime": "stored", "ms_100": 100.0}]
    )  # fmt: skip
    row = regimes_reading.ladder_verdict(table, ["tk"], "bert", LABELS).iloc[0].to_dict()
    assert row["whole: × BERT-cat"] == 2.0 and row["whole: ≥ 5×"] == "no"
    assert row["stored ms for 100"] == 100.0 and row["stored: × BERT-cat"] == 10.0 and row["stored: ≥ 5×"] == "yes"


def test_committed_cost_tables_are_read_with_their_device_and_date(tmp_path) -> None:
    assert regimes_reading.committed_regimes(tmp_path, LABELS).empty
    real = sorted((Path(__file__).parents[2] / "benchmarks" / "results" / "regimes").glob("*.json"))
    assert real, "the H100's cost table is committed"
    (tmp_path / real[0].name).write_text(real[0].read_text())
    table = regimes_reading.committed_regimes(tmp_path, {"tk2": "TK-2"})
    assert table["device"].str.contains("H100").all() and set(table["regime"]) == {"whole", "stored"}
    tk2 = table[(table["model"] == "TK-2") & (table["index"] == "int8")].iloc[0]
    assert tk2["bytes / passage"] > 0 and tk2["ms for 1,000"] > 0
    assert tk2["peak GPU MiB"] > 0  # the H100's file measured the memory
    frame = pd.DataFrame(
        [{"device": "GPU", "model": "A", "regime": "whole", "ms for 1,000": 10.0},
         {"device": "GPU", "model": "A", "regime": "stored", "ms for 1,000": 30.0},
         {"device": "GPU", "model": "A", "regime": "stored", "ms for 1,000": 20.0},
         {"device": "GPU", "model": "B", "regime": "whole", "ms for 1,000": 10.0},
         {"device": "GPU", "model": "B", "regime": "stored", "ms for 1,000": 5.0}]
    )  # fmt: skip
    assert regimes_reading.stored_slower(frame) == (
        "On the GPU, stored indexes cost more than running the model whole at 1,000 candidates for A (20.0 against "
        "10.0 ms)."
    )
    faster = regimes_reading.stored_slower(frame[frame["model"] == "B"])
    assert faster == "On the GPU, every stored index is cheaper than running its model whole at 1,000 candidates."
    older = json.loads(real[0].read_text())
    for row in older["rows"]:
        del row["peak_memory_mb"]
    (tmp_path / real[0].name).write_text(json.dumps(older))
    assert regimes_reading.committed_regimes(tmp_path, {})["peak GPU MiB"].isna().all()  # a file from before it


def test_the_thesis_bullet_names_the_best_student_and_the_tested_order_per_regime() -> None:
    students = pd.DataFrame(
        {
            "budget (ms)": ["10", "100"],
            "whole: best student(s)": ["BM25", "TK"],
            "stored: best student(s)": ["TK", "BERT-cat"],
        }
    )
    tests = {
        regime: pd.DataFrame(
            [{"budget_ms": 10.0, "model": "tk", "rival": "bert", "delta": delta10, "significant": False},
             {"budget_ms": 100.0, "model": "tk", "rival": "bert", "delta": -0.05, "significant": True}]
        )
        for regime, delta10 in (("whole", 0.0), ("stored", 0.04))
    }  # fmt: skip
    text = regimes_reading.thesis_finding(students, tests, "dl19", [10, 100, 1000], LABELS)
    assert text.startswith("- **The thesis in both regimes (DL19 nDCG@10).**")
    assert "*whole* — 10 ms: BM25 (no difference); 100 ms: TK (BERT-cat ahead, significantly)" in text
    assert (
        "*stored* — 10 ms: TK (TK ahead, not significantly); 100 ms: BERT-cat (BERT-cat ahead, significantly)" in text
    )
    assert "1000 ms" not in text  # a budget outside the grid is left out
