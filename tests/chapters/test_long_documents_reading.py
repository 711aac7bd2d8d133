"""Chapter 9's tables, figures and readings (``lib.chapters.long_documents_reading``) on small inputs."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pandas as pd
import pytest

from lib.chapters import long_documents_reading as reading
from lib.core.types import JudgedSet
from lib.data.assembled_documents import END, AssembledSet, Layout
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
    offsets = {"dl19": [0, 300, 900]}
    table = reading.collection_table(time, {"3": "a b", "4": " ".join(["w"] * 513)}, {"dl19": ASSEMBLED}, offsets, 512)
    rows = table.set_index("collection")
    assert rows.loc["TIME", "relevant documents"] == 3 and rows.loc["TIME", "share > 512 words"] == 0.5
    assert rows.loc["DL19 (assembled)", "median offset of relevance (pieces)"] == 300
    assert rows.loc["DL19 (assembled)", "relevance beyond 512 pieces"] == 1 / 3
    figure = reading.plot_collections({"3": "a b"}, {"dl19": ASSEMBLED}, offsets)
    right = figure.axes[1]
    assert right.get_xlabel() == "offset in word pieces"
    assert sum(patch.get_height() for patch in right.patches) == 3  # every relevant passage's offset counted once


def test_the_mixture_table_has_a_row_per_set_and_kind() -> None:
    shares = {"DL19": {"relevant": {"documents": 2.0, "own passages": 2.0, "own share": 0.25},
                       "non-relevant": {"documents": 8.0, "own passages": 2.0, "own share": 0.3}}}  # fmt: skip
    table = reading.mixture_table(shares)
    assert table[["assembled set", "documents", "count"]].values.tolist() == [["DL19", "relevant", 2],
                                                                             ["DL19", "non-relevant", 8]]  # fmt: skip
    assert table["own share of its passages"].tolist() == [0.25, 0.3]


class WordsAsPieces:
    """A tokenizer whose pieces are the words, a word of more than four letters split in three."""

    def pieces(self, texts):
        return [[len(word) for word in text.split() for _ in range(3 if len(word) > 4 else 1)] for text in texts]

    def decode(self, ids):
        return [f"#{i}" for i in ids]


def test_the_transfer_table_and_reading_count_pieces_per_word_and_articles_beyond_each_cap() -> None:
    collections = {"TIME articles": ["KENNEDY SPOKE " * 300, "A B C"], "passages": ["the cat sat", "a dog"]}
    table = reading.transfer_table(collections, WordsAsPieces(), [512, 1024])
    rows = table.set_index("collection")
    assert rows.loc["TIME articles", "pieces per word"] == pytest.approx((1800 + 3) / 603)
    assert rows.loc["TIME articles", "words in 3+ pieces"] == pytest.approx(600 / 603)
    assert rows.loc["TIME articles", "share > 512 pieces"] == 0.5
    assert rows.loc["TIME articles", "share > 1,024 pieces"] == 0.5
    assert rows.loc["passages", "mean pieces"] == 2.5 and rows.loc["passages", "words in 3+ pieces"] == 0
    examples = reading.split_words(collections["TIME articles"], WordsAsPieces(), top=1)
    assert examples == ["KENNEDY (#7, #7, #7)"]  # the most frequent of the split words (tied with SPOKE: first seen)
    text = reading.transfer_reading(table, [512, 1024], examples)
    assert "50% beyond 512, 50% beyond 1,024 pieces" in text and "99.5% of them into three or more against 0.0%" in text
    assert text.endswith("the most frequent of those: KENNEDY (#7, #7, #7).")


SWEEP = pd.DataFrame(
    [("DL19", "FirstP", 0, 0.0, 0.9, "reference"), ("DL19", "FirstP", 768, 770.0, 0.3, "below"),
     ("DL19", "FirstP", END, 2100.0, 0.3, "below"), ("DL19", "MaxP", 0, 0.0, 0.8, "reference"),
     ("DL19", "MaxP", 768, 770.0, 0.8, "holds"), ("DL19", "MaxP", END, 2100.0, 0.7, "holds")],
    columns=["year", "model", "target", "mean offset", "reciprocal rank", "reading"],
)  # fmt: skip


def test_the_sweep_table_figure_and_reading() -> None:
    table = reading.sweep_table(SWEEP)
    assert list(table.columns) == ["year", "model", "0", "768", "end"]
    cells = table.set_index("model")
    assert cells.loc["FirstP", "768"] == "0.30*" and cells.loc["MaxP", "0"] == "0.80"
    figure = reading.plot_sweep(SWEEP, first_pieces=512, max_pieces=1024)
    lines = {line.get_label(): line for line in figure.axes[0].get_lines() if not line.get_label().startswith("_")}
    assert list(lines["FirstP"].get_ydata()) == [0.9, 0.3, 0.3] and list(lines["MaxP"].get_xdata()) == [0, 770, 2100]
    text = reading.sweep_reading(SWEEP)
    assert text.startswith("On DL19 (assembled): FirstP falls from offset 0 at 768 pieces and falls at the end; "
                           "MaxP holds at every offset and does not fall at the end.")  # fmt: skip


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


def test_the_cascade_reading_counts_a_gain_as_no_miss_and_says_by_how_much_a_part_misses() -> None:
    def claim(delta: float) -> pd.DataFrame:
        return pd.DataFrame({"nDCG@10 delta": [delta], "nDCG@10 p": [0.2], "nDCG@10 significant": [False]},
                            index=["idcm"])  # fmt: skip

    assert reading.cascade_reading(claim(+0.04), 4.0, 2).endswith("— holds here.")  # above MaxP is no miss
    assert reading.cascade_reading(claim(-0.005), 3.0, 2).endswith("— holds here.")
    slow = reading.cascade_reading(claim(+0.04), 0.7, None)
    assert slow.startswith("At k = all windows") and slow.endswith(
        "does not hold here: its speed-up is 0.7×, short of 3×."
    )
    both = reading.cascade_reading(claim(-0.03), 2.5, 4)
    assert both.endswith("its nDCG@10 is 0.020 further below MaxP's than 0.01 and its speed-up is 2.5×, short of 3×.")


def test_the_windows_reading_says_whether_maxp_loses_a_split_passage() -> None:
    table = pd.DataFrame([
        {"year": "DL19", "relevant passage": "whole in one window", "documents": 20, "reciprocal rank": 0.6,
         "p (Mann–Whitney)": 0.004},
        {"year": "DL19", "relevant passage": "split by a boundary", "documents": 30, "reciprocal rank": 0.3,
         "p (Mann–Whitney)": 0.004},
    ])  # fmt: skip
    text = reading.windows_reading(table)
    assert text == ("Inside the document and past its start, on DL19 (assembled) MaxP's reciprocal rank is 0.30 where "
                    "its windows split the relevant passage (30 documents) against 0.60 where one window holds it "
                    "whole (20): a significant difference (Mann–Whitney, p = 0.004).")  # fmt: skip
    assert "no significant difference" in reading.windows_reading(table.assign(**{"p (Mann–Whitney)": 0.4}))


def test_the_committed_gpu_speeds_are_read_with_their_device(tmp_path: Path) -> None:
    assert reading.committed_speeds(tmp_path).empty
    real = Path(__file__).parents[2] / "benchmarks" / "results" / "long"
    table = reading.committed_speeds(real)
    assert table["device"].str.contains("H100").any() and (table["documents / ms"] > 0).all()
    assert {"firstp", "maxp", "tkl"} <= set(table["model"]) and {32, 128} <= set(table["batch"])
    assert set(table["MaxP windows"]) == {"150 every 75"}  # the files of 2026-11-27 predate the record: defaults
    result = json.loads(next(real.glob("*.json")).read_text()) | {"settings": {"window": 150, "stride": 150}}
    (tmp_path / "new.json").write_text(json.dumps(result))
    assert set(reading.committed_speeds(tmp_path)["MaxP windows"]) == {"150 every 150"}
