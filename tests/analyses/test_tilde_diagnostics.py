"""Has a TILDE model learned to read its passages (``lib.analyses.tilde_diagnostics``): spread and rank correlations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lib.analyses.tilde_diagnostics import (
    candidate_features,
    correlation_table,
    dependence_table,
    mean_rank_correlation,
    passage_dependence,
    ql_scores,
    sample_passages,
)
from lib.models.tilde_vocabulary import TargetVocabulary
from lib.representations.bert import WordPieceTokenizer
from tests.tilde_helpers import tiny_tilde

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TEXTS = {
    "a": "the androgen receptor is a nuclear receptor",
    "b": "receptor",
    "c": "a recipe for apple pie with cinnamon and butter",
}
QUERIES = {"q1": "androgen receptor", "q2": "apple pie recipe"}
RUN = {"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"c": 2.0, "a": 1.0}}


@pytest.fixture(scope="module")
def tokenizer() -> WordPieceTokenizer:
    return WordPieceTokenizer.from_vocab()


def test_passage_dependence_is_the_mean_spread_of_kept_pieces() -> None:
    keep = np.array([True, True, False])
    assert passage_dependence(np.array([[0.0, 1.0, 5.0], [2.0, 1.0, 9.0]]), keep) == pytest.approx(0.5)
    assert passage_dependence(np.ones((4, 3)), keep) == 0.0
    with pytest.raises(ValueError, match="passages >= 2"):
        passage_dependence(np.ones((1, 3)), keep)
    with pytest.raises(ValueError, match="mask"):
        passage_dependence(np.ones((2, 3)), np.array([True, False]))


def test_mean_rank_correlation_averages_spearman_over_queries_and_skips_constant_ones() -> None:
    scores = {"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"a": 1.0, "b": 2.0, "c": 3.0}, "q3": {"a": 1.0, "b": 1.0}}
    feature = {"q1": {"a": 30, "b": 20, "c": 10}, "q2": {"a": 10, "b": 20, "c": 5}, "q3": {"a": 1, "b": 2}}
    assert mean_rank_correlation(scores, feature) == pytest.approx((1.0 - 0.5) / 2)  # q2: ranks 1,2,3 vs 2,3,1
    assert math.isnan(mean_rank_correlation({"q3": scores["q3"]}, feature))
    with pytest.raises(KeyError, match="'q1'.*'c'"):
        mean_rank_correlation({"q1": scores["q1"]}, {"q1": {"a": 1, "b": 2}})


def test_sample_passages_are_the_first_distinct_candidates_in_run_order() -> None:
    assert sample_passages(RUN) == ["a", "b", "c"]
    assert sample_passages(RUN, limit=2) == ["a", "b"]


def test_candidate_features_count_contained_query_pieces_and_length(tokenizer: WordPieceTokenizer) -> None:
    cleaned = TargetVocabulary.cleaned(tokenizer)
    pieces, matches, lengths = candidate_features(RUN, QUERIES, TEXTS, tokenizer, cleaned)
    assert set(pieces) == {"a", "b", "c"}
    assert lengths["q1"]["b"] == len(tokenizer.pieces(["receptor"])[0]) and lengths["q2"]["a"] == len(pieces["a"])
    assert matches["q1"]["a"] == len(set(cleaned.clean(tokenizer.pieces([QUERIES["q1"]])[0]).tolist()))
    assert matches["q1"]["c"] == 0 and matches["q1"]["b"] >= 1
    assert matches["q2"]["c"] > matches["q2"]["a"]


def test_ql_scores_sum_the_query_pieces_log_likelihoods_and_the_tables_use_them(tokenizer: WordPieceTokenizer) -> None:
    model, cleaned = tiny_tilde().eval(), TargetVocabulary.cleaned(tokenizer)
    pieces, _, _ = candidate_features(RUN, QUERIES, TEXTS, tokenizer, cleaned)
    scores = ql_scores(model, RUN, QUERIES, pieces, tokenizer, cleaned)
    terms = cleaned.clean(tokenizer.pieces([QUERIES["q2"]])[0])
    log_probs = model.piece_log_probs([pieces["c"], pieces["a"]], "passage").numpy()
    assert scores["q2"] == pytest.approx({"c": float(log_probs[0, terms].sum()), "a": float(log_probs[1, terms].sum())})
    table = correlation_table({"tiny": model}, RUN, QUERIES, TEXTS, tokenizer, cleaned)
    assert table.columns.tolist() == ["model", "ρ with query pieces contained", "ρ with passage length"]
    assert table["model"].tolist() == ["tiny"] and -1.0 <= table["ρ with passage length"].iloc[0] <= 1.0
    spread = dependence_table({"tiny": model}, list(pieces.values()), cleaned)
    every = model.piece_log_probs(list(pieces.values()), "passage").numpy()
    assert spread["spread"].iloc[0] == pytest.approx(passage_dependence(every, cleaned.mask().numpy()))
