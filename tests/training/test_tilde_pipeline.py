"""TILDE end to end on a slice of the real data: train, index, score QL / DL / QDL, re-rank, evaluate, time."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from lib import data
from lib.core.types import query_order, ranking_from_run
from lib.evaluation import measures as evaluation
from lib.evaluation.tilde_latency import measure_latency
from lib.models.tilde import Tilde
from lib.models.tilde_vocabulary import TargetVocabulary
from lib.representations.bert import WordPieceTokenizer
from lib.reranking.tilde_index import build_index, load_index
from lib.reranking.tilde_scoring import rerank_run, score_run
from lib.training.tilde import TildeTrainingConfig, relevant_pairs, train_tilde
from tests.tilde_helpers import tiny_tilde

QUERIES, DEPTH = 3, 10


#: Tiny models run as fast on one thread, and a busy machine cannot stall a second one.
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_the_whole_pipeline_gives_finite_scores_on_dl19(converted: Path, tmp_path: Path) -> None:
    tokenizer = WordPieceTokenizer.from_vocab()
    texts = data.load_collection("v1")
    train_queries = data.load_queries("dl20")
    pairs = relevant_pairs(data.load_qrels("dl20"), texts)[:16]
    trained = train_tilde(
        tiny_tilde(),
        tokenizer,
        pairs,
        train_queries,
        texts,
        tmp_path / "model",
        TildeTrainingConfig(steps=2, batch_size=8, device="cpu"),
    )
    model = Tilde.load(tmp_path / "model")  # what a later chapter reads back
    queries = data.load_queries("dl19")
    full_run = data.load_run("dl19", "bm25")
    qids = sorted(full_run, key=query_order)[:QUERIES]
    top = {q: [p for p in ranking_from_run(full_run[q]) if p in texts][:DEPTH] for q in qids}
    run = {q: {p: full_run[q][p] for p in top[q]} for q in qids}
    pids = [p for q in qids for p in run[q]]

    index = build_index(model, tokenizer, texts, pids, tmp_path / "index", TargetVocabulary.cleaned(tokenizer))
    assert len(load_index(tmp_path / "index")) == len(set(pids)) and index.vocab_size == 30522
    assert index.log_prob_bytes_per_passage == 2 * 30522
    stored = torch.from_numpy(index.log_probs[index.rows(pids[:2])].astype("float32"))
    expected = model.log_probs(tokenizer, [texts[p] for p in pids[:2]], "passage")
    torch.testing.assert_close(stored, expected, atol=2e-2, rtol=1e-3)  # float16 storage
    reloaded = model.log_probs(
        tokenizer, ["x"], "query"
    )  # same weights; transformers may pick another attention kernel
    torch.testing.assert_close(trained.model.log_probs(tokenizer, ["x"], "query"), reloaded)

    scores = score_run(index, tokenizer, queries, run, model=model)
    for component in (scores.ql, scores.dl):
        assert set(component) == set(qids)
        values = [v for q in qids for v in component[q].values()]
        assert len(values) == QUERIES * DEPTH and all(math.isfinite(v) and v <= 0 for v in values)
    for alpha in (0.0, 0.5, 1.0):
        reranked = scores.rerank(run, alpha)
        assert {q: set(r) for q, r in reranked.items()} == {q: set(r) for q, r in run.items()}
        assert 0.0 <= evaluation.evaluate(reranked, data.load_qrels("dl19"))["nDCG@10"] <= 1.0
    assert rerank_run(index, tokenizer, queries, run, alpha=1.0) == scores.rerank(run, 1.0)
    assert rerank_run(index, tokenizer, queries, run, alpha=0.5, model=model) == scores.rerank(run, 0.5)

    latency = measure_latency(index, tokenizer, queries, run, candidates=(DEPTH, 1000), repetitions=2)
    assert [(r.candidates, r.padded) for r in latency] == [(DEPTH, False), (1000, True)]
    assert all(r.reranking_ms > 0 for r in latency)
