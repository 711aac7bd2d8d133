"""Chapter 2's ladder of pre-training depth (``lib.chapters.pretraining_ladder``): figure and reading."""

from __future__ import annotations

import matplotlib

from lib.chapters import pretraining_ladder as ladder
from lib.experiments.pretraining_ladder import ladder_table
from tests.experiments.test_pretraining_ladder import MODELS, SCORES, _inputs

matplotlib.use("Agg")


def test_the_figure_has_a_panel_per_test_year() -> None:
    table, tests = _inputs(SCORES, {"bert-cat", "tk-bert2", "bi-encoder", "knrm"})
    figure = ladder.ladder_figure(ladder_table(table, tests, MODELS, {}), {"dl19": 0.5, "dl20": 0.5})
    assert [axis.get_title() for axis in figure.axes] == ["DL19", "DL20"]


def test_the_reading_names_the_first_rung_above_bm25_and_the_speed_against_bert_cat() -> None:
    table, tests = _inputs(SCORES, {"bert-cat", "tk-bert2", "tk2-pieces"})
    text = ladder.ladder_reading(ladder_table(table, tests, MODELS, {}))
    assert "*word vectors*: no model significantly above BM25" in text
    assert "*static pieces*: TK-2 (pieces) significantly above BM25 on every test year" in text
    assert "cheapest kernel model above BM25 everywhere is TK-2 (pieces), at 200.0× BERT-cat's" in text
    slow = {**SCORES}
    table, tests = _inputs(slow, {"bert-cat", "tk-bert2"})
    text = ladder.ladder_reading(ladder_table(table, tests, MODELS, {}))
    assert "TK-BERT-2, at 4.0× BERT-cat's documents per ms (1.2× short of the 5×" in text
    table, tests = _inputs(slow, {"bert-cat"})
    text = ladder.ladder_reading(ladder_table(table, tests, MODELS, {}))
    assert "No kernel model beats BM25 significantly on every test year; the closest is TK-BERT-2" in text
    assert text.endswith("at 4.0× BERT-cat's documents per ms (1.2× short of the 5× that would make it worth having).")
    fast = {**SCORES, "tk-bert2": (0.58, 0.55)}
    table, tests = _inputs(fast, {"bert-cat"})
    rows = ladder_table(table, tests, MODELS, {})
    rows.loc[rows["model"] == "tk-bert2", "docs/ms"] = rows.loc[rows["model"] == "bert-cat", "docs/ms"].iloc[0] * 10
    assert ladder.ladder_reading(rows).endswith("(at least 5×: it misses on effectiveness, not on speed).")
