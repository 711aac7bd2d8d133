"""Chapter 9's tables, figures and readings (``lib.chapters.long_documents_reading``) on small inputs."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pandas as pd

from lib.chapters import long_documents_reading as reading
from lib.core.types import JudgedSet
from lib.data.assembled_documents import AssembledSet, Layout
from lib.evaluation.comparison import compare
from lib.evaluation.position_effect import coverage_table

ASSEMBLED = AssembledSet(
    documents={"q-0": "a b c", "q-1": " ".join(["w"] * 600)},
    qrels={"q": {"q-0": 2, "q-1": 0}},
    run={"q": {"q-0": 2.0, "q-1": 1.0}},
    layouts={"q-0": Layout("q", ("p1", "p2", "p3"), 2, 2), "q-1": Layout("q", ("p4",), None, 0)},
)


def test_the_collection_table_describes_time_and_the_assembled_years() -> None:
    time = JudgedSet("time", {"1": "x", "2": "y"}, {"1": {"3": 1}, "2": {"3": 1, "4": 1}}, {})
    table = reading.collection_table(time, {"3": "a b", "4": " ".join(["w"] * 513)}, {"dl19": ASSEMBLED})
    rows = table.set_index("collection")
    assert rows.loc["TIME", "relevant documents"] == 3 and rows.loc["TIME", "share > 512 words"] == 0.5
    assert rows.loc["DL19 (assembled)", "mean position of relevance"] == 1.0
    assert reading.plot_collections({"3": "a b"}, {"dl19": ASSEMBLED}).axes


def test_the_effectiveness_table_and_reading_follow_the_tests() -> None:
    qrels = {f"q{i}": {"good": 1, "bad": 0} for i in range(8)}
    right, wrong = {"good": 2.0, "bad": 1.0}, {"bad": 2.0, "good": 1.0}
    runs = {"bm25": dict.fromkeys(qrels, wrong), "maxp": dict.fromkeys(qrels, right),
            "firstp": {q: right if q == "q0" else wrong for q in qrels}}  # fmt: skip
    table = reading.effectiveness_table(compare(runs, qrels, ["nDCG@10", "MAP"], baseline="bm25"),
                                        {"bm25": "BM25", "maxp": "MaxP", "firstp": "FirstP"})  # fmt: skip
    assert list(table["model"]) == ["BM25", "MaxP", "FirstP"] and table.loc[0, "p nDCG@10"] == "—"
    assert table.loc[1, "p nDCG@10"].endswith("*") and not table.loc[2, "p nDCG@10"].endswith("*")
    text = reading.effectiveness_reading(table, "TIME")
    assert text.startswith("On TIME, MaxP has the highest nDCG@10 (1.000).")
    assert "MaxP is significantly above BM25; FirstP does not differ significantly from BM25" in text


def test_the_pairwise_reading_names_the_better_of_each_significant_pair() -> None:
    tests = pd.DataFrame([
        {"run": "FirstP", "against": "MaxP", "delta": -0.1, "p_bonferroni": 0.004, "significant": True},
        {"run": "FirstP", "against": "TKL", "delta": 0.02, "p_bonferroni": 0.9, "significant": False},
    ])  # fmt: skip
    text = reading.pairs_reading(tests, "TIME")
    assert text == ("On TIME, in nDCG@10 (Bonferroni over the pairs): MaxP above FirstP (p = 0.004); no other pair "
                    "differs significantly.")  # fmt: skip
    none = reading.pairs_reading(tests.assign(significant=False), "TIME")
    assert none == "On TIME, no two re-rankers differ significantly in nDCG@10 (Bonferroni over the pairs)."


def test_the_position_figure_and_reading() -> None:
    frame = pd.DataFrame({"position": [0.0, 0.5, 1.0], "reciprocal": [1.0, 0.5, 0.25]})
    assert reading.plot_positions({"dl19": {"FirstP": frame}}, bins=2).axes
    trends = pd.DataFrame([{"year": "DL19", "model": "FirstP", "trend": "falls"},
                           {"year": "DL19", "model": "MaxP", "trend": "no significant trend"},
                           {"year": "DL20", "model": "FirstP", "trend": "no significant trend"}])  # fmt: skip
    text = reading.position_reading(trends)
    assert (
        "On DL19 (assembled), the later the relevant passage, the lower FirstP ranks its document; MaxP shows" in text
    )
    assert "On DL20 (assembled), no model ranks a document significantly lower" in text


def test_the_coverage_reading_says_whether_tkl_beats_chance() -> None:
    regions = pd.DataFrame({"year": ["DL19"] * 10 + ["DL20"] * 10, "covers": [True] * 9 + [False] * 3 + [True] * 8,
                            "chance": [0.2] * 20})  # fmt: skip
    text = reading.coverage_reading(coverage_table(regions, "year"))
    assert "on DL19 (assembled) its best region covers the relevant passage in 90% of 10 documents" in text
    assert "against 20% by chance — more often than chance" in text
    assert "on DL20 (assembled)" in text and "80% of 10" in text
    few = pd.DataFrame({"year": ["DL19"] * 3, "covers": [True, False, False], "chance": [0.3] * 3})
    assert "not significantly more often than chance" in reading.coverage_reading(coverage_table(few, "year"))


def test_the_region_positions_figure_has_a_bar_group_per_rank() -> None:
    positions = pd.DataFrame({"rank": [1, 2, 3, 1], "position": [0.1, 0.5, 0.9, 0.15]})
    figure = reading.plot_region_positions(positions)
    ax = figure.axes[0]
    assert ax.get_xlabel() == "region's middle (share of the document)"
    assert sum(patch.get_height() for patch in ax.patches) == 4  # every region counted once


def test_the_committed_gpu_speeds_are_read_with_their_device(tmp_path: Path) -> None:
    assert reading.committed_speeds(tmp_path).empty
    real = Path(__file__).parents[2] / "benchmarks" / "results" / "long"
    table = reading.committed_speeds(real)
    assert table["device"].str.contains("H100").any() and (table["documents / ms"] > 0).all()
    assert {"firstp", "maxp", "tkl"} <= set(table["model"]) and {32, 128} <= set(table["batch"])
