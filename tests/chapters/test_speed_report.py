"""Chapter 3's speed report: the readings of the TK-2 / BERT-Base ratios and of the roofline, the figure, findings."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import pandas as pd

from lib.chapters import speed_report
from lib.evaluation.roofline import roofline_table
from lib.evaluation.speed_benchmark import ratio_table
from tests.evaluation.test_roofline import roofline_rows
from tests.evaluation.test_speed_benchmark import NEW, OLD, benchmark_file


def test_the_ratio_reading_says_before_and_after() -> None:
    table = ratio_table({"old.json": benchmark_file(OLD), "new.json": benchmark_file(NEW)})
    reading = speed_report.ratio_reading(table)
    assert "0.4 documents per ms" in reading and "50× BERT-Base" in reading
    assert "3.1× its rank-order float32 eager speed (0.13, 34× BERT-Base, file old.json)" in reading
    assert "1 of 2 settings reach the paper's 40×" in reading
    assert "No committed run" in speed_report.ratio_reading(ratio_table({}))


def test_roofline_figure_and_reading() -> None:
    table = roofline_table(roofline_rows())
    figure = speed_report.plot_roofline(table, {"float32": 100.0})
    assert figure.axes[0].get_xscale() == "log"
    reading = speed_report.roofline_reading(table)
    assert reading.startswith("BERT-Base comes closest to the roof (56 %")
    assert "BERT-Base does 70× TK-2's floating-point work per document but takes only 25× its time" in reading
    assert "above 100 %" not in reading
    table.loc["BERT-Base", "% of peak"] = 103.0
    assert speed_report.roofline_reading(table).startswith(
        "BERT-Base comes closest to the roof (103 % of the matmul peak), above 100 % because the peak is the best"
    )


def test_bf16_reading() -> None:
    table = pd.DataFrame(
        {"max_abs_difference": [0.05], "mean_abs_difference": [0.004], "score_range": [12.0],
         "swapped_fraction": [0.012], "nDCG@10 (float32)": [0.4123], "nDCG@10 (bf16)": [0.4101]},
        index=["dl19"],
    )  # fmt: skip
    reading = speed_report.bf16_reading(table)
    assert reading == (
        "In bf16, on DL19 the scores move by at most 0.05 (mean 0.004, on a score range of 12), 1.2 % of the "
        "candidate pairs of a query swap places, and nDCG@10 goes from 0.412 to 0.410."
    )


def test_leading_ranges_and_the_sentence_say_where_a_model_leads() -> None:
    spans = pd.DataFrame(
        {
            "model": ["tk2", "tk2", "bert-cat", "tk1", "tk3"],
            "from_ms": [1.0, 50.0, 2.0, 3.2, 13.21],
            "to_ms": [20.0, math.inf, 50.0, 3.4, 13.46],
        }
    )
    assert speed_report.leading_ranges(spans, "tk2") == "1.0–20, 50–∞"
    assert speed_report.leading_ranges(spans, "tk1") == "3.2–3.4"  # not "3–3"
    assert speed_report.leading_ranges(spans, "tk3") == "13.2–13.5"  # not "13–13"
    assert speed_report.leading_ranges(spans, "knrm") == "never"
    slivers = pd.DataFrame({"model": ["tk2"] * 5, "from_ms": [87.0, 108, 151, 260, 476],
                            "to_ms": [98.0, 135, 188, 274, math.inf]})  # fmt: skip
    assert speed_report.leading_ranges(slivers, "tk2") == "5 ranges between 87–98 and 476–∞"
    sentence = speed_report.leads_reading({"dl19": "1–20", "dl20": "never"})
    assert (
        sentence
        == "On DL19 nDCG@10 it is (among) the best at budgets of 1–20 ms; on DL20 nDCG@10 it leads at no budget"
    )


def test_the_papers_order_holds_only_where_every_step_is_significantly_higher() -> None:
    qids = [f"q{i}" for i in range(8)]
    low = pd.Series([0.1, 0.2, 0.1, 0.3, 0.2, 0.1, 0.2, 0.3], index=qids)
    high = low + pd.Series([0.30, 0.35, 0.32, 0.31, 0.36, 0.29, 0.33, 0.34], index=qids)
    near = high + pd.Series([0.01, -0.01, 0.0, 0.02, -0.02, 0.01, 0.0, 0.0], index=qids)
    labels = ["KNRM", "TK", "BERT-cat"]
    top = high + pd.Series([0.30, 0.31, 0.29, 0.30, 0.32, 0.28, 0.30, 0.30], index=qids)
    text = speed_report.order_reading({"dl19": [low, high, top], "dl20": [low, high, near]}, labels)
    dl19, dl20 = text.split("; DL20")
    assert dl19.startswith("DL19 KNRM 0.188, TK 0.512, BERT-cat 0.812: TK significantly higher than KNRM")
    assert dl19.endswith("— holds")
    assert "BERT-cat higher than TK, not significantly" in dl20 and "does not hold as tested" in dl20
    assert text.endswith("(paired t-tests, Bonferroni over the year's pairs).")
    reversed_order = speed_report.order_reading({"dl19": [high, low]}, ["TK", "KNRM"])
    assert "KNRM not higher than TK" in reversed_order and "does not hold as tested" in reversed_order


def test_the_speed_order_sentence_names_every_swapped_pair() -> None:
    paper = {"bert-base": 0.1, "tk2": 4.0, "knrm": 10.0}
    labels = {"bert-base": "BERT-Base", "tk2": "TK-2", "knrm": "KNRM"}
    assert speed_report.speed_order_sentence(paper, {"bert-base": 1, "tk2": 20, "knrm": 30}, labels) == (
        "The paper's ordering of the architectures by speed holds on this machine"
    )
    assert speed_report.speed_order_sentence(paper, {"bert-base": 25, "tk2": 20, "knrm": 30}, labels) == (
        "The paper's ordering of the architectures by speed does not fully hold here (swapped: TK-2 / BERT-Base)"
    )


def test_the_findings_bullets_follow_the_numbers() -> None:
    speed = speed_report.speed_finding("The order holds", 12.4, {"tk2": 100, "bert-cat": 8})
    assert speed.startswith("- **Speed.** The order holds; TK-2 is 12× faster than BERT-Base")
    assert "TK-2 re-ranks 100 candidates here and a BERT-Base-sized BERT-cat 8" in speed
    assert speed_report.depth_finding(["TK-2 on DL19", "KNRM on DL19"], 3, 100).endswith(
        "for 2 of 3 model–year pairs (TK-2 on DL19, KNRM on DL19): at book scale, more depth — and so more time — "
        "mostly hurts."
    )
    assert speed_report.depth_finding([], 4, 100).endswith("for 0 of 4 model–year pairs: at book scale, more depth "
                                                            "— and so more time — does not mostly hurt.")  # fmt: skip
    assert speed_report.budget_finding([], "dl19", "TK-2", "BERT-cat") == (
        "- **Under a budget.** Measures and sets on which no re-ranker is ever strictly better than BM25 at any "
        "budget: none. The best at any budget on DL19 nDCG@10 is TK-2; at 100 ms, in the paper's situation, BERT-cat."
    )
    chosen = speed_report.chosen_tk_finding("TK-2", {"dl19": "never"})
    assert chosen == (
        "- **The TK chosen on validation, TK-2.** On DL19 nDCG@10 it leads at no budget (the book's own speeds, "
        "chapter 2)."
    )
    qids = [f"q{i}" for i in range(4)]
    knrm, tk = pd.Series([0.4, 0.3, 0.5, 0.4], index=qids), pd.Series([0.8, 0.75, 0.85, 0.82], index=qids)
    order = speed_report.order_finding(100, "TK-2", {"dl19": [knrm, tk]}, ["KNRM", "TK-2"])
    assert "with TK-2 as TK: DL19 KNRM 0.400, TK-2 0.805: TK-2 significantly higher than KNRM" in order


def test_the_docs_per_ms_table_marks_estimated_and_repeated_latencies_and_the_figure_draws_both_sources() -> None:
    speed_table = pd.DataFrame(
        {
            "label": ["TK-2 (300-d)", "BERT-Base"], "parameters": [2.5e6, 110e6], "docs_per_ms": [40.0, 0.5],
            "latency_100_ms": [2.5, 200.0], "latency_1000_ms": [25.04, 2000.0],
            "latency_100_measured": [True, True], "latency_1000_measured": [True, False],
            "latency_100_repeated": [False, False], "latency_1000_repeated": [True, True],
        },
        index=["tk2-paper", "bert-base"],
    )  # fmt: skip
    table = speed_report.docs_per_ms_table(speed_table, {"tk2-paper": 4.0, "bert-base": 0.1})
    assert table.loc["tk2-paper", "ms for 100"] == "2.5"
    assert table.loc["tk2-paper", "ms for 1,000"] == "25.0 (rep.)"
    assert table.loc["bert-base", "ms for 1,000"] == "2,000.0 (est., rep.)"
    assert table.loc["bert-base", "parameters (M)"] == 110.0
    assert table["docs/ms (paper, GPU 2019)"].tolist() == [4.0, 0.1]
    figure = speed_report.plot_docs_per_ms(table)
    widths = sorted(round(patch.get_width(), 3) for patch in figure.axes[0].patches if patch.get_width() > 0)
    assert widths == [0.1, 0.5, 4.0, 40.0]  # both sources drawn, nothing else
