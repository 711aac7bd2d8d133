"""A bi-encoder's cached vectors (``lib.reranking.dense``): the same scores as the model, cached, searched."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from lib.models.bi_encoder import BiEncoder
from lib.representations.bert import WordPieceTokenizer
from lib.representations.pretrained import minilm_folder
from lib.reranking import dense
from lib.reranking.dense import cached_encodings, dense_scores, dense_top_k, encode
from lib.reranking.scoring import score_candidates

pytestmark = pytest.mark.usefixtures("one_torch_thread")

QUERIES = {"q1": "what is an androgen receptor", "q2": "cheap flights to vienna"}
PASSAGES = {
    "p1": "The androgen receptor is a nuclear receptor activated by binding androgenic hormones.",
    "p2": "Low-cost airlines fly to Vienna International Airport from many European cities.",
    "p3": "A kernel counts soft matches between query and passage terms.",
}


@pytest.fixture(scope="module")
def parts() -> tuple[BiEncoder, WordPieceTokenizer]:
    return BiEncoder(minilm_folder()).eval(), WordPieceTokenizer.from_vocab()


def test_dense_scores_equal_the_bi_encoders_own_scores(parts) -> None:
    model, tokenizer = parts
    queries = encode(model, tokenizer, QUERIES, list(QUERIES), 30)
    passages = encode(model, tokenizer, PASSAGES, list(PASSAGES), 200, batch_size=2)
    candidates = {"q1": {"p1": 3.0, "p2": 2.0, "p3": 1.0}, "q2": {"p2": 1.0, "p3": 0.5}}
    scores = dense_scores(queries, passages, candidates)
    for qid, ranked in candidates.items():
        pids = list(ranked)
        q = tokenizer.encode([QUERIES[qid]] * len(pids), 30)
        d = tokenizer.encode([PASSAGES[p] for p in pids], 200)
        with torch.inference_mode():
            expected = model(*q, *d)
        assert torch.allclose(torch.tensor([scores[qid][p] for p in pids]), expected, atol=1e-5)
    assert max(scores["q1"], key=scores["q1"].get) == "p1" and max(scores["q2"], key=scores["q2"].get) == "p2"
    top = dense_top_k(queries, passages, k=2)
    assert list(top["q1"])[0] == "p1" and len(top["q2"]) == 2
    with pytest.raises(KeyError, match="'p9'"):
        dense_scores(queries, passages, {"q1": {"p9": 1.0}})


def test_encodings_are_cached_and_recomputed_when_the_ids_change(parts, tmp_path: Path, monkeypatch) -> None:
    model, tokenizer = parts
    path = tmp_path / "passages.npy"
    first = cached_encodings(path, model, tokenizer, PASSAGES, ["p1", "p2"], 200)
    assert path.is_file() and (tmp_path / "passages.ids.txt").read_text() == "p1\np2"

    def no_encoding(*args, **kwargs):
        raise AssertionError("encoded again although cached")

    monkeypatch.setattr("lib.reranking.dense.encode", no_encoding)
    again = cached_encodings(path, model, tokenizer, PASSAGES, ["p1", "p2"], 200)
    assert torch.equal(first.vectors, again.vectors)
    monkeypatch.undo()
    other = cached_encodings(path, model, tokenizer, PASSAGES, ["p3", "p1"], 200)
    assert torch.allclose(other.vectors[1], first.vectors[0], atol=1e-6), "p1's vector does not depend on its batch"
    with pytest.raises(KeyError, match="'p7'"):
        encode(model, tokenizer, PASSAGES, ["p7"], 200)


def test_truncated_cached_encodings_are_set_aside_and_encoded_again(parts, tmp_path: Path) -> None:
    model, tokenizer = parts
    path = tmp_path / "passages.npy"
    first = cached_encodings(path, model, tokenizer, PASSAGES, ["p1", "p2"], 200)
    path.write_bytes(path.read_bytes()[:150])
    with pytest.warns(UserWarning, match=r"passages\.npy: a cache of bi-encoder vectors is truncated"):
        again = cached_encodings(path, model, tokenizer, PASSAGES, ["p1", "p2"], 200)
    assert torch.equal(first.vectors, again.vectors)
    assert (tmp_path / "passages.npy.broken").is_file() and path.is_file()


def test_candidate_scores_equal_the_pairwise_scores_and_reuse_known_vectors(parts, monkeypatch) -> None:
    model, tokenizer = parts
    run = {"q1": {"p1": 3.0, "p2": 2.0, "p3": 1.0}, "q2": {"p2": 1.0, "p3": 0.5}}
    expected = score_candidates(model, tokenizer, QUERIES, PASSAGES, run, depth=None)
    fresh = dense.candidate_scores(model, tokenizer, QUERIES, PASSAGES, run, 30, 200)
    known = encode(model, tokenizer, PASSAGES, ["p1", "p3"], 200)
    encoded = []
    real = dense.encode
    monkeypatch.setattr(
        dense, "encode", lambda m, t, texts, ids, *a, **k: encoded.append(list(ids)) or real(m, t, texts, ids, *a, **k)
    )
    reused = dense.candidate_scores(model, tokenizer, QUERIES, PASSAGES, run, 30, 200, known=known)
    assert encoded == [["p2"], ["q1", "q2"]], "only the passage not in 'known' is encoded, then the queries"
    for scores in (fresh, reused):
        assert set(scores) == set(run)
        for qid in run:
            assert scores[qid] == pytest.approx(expected[qid], abs=1e-5)
