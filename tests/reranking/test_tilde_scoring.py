"""TILDE's scores (``lib.reranking.tilde_scoring``): QL (eq. 4), DL (eq. 5), QDL (eq. 6) and re-ranking a run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lib.reranking.tilde_scoring import TildeScores, dl_scores, qdl_scores, ql_scores
from tests.tilde_helpers import hand_index


def test_ql_sums_the_gathered_log_probabilities_counting_duplicates(tmp_path: Path) -> None:
    index, log_probs, _ = hand_index(tmp_path)
    query = np.array([4, 1, 4])  # piece 4 twice
    scores = ql_scores(index.log_probs, index.rows(["p3", "p1"]), query)
    expected = [2 * float(log_probs[row, 4]) + float(log_probs[row, 1]) for row in (2, 0)]
    np.testing.assert_allclose(scores, expected, rtol=1e-6)
    assert scores.dtype == np.float32
    assert ql_scores(index.log_probs, index.rows(["p1"]), np.array([], dtype=np.int64)).tolist() == [0.0]


def test_dl_is_a_mean_over_the_passage_pieces(tmp_path: Path) -> None:
    index, _, _ = hand_index(tmp_path)  # p1: pieces 1 2 2 7, p2: none, p3: piece 3
    query = np.log(np.linspace(0.1, 0.8, 8))
    scores = dl_scores(query, index.terms, index.offsets, index.rows(["p1", "p2", "p3", "p1"]))
    p1 = (query[1] + 2 * query[2] + query[7]) / 4
    np.testing.assert_allclose(scores, [p1, query.min(), query[3], p1], rtol=1e-6)  # no pieces: the minimum


def test_qdl_mixes_ql_and_dl_with_alpha() -> None:
    ql = np.array([-3.25, -7.5, -1.125], dtype=np.float32)
    dl = np.array([-2.0, -0.5, -9.0], dtype=np.float32)
    assert np.array_equal(qdl_scores(ql, dl, 1.0), ql)
    assert np.array_equal(qdl_scores(ql, dl, 0.0), dl)
    np.testing.assert_allclose(qdl_scores(ql, dl, 0.25), 0.25 * ql + 0.75 * dl)
    with pytest.raises(ValueError, match="'alpha'"):
        qdl_scores(ql, dl, 1.5)


def test_scores_combine_for_any_alpha_and_rerank_the_first_stage() -> None:
    first_stage = {"q": {"a": 30.0, "b": 20.0, "c": 10.0, "d": 5.0}}
    scores = TildeScores(ql={"q": {"a": -9.0, "b": -1.0, "c": -5.0}}, dl={"q": {"a": -1.0, "b": -8.0, "c": -2.0}})
    assert scores.combine(1.0) == scores.ql
    assert scores.combine(0.0) == scores.dl
    assert scores.combine(0.5)["q"] == {"a": -5.0, "b": -4.5, "c": -3.5}
    reranked = scores.rerank(first_stage, alpha=1.0)
    assert list(reranked["q"]) == ["b", "c", "a", "d"]  # the unscored "d" stays below the scored top-3
    assert reranked["q"]["b"] > reranked["q"]["c"] > reranked["q"]["a"] > reranked["q"]["d"]
    assert list(scores.rerank(first_stage, alpha=0.0)["q"]) == ["a", "c", "b", "d"]
    assert list(scores.rerank(first_stage, alpha=1.0, depth=2)["q"]) == ["b", "a", "c", "d"]
    with pytest.raises(ValueError, match="needs TILDE-DL"):
        TildeScores(ql=scores.ql, dl=None).combine(0.5)
