"""TILDEv2's sparse index (``lib.reranking.tilde_v2_index``): the model's scores from storage, sizes checked."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from lib.models.tilde_v2 import exact_match_scores, pad_pieces
from lib.models.tilde_vocabulary import TargetVocabulary
from lib.representations.bert import WordPieceTokenizer
from lib.reranking.tilde_v2_index import TildeV2Index, build_index, load_index, passage_maxima, score_run
from tests.tilde_helpers import tiny_tilde_v2

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TEXTS = {
    "p1": "the cat sat on the mat with another cat",
    "p2": "dogs chase cats in the garden",
    "p3": "a mat for the hall",
}
QUERIES = {"q1": "cat on a mat", "q2": "garden dogs"}


def test_passage_maxima_keeps_each_pieces_largest_weight() -> None:
    pieces, best = passage_maxima(np.array([7, 3, 7, 3]), np.array([0.5, 0.1, 0.25, 0.75]))
    assert pieces.tolist() == [3, 7] and best.tolist() == [0.75, 0.5]


def test_index_scores_are_the_models_exact_match_scores(tmp_path: Path) -> None:
    tokenizer = WordPieceTokenizer.from_vocab()
    vocabulary = TargetVocabulary.cleaned(tokenizer)
    model = tiny_tilde_v2().eval()
    index = build_index(model, tokenizer, TEXTS, ["p1", "p2", "p3", "p1"], tmp_path / "index", progress=False)
    assert len(index) == 3 and sorted(index.pids) == ["p1", "p2", "p3"]
    run = {qid: {pid: 0.0 for pid in TEXTS} for qid in QUERIES}
    scores = score_run(index, tokenizer, QUERIES, run, vocabulary)
    pids = list(TEXTS)
    with torch.no_grad():
        doc_ids, weights = model.piece_weights(tokenizer.pieces([TEXTS[p] for p in pids]))
        query_ids, mask = pad_pieces([vocabulary.clean(tokenizer.pieces([QUERIES[q]])[0]) for q in QUERIES])
        direct = exact_match_scores(query_ids, mask, doc_ids, weights)
    for row, qid in enumerate(QUERIES):
        stored = [scores[qid][pid] for pid in pids]
        assert stored == pytest.approx(direct[row].tolist(), abs=2e-3)  # float16 storage
    assert scores["q2"]["p3"] == 0.0, "a passage without any query piece scores 0"
    assert index.bytes_per_passage == pytest.approx(sum(index.header["files"].values()) / 3)


def test_a_truncated_file_or_unknown_passage_is_an_error_naming_it(tmp_path: Path) -> None:
    tokenizer = WordPieceTokenizer.from_vocab()
    index = build_index(tiny_tilde_v2(), tokenizer, TEXTS, ["p1", "p2"], tmp_path / "index", progress=False)
    with pytest.raises(KeyError, match="'p3' is not in the TILDEv2 index"):
        index.score(np.array([1000]), ["p3"])
    weights = tmp_path / "index" / "weights.f16"
    weights.write_bytes(weights.read_bytes()[:-2])
    with pytest.raises(ValueError, match="weights.f16"):
        load_index(tmp_path / "index")
    with pytest.raises(FileNotFoundError, match="no TILDEv2 index"):
        load_index(tmp_path)
    with pytest.raises(KeyError, match="without text"):
        build_index(tiny_tilde_v2(), tokenizer, TEXTS, ["nope"], tmp_path / "other", progress=False)


def test_score_sums_matched_weights_per_query_occurrence_for_any_candidate_list(tmp_path: Path) -> None:
    pieces = np.array([3, 7, 9, 7, 11], dtype="<u2")  # p1: 3 7 9; p2: nothing; p3: 7 11
    weights = np.array([0.5, 1.0, 2.0, 0.25, 4.0], dtype="<f2")
    index = TildeV2Index(
        tmp_path, ["p1", "p2", "p3"], {"p1": 0, "p2": 1, "p3": 2}, pieces, weights, np.array([0, 3, 3, 5]), {}
    )
    query = np.array([7, 7, 11, 5])  # 7 twice: its weight counts twice; 5 is in no passage
    assert index.score(query, ["p3", "p2", "p1", "p3"]).tolist() == [4.5, 0.0, 2.0, 4.5]
    assert index.score(np.array([], dtype=np.int64), ["p1", "p3"]).tolist() == [0.0, 0.0]
    assert index.score(query, []).tolist() == []
