"""Figures of chapters 4 and 5: the elbow curve, the query map and the match-matrix heatmap."""

from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from lib.analyses.query_clusters import QueryMap
from lib.chapters.analysis_plots import plot_inertia_curve, plot_match_matrix, plot_query_map
from tests.analysis_helpers import hand_explanation

matplotlib.use("Agg")


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_inertia_curve_marks_the_chosen_k() -> None:
    curve = pd.Series([100.0, 60.0, 25.0, 20.0], index=pd.Index([2, 3, 4, 5], name="k"))
    figure = plot_inertia_curve(curve, chosen_k=4)
    ax = figure.axes[0]
    assert list(ax.lines[0].get_xdata()) == [2, 3, 4, 5]
    assert any("k = 4" in text.get_text() for text in ax.texts)
    with pytest.raises(ValueError, match="chosen_k"):
        plot_inertia_curve(curve, chosen_k=7)


@pytest.mark.parametrize("k", [3, 12])
def test_query_map_labels_every_cluster(k: int) -> None:
    rng = np.random.default_rng(0)
    points = rng.normal(size=(60, 2))
    labels = np.arange(60) % k
    highlight = np.zeros(60, dtype=bool)
    highlight[:5] = True
    figure = plot_query_map(QueryMap(points, np.array([0.4, 0.2])), labels, highlight=highlight)
    ax = figure.axes[0]
    assert sorted(text.get_text() for text in ax.texts) == sorted(str(c) for c in range(k))
    assert "40%" in ax.get_xlabel() and "20%" in ax.get_ylabel()
    assert [text.get_text() for text in ax.get_legend().get_texts()] == ["TREC DL query"]
    with pytest.raises(ValueError, match="labels"):
        plot_query_map(QueryMap(points, np.array([0.4, 0.2])), labels[:10])
    with pytest.raises(ValueError, match="highlight"):
        plot_query_map(QueryMap(points, np.array([0.4, 0.2])), labels, highlight=highlight[:3])


def test_match_matrix_heatmap_names_the_tokens() -> None:
    match = np.array([[0.9, -0.2, 0.1], [0.3, 0.5, -0.9]])
    explanation = hand_explanation("cat dog", "a cat sat", match, [1.0, 0.5], [0, 0], [0, 0])
    figure = plot_match_matrix(explanation)
    ax = figure.axes[0]
    assert [label.get_text() for label in ax.get_xticklabels()] == ["a", "cat", "sat"]
    assert [label.get_text() for label in ax.get_yticklabels()] == ["cat", "dog"]
    assert np.allclose(ax.collections[0].get_array().reshape(2, 3), match)
    cut = plot_match_matrix(explanation, max_passage_tokens=2).axes[0]
    assert [label.get_text() for label in cut.get_xticklabels()] == ["a", "cat"]
    with pytest.raises(ValueError, match="max_passage_tokens"):
        plot_match_matrix(explanation, max_passage_tokens=0)
