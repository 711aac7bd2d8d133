"""Chapter 8's comparison (``lib.chapters.lecture_comparison``): the table, the figure, latencies, stopwords."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from types import SimpleNamespace

import pandas as pd
import pytest
import torch

from lib.chapters import lecture_comparison
from lib.models.tk import TKConfig
from lib.models.tk_sparse import TKSparse
from lib.representations.text import Vocabulary

pytestmark = pytest.mark.usefixtures("one_torch_thread")

#: A one-layer TK small enough for these tests.
TINY_TK = TKConfig(num_layers=1, num_heads=2, head_dim=4, ff_dim=8)


def test_comparison_table_has_one_row_per_model_in_label_order() -> None:
    effectiveness = pd.DataFrame(
        [("bm25", "dl19", 0.5), ("tk2", "dl19", 0.45), ("tk2", "dl20", 0.4), ("colbert", "dl19", 0.55)],
        columns=["model", "set", "nDCG@10"],
    )
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


def test_latencies_time_both_modes_for_a_model_with_a_passage_side() -> None:
    vocabulary = Vocabulary.build(["the cat sat on the mat", "a dog ran in the park", "cats and dogs"], min_count=1)
    torch.manual_seed(0)
    model = TKSparse(torch.randn(len(vocabulary), 8), config=TINY_TK).eval()
    run = {"q1": {"p1": 3.0, "p2": 2.0}}
    texts = {"p1": "the cat sat on the mat", "p2": "a dog ran in the park"}
    frame = lecture_comparison.latencies(model, vocabulary, run, {"q1": "cat mat"}, texts, [2, 5], ["q1"], 4, 1)
    assert sorted(zip(frame["candidates"], frame["mode"], strict=True)) == [
        (2, "passages stored"), (2, "whole at query time"), (5, "passages stored"), (5, "whole at query time"),
    ]  # fmt: skip
    assert (frame["ms"] > 0).all()
    assert lecture_comparison.storage(model, vocabulary, list(texts.values()), 200) > 0


def test_latencies_warm_up_once_per_count_and_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    vocabulary = Vocabulary.build(["the cat sat on the mat", "a dog ran in the park"], min_count=1)
    torch.manual_seed(0)
    model = TKSparse(torch.randn(len(vocabulary), 8), config=TINY_TK).eval()
    warmups: list[tuple[str, int]] = []
    real_whole, real_stored = lecture_comparison.measure_latency, lecture_comparison.measure_stored_latency

    def whole(*args, **kwargs):
        warmups.append(("whole", args[4]))
        return real_whole(*args, **kwargs)

    def stored(*args, **kwargs):
        warmups.append(("stored", args[4]))
        return real_stored(*args, **kwargs)

    monkeypatch.setattr(lecture_comparison, "measure_latency", whole)
    monkeypatch.setattr(lecture_comparison, "measure_stored_latency", stored)
    run = {"q1": {"p1": 3.0, "p2": 2.0}, "q2": {"p2": 1.0}, "q3": {"p1": 1.0}}
    texts = {"p1": "the cat sat on the mat", "p2": "a dog ran in the park"}
    queries = {"q1": "cat mat", "q2": "dog park", "q3": "cat"}
    lecture_comparison.latencies(model, vocabulary, run, queries, texts, [2, 4], ["q1", "q2", "q3"], 4, 2)
    assert warmups == [("whole", 1), ("stored", 1), ("whole", 0), ("stored", 0), ("whole", 0), ("stored", 0)] * 2


def test_gate_occurrences_and_the_stopword_tables() -> None:
    texts = ["the cat sat on the mat", "the dog and the zebu"]
    vocabulary = Vocabulary.build(texts, min_count=2)  # "cat", "zebu" … map to [UNK] but keep their word
    torch.manual_seed(0)
    model = TKSparse(torch.randn(len(vocabulary), 8), config=TINY_TK).eval()
    with torch.no_grad():
        model.gate_out.weight.zero_()
        model.gate_out.bias.fill_(1.0)  # every gate 1: nothing removed
    occurrences = lecture_comparison.gate_occurrences(model, vocabulary, texts, 200, batch_size=1)
    assert occurrences["term"].tolist() == "the cat sat on the mat the dog and the zebu".split()
    assert not occurrences["removed"].any()
    occurrences["removed"] = occurrences["term"].isin({"the", "zebu"})
    table = lecture_comparison.stopword_table(occurrences, top=2)
    assert table.index.tolist() == ["the", "zebu"]
    assert table.loc["the", "share removed"] == 1.0 and table.loc["the", "NLTK stopword"]
    overlap = lecture_comparison.stopword_overlap(occurrences)
    assert overlap["removed"] == pytest.approx(5 / 11)
    assert overlap["removed that are NLTK stopwords"] == pytest.approx(4 / 5)
    assert overlap["NLTK stopwords removed"] == pytest.approx(4 / 6)


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
    sweep = pd.DataFrame(
        {"VALIDATION nDCG@10": [0.6, 0.5], "DL19 nDCG@10": [0.6, 0.55], "DL20 nDCG@10": [0.5, 0.44]},
        index=pd.Index([0, 5], name="k"),
    )
    reading = lecture_comparison.prettr_reading(results, sweep, 5, "VALIDATION nDCG@10", tests, "smoke")
    assert "k = 5" in reading and "untrained split 0.550" in reading and "BERT-cat 0.600, BM25 0.450" in reading
    for phrase in expected:
        assert phrase in reading, phrase


def test_the_tradeoff_reading_names_the_best_and_the_fastest_re_ranker() -> None:
    table = pd.DataFrame(
        {"DL19 nDCG@10": [0.5, 0.6, 0.7], "ms for 100": [None, 2.0, 30.0]}, index=["BM25", "TK-2", "BERT-cat"]
    )
    assert lecture_comparison.tradeoff_reading(table, 100) == (
        "On DL19 the most effective re-ranker here is **BERT-cat**; the fastest at 100 candidates is **TK-2**. "
        "BM25 scores nDCG@10 0.500: a re-ranker above it is worth its latency, one below it is not, whatever its speed."
    )
