"""Explaining one TK score: the tidy decomposition is exact on real pairs (eq. 4–10); the best-match rule."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import torch

from lib import data
from lib.analyses.explain_tk import KERNEL_COLUMNS, closest_words, explain_pair, passage_matches
from lib.core.types import ranking_from_run
from lib.models.tk import TK
from lib.models.tk_bert import TKBert
from lib.representations.bert import load_tokenizer
from lib.representations.pretrained import minilm_folder
from lib.representations.text import DOC_MAX_LENGTH, QUERY_MAX_LENGTH, Vocabulary
from tests.analysis_helpers import hand_explanation, real_vocabulary, small_tk


@pytest.fixture(scope="module")
def vocabulary(converted: Path) -> Vocabulary:
    return real_vocabulary()


@pytest.fixture(scope="module")
def model(vocabulary: Vocabulary) -> TK:
    """Non-default learned scalars and the feature scaler, so that every weight shows in the decomposition."""
    model = small_tk(vocabulary, feature_scaler=True)
    with torch.no_grad():
        model.beta.fill_(0.8)
        model.gamma.fill_(-1.7)
        model.scaler.fill_(0.3)
    return model


@pytest.fixture(scope="module")
def pairs(converted: Path) -> list[tuple[str, str]]:
    """Eight random (DL19 query, passage of its BM25 top-100) pairs of real text."""
    queries, run, collection = data.load_queries("dl19"), data.load_run("dl19", "bm25"), data.load_collection("v1")
    rng = random.Random(0)
    qids = rng.sample(sorted(run), 8)
    return [(queries[qid], collection[rng.choice(ranking_from_run(run[qid])[:100])]) for qid in qids]


def test_the_explanation_decomposes_the_score_exactly(model: TK, vocabulary: Vocabulary, pairs: list) -> None:
    queries, passages = [q for q, _ in pairs], [p for _, p in pairs]
    with torch.no_grad():
        scores = model(*vocabulary.encode(queries, QUERY_MAX_LENGTH), *vocabulary.encode(passages, DOC_MAX_LENGTH))
    w_log, w_len = model.w_log.weight[0].detach().numpy(), model.w_len.weight[0].detach().numpy()
    for (query, passage), score in zip(pairs, scores.tolist(), strict=True):
        explanation = explain_pair(model, vocabulary, query, passage)
        kernels = explanation.kernels
        assert explanation.s == pytest.approx(score, abs=1e-5)  # the model's own score of the pair
        # eq. 10 and the per-kernel decomposition
        assert kernels["term"].sum() == pytest.approx(explanation.s, abs=1e-5)
        assert kernels["log_term"].sum() == pytest.approx(0.8 * explanation.s_log, abs=1e-5)
        assert kernels["len_term"].sum() == pytest.approx(-1.7 * explanation.s_len, abs=1e-5)
        assert explanation.beta * explanation.s_log + explanation.gamma * explanation.s_len == pytest.approx(
            explanation.s, abs=1e-5
        )
        # eq. 9: the learned weights, the feature scaler and β / γ applied per kernel
        assert np.allclose(kernels["w_log"], w_log) and np.allclose(kernels["w_len"], w_len)
        assert np.allclose(kernels["log_term"], 0.8 * 0.3 * w_log * kernels["s_log_k"], atol=1e-5)
        assert np.allclose(kernels["len_term"], -1.7 * 0.3 * w_len * kernels["s_len_k"], atol=1e-5)
        assert explanation.s_log == pytest.approx(0.3 * float((w_log * kernels["s_log_k"]).sum()), abs=1e-4)
        # eq. 7 and 8 from the per-query-term kernel sums K_i^k (eq. 6)
        sums = explanation.kernel_sums.drop(columns="term").to_numpy()
        d_len = len(explanation.passage_tokens)
        assert np.allclose(np.log2(np.maximum(sums, 1e-10)).sum(axis=0), kernels["s_log_k"], atol=1e-3)
        assert np.allclose((sums / d_len).sum(axis=0), kernels["s_len_k"], atol=1e-5)
        # eq. 5–6 from the match matrix (eq. 4)
        rbf = np.exp(-((explanation.match[..., None] - kernels["mu"].to_numpy()) ** 2) / (2 * 0.1**2))
        assert np.allclose(rbf.sum(axis=1), sums, atol=1e-4)


def test_tokens_tables_and_caps(model: TK, vocabulary: Vocabulary, pairs: list) -> None:
    query, passage = pairs[0]
    explanation = explain_pair(model, vocabulary, query, passage, max_doc_length=12)
    ids, mask = vocabulary.encode([query], QUERY_MAX_LENGTH)
    assert explanation.query_tokens == vocabulary.decode(ids[0][mask[0]].tolist())
    assert len(explanation.passage_tokens) == 12  # the cap
    assert explanation.match.shape == (len(explanation.query_tokens), 12)
    assert np.abs(explanation.match).max() <= 1.0 + 1e-6
    assert list(explanation.kernels.columns) == list(KERNEL_COLUMNS)
    assert explanation.kernels["mu"].tolist() == [1.0, 0.9, 0.7, 0.5, 0.3, 0.1, -0.1, -0.3, -0.5, -0.7, -0.9]
    assert explanation.kernel_sums["term"].tolist() == explanation.query_tokens
    assert explanation.scaler == pytest.approx(0.3) and explanation.alpha == pytest.approx(0.5)


def test_the_training_mode_is_restored_and_empty_texts_are_refused(vocabulary: Vocabulary) -> None:
    model = small_tk(vocabulary).train()
    explain_pair(model, vocabulary, "androgen receptor define", "the androgen receptor is a nuclear receptor")
    assert model.training
    with pytest.raises(ValueError, match="'passage'"):
        explain_pair(model, vocabulary, "a query", " ... ")
    with pytest.raises(ValueError, match="'query'"):
        explain_pair(model, vocabulary, "?!", "a passage")


def test_passage_matches_take_the_best_query_term_and_the_closest_kernel() -> None:
    # query tokens: cat, dog; passage tokens: a, cat, b, c
    match = np.array([[0.10, 0.95, 0.75, -0.4], [0.30, 0.20, 0.55, -0.3]])
    explanation = hand_explanation("cat dog", "a cat b c", match, [1.0, 0.5, 0.0], [1, 2, 3], [0, 0, 0])
    matches = passage_matches(explanation)
    assert matches["term"].tolist() == ["a", "cat", "b", "c"]
    assert matches["cosine"].tolist() == [0.30, 0.95, 0.75, -0.3]  # max over the query terms
    assert matches["query_term"].tolist() == ["dog", "cat", "cat", "dog"]
    # closest centre; 0.75 lies halfway between 1.0 and 0.5: the larger μ wins
    assert matches["mu"].tolist() == [0.5, 1.0, 1.0, 0.0]

    one_term = passage_matches(explanation, query_term=1)
    assert one_term["cosine"].tolist() == [0.30, 0.20, 0.55, -0.3]
    assert one_term["query_term"].tolist() == ["dog"] * 4
    assert one_term["mu"].tolist() == [0.5, 0.0, 0.5, 0.0]
    for bad in (2, -1, "cat"):
        with pytest.raises(ValueError, match="query_term"):
            passage_matches(explanation, query_term=bad)


def test_a_tk_on_minilms_layers_is_explained_over_its_word_pieces_exactly() -> None:
    torch.manual_seed(0)
    model, tokenizer = TKBert(minilm_folder(), 1), load_tokenizer(minilm_folder())
    query, passage = "androgen receptor define", "The androgen receptor (AR) is a type of nuclear receptor."
    explanation = explain_pair(model, tokenizer, query, passage)
    assert explanation.query_tokens == tokenizer.decode(tokenizer.pieces([query])[0])
    assert "(" in explanation.passage_tokens, "word pieces keep punctuation"
    with torch.no_grad():
        score = model.eval()(*tokenizer.encode([query], QUERY_MAX_LENGTH), *tokenizer.encode([passage], DOC_MAX_LENGTH))
    assert np.isclose(explanation.kernels["term"].sum(), explanation.s, atol=1e-4)
    assert np.isclose(explanation.s, float(score[0]), atol=1e-4)


def test_closest_words_lists_each_query_terms_best_distinct_passage_words() -> None:
    # query tokens: cat, dog; passage tokens: a, cat, a, c
    match = np.array([[0.10, 0.95, 0.30, -0.4], [0.30, 0.20, 0.55, -0.3]])
    explanation = hand_explanation("cat dog", "a cat a c", match, [1.0, 0.5, 0.0], [1, 2, 3], [0, 0, 0])
    words = closest_words(explanation, n=2)
    assert words.to_dict() == {"cat": "cat (0.95), a (0.30)", "dog": "a (0.55), cat (0.20)"}
