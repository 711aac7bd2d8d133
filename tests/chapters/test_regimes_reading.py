"""Chapter 3's tables and reading of the two regimes, on small frames whose answers are known."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from lib.chapters import regimes_reading
from lib.evaluation import time_budget
from lib.evaluation.regimes import compact_costs, compact_table

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


def test_the_reading_names_the_final_leader_and_how_often_the_lead_changed_below() -> None:
    spans = pd.DataFrame([
        {"model": "tk", "from_ms": 1.7, "to_ms": 2.0, "best": 0.5},
        {"model": "bm25", "from_ms": 0.0, "to_ms": 1.7, "best": 0.5},
        {"model": "tk", "from_ms": 2.5, "to_ms": 16.0, "best": 0.5},
        {"model": "bm25", "from_ms": 2.0, "to_ms": 2.5, "best": 0.5},
        {"model": "bert", "from_ms": 16.0, "to_ms": math.inf, "best": 0.6},
    ])  # fmt: skip
    text = regimes_reading._takeover(spans, LABELS)
    assert text == ("BERT-cat is the best student from 16 ms per query on; below that the lead changes hands 4 times "
                    "among BM25, TK")  # fmt: skip
    tied = pd.concat([spans, pd.DataFrame([{"model": "tk", "from_ms": 16.0, "to_ms": math.inf, "best": 0.6}])])
    assert regimes_reading._takeover(tied, LABELS).startswith("BERT-cat = TK are the best student from 16 ms")
    alone = pd.DataFrame([{"model": "tk", "from_ms": 0.0, "to_ms": math.inf, "best": 0.6}])
    assert regimes_reading._takeover(alone, LABELS) == "TK is the best student at every budget"


def test_stored_slower_names_the_models_whose_stored_index_costs_more() -> None:
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


def test_the_compact_reading_gives_each_index_its_size_speed_and_tested_cost() -> None:
    table = pd.DataFrame(
        [{"model": name, "regime": "stored", "dtype": dtype, "bytes_per_passage": size, "ms_100": ms, "ms_1000": 9 * ms}
         for name, dtype, size, ms in [("full", "float16", 60000, 30.0), ("full", "int8", 30000, 25.0),
                                       ("full-pq", "pq", 5000, 10.0)]]
    )  # fmt: skip
    qids = [f"q{i}" for i in range(8)]
    values = {
        "dl19": {
            "bm25": pd.Series([0.1, 0.2, 0.1, 0.3, 0.2, 0.1, 0.2, 0.3], index=qids),
            "full": pd.Series([0.6, 0.7, 0.5, 0.8, 0.7, 0.6, 0.6, 0.9], index=qids),
            "full-pq": pd.Series([0.6, 0.7, 0.5, 0.8, 0.7, 0.6, 0.6, 0.8], index=qids),
        }
    }
    labels = {"full": "TK", "full-pq": "TK (PQ)", "bm25": "BM25"}
    shown = compact_table(table, values, ["full", "full-pq"], "full", labels)
    costs = compact_costs(shown, "TK", 1500.0, 100)
    assert costs.iloc[0][["bytes", "dtype", "full bytes", "full dtype", "ms", "× rival"]].tolist() == [
        5000, "pq", 30000, "int8", 10.0, 150.0
    ]  # fmt: skip
    assert costs.iloc[0]["DL19 above BM25"] and not costs.iloc[0]["DL19 differs"]
    text = regimes_reading.compact_reading(costs, "TK", "BERT-cat")
    assert text.startswith("- **TK (PQ)**: 5,000 bytes per passage (pq; TK 30,000 in int8, 6.0× as many)")
    assert "10.0 ms for 100 stored candidates — 150× faster than BERT-cat run whole (1,500 ms)" in text
    assert "DL19 nDCG@10 0.662, -0.013 against TK (not significantly different, p = " in text
    assert text.endswith("significantly above BM25.") and "not significantly above" not in text
    assert len(text.splitlines()) == 1, "one bullet: the full TK is the reference, not a row of its own"
    values["dl19"]["bert"] = values["dl19"]["full"] + 0.1
    tested = compact_table(table, values, ["full", "full-pq"], "full", labels | {"bert": "BERT-cat"}, ("bert",))
    text = regimes_reading.compact_reading(compact_costs(tested, "TK", 1500.0, 100, "BERT-cat"), "TK", "BERT-cat")
    assert text.endswith("significantly above BM25, against BERT-cat: below (p 0.000*).")


def test_the_pq_choice_marks_the_smallest_number_of_codes_within_the_tolerance() -> None:
    frame = regimes_reading.pq_choice("TK", {"float16": 0.62, "96": 0.619, "32": 0.60, "64": 0.616}, 64, 0.005)
    assert frame.columns[0] == "model" and set(frame["model"]) == {"TK"}
    assert frame["index"].tolist() == ["float16 (unquantised)", "PQ, 32 codes", "PQ, 64 codes", "PQ, 96 codes"]
    assert frame["within"].tolist() == ["—", "no", "yes", "yes"] and frame["chosen"].tolist() == ["", "", "✓", ""]
    assert frame["difference"].iloc[1] == pytest.approx(-0.02)


def test_the_fit_robustness_compares_the_two_fits_per_year_with_a_signed_test() -> None:
    qids = [f"q{i}" for i in range(8)]
    book = pd.Series([0.5, 0.6, 0.4, 0.7, 0.6, 0.5, 0.5, 0.8], index=qids)
    noise = pd.Series([0.01, -0.02, 0.01, 0.0, -0.01, 0.02, 0.0, -0.01], index=qids)
    values = {"dl19": {"pq": book, "out": book + noise},
              "dl20": {"pq": book, "out": book - 0.2 - 0.01 * pd.Series(range(8), index=qids)}}  # fmt: skip
    frame = regimes_reading.fit_robustness(values, "pq", "out").set_index("set")
    assert frame.loc["DL19", "outside vs the book's"] == "no difference"
    assert frame.loc["DL20", "outside vs the book's"] == "below" and frame.loc["DL20", "p"] < 0.05
    assert frame.loc["DL20", "difference"] == pytest.approx(-0.235)


def test_the_cold_reading_gives_each_models_cold_latency_as_a_multiple_of_warm_and_its_projected_size() -> None:
    from lib.evaluation.cold_reads import PROJECTED

    frame = pd.DataFrame([
        {"device": "CPU", "date": "2026-11-28", "precision": "bfloat16", "model": "TK (PQ)", "index": "pq",
         "passages": 1_000_000,
         "state": state, "ms for 100": ms, PROJECTED: 45.5}
        for state, ms in (("warm", 8.0), ("cold", 40.0), ("cold-random", 20.0), ("cold-prefetched", 10.0))
    ])  # fmt: skip
    text = regimes_reading.cold_reading(frame, 100)
    assert text.startswith(
        "- **TK (PQ)** (pq, 1,000,000 passages; CPU, 2026-11-28, bfloat16): warm 8.0 ms, cold 40.0 ms"
    )
    assert "(5.0× warm, +32.0 ms, beyond 2×)" in text and "read at random 20.0 ms (2.5× warm, +12.0 ms, beyond" in text
    assert "served with its candidates' rows asked for at once 10.0 ms (1.2× warm, +2.0 ms, within 2×)" in text
    assert text.endswith(
        "its index at MS MARCO's size 45.5 GiB (ColBERTv2's: 25 GiB at 2 bits per dimension, 16 GiB at 1; ColBERT's "
        "uncompressed: 154 GiB)."
    )
    assert regimes_reading.cold_reading(frame.iloc[0:0], 100).startswith("*No cold-read benchmark")


def test_a_sparse_index_is_read_with_the_share_of_the_full_tks_vectors_it_stores() -> None:
    table = pd.DataFrame(
        [{"model": name, "regime": "stored", "dtype": dtype, "bytes_per_passage": size, "vectors_per_passage": kept,
          "ms_100": ms, "ms_1000": 9 * ms}
         for name, dtype, size, kept, ms in [("full", "float16", 61448, 80.0, 30.0), ("full-pq", "pq", 5128, 80.0, 9.0),
                                             ("sparse", "float16", 46088, 60.0, 25.0)]]
    )  # fmt: skip
    qids = [f"q{i}" for i in range(8)]
    base = pd.Series([0.6, 0.7, 0.5, 0.8, 0.7, 0.6, 0.6, 0.9], index=qids)
    values = {"dl19": {"bm25": base - 0.4, "full": base, "full-pq": base - 0.01, "sparse": base - 0.005}}
    labels = {"full": "TK", "full-pq": "TK (PQ)", "sparse": "TK-Sparse", "bm25": "BM25"}
    shown = compact_table(table, values, ["full", "full-pq", "sparse"], "full", labels)
    assert shown.set_index("model")["vectors / passage"].tolist() == [80.0, 80.0, 60.0]
    costs = compact_costs(shown, "TK", 1500.0, 100).set_index("model")
    assert costs.loc["TK-Sparse", "vectors share"] == pytest.approx(0.75)
    text = regimes_reading.compact_reading(costs.reset_index(), "TK", "BERT-cat").splitlines()
    assert "storing 75% of TK's vectors" in text[1] and "storing" not in text[0], "said only where it differs"
