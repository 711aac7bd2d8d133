"""TILDE's latency measurement (``lib.evaluation.tilde_latency``): what is timed and how it is labelled."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from lib.evaluation.tilde_latency import measure_latency, measure_v2_latency
from lib.models.tilde_vocabulary import TargetVocabulary
from lib.representations.bert import WordPieceTokenizer
from lib.reranking.tilde_index import TildeIndex, load_index, write_index
from lib.reranking.tilde_v2_index import build_index
from tests.tilde_helpers import tiny_tilde, tiny_tilde_v2

QUERIES = {"q1": "what is the manhattan project", "q2": "why is the sky blue", "q3": "no candidates"}
RUN = {"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"c": 2.0, "zz": 1.0}, "q3": {"zz": 1.0}}
TEXTS = {"a": "the manhattan project built the bomb", "b": "a project", "c": "the sky is blue because of scattering"}


@pytest.fixture(scope="module")
def tokenizer(raw: Path) -> WordPieceTokenizer:
    return WordPieceTokenizer.from_vocab()


@pytest.fixture(scope="module")
def index(tokenizer: WordPieceTokenizer, tmp_path_factory: pytest.TempPathFactory) -> TildeIndex:
    vocabulary = TargetVocabulary.cleaned(tokenizer)
    log_probs = np.log(np.random.default_rng(0).uniform(0.01, 0.99, (3, vocabulary.vocab_size)))
    folder = tmp_path_factory.mktemp("index")
    write_index(folder, list(TEXTS), [(log_probs, vocabulary.terms(tokenizer, list(TEXTS.values())))], vocabulary)
    return load_index(folder)


def test_ql_latency_is_measured_per_candidate_count_and_labelled(index: TildeIndex, tokenizer) -> None:
    threads = torch.get_num_threads()
    results = measure_latency(index, tokenizer, QUERIES, RUN, candidates=(2, 10), repetitions=3, warmup=1)
    assert torch.get_num_threads() == threads  # restored
    assert [(r.method, r.candidates, r.padded, r.queries) for r in results] == [
        ("TILDE-QL", 2, True, 2),  # q2 has one indexed candidate: repeated; q3 none: skipped
        ("TILDE-QL", 10, True, 2),
    ]
    for result in results:
        assert result.threads == 1 and result.repetitions == 3 and "CPU" in result.device
        assert result.query_processing_ms > 0 and result.reranking_ms > 0
        assert result.total_ms == pytest.approx(result.query_processing_ms + result.reranking_ms)
        assert set(result.as_dict()) >= {"method", "candidates", "padded", "reranking_ms"}
    only_q1 = measure_latency(index, tokenizer, QUERIES, {"q1": RUN["q1"]}, candidates=(3,), repetitions=1)
    assert not only_q1[0].padded


def test_qdl_latency_includes_the_query_pass(index: TildeIndex, tokenizer) -> None:
    [result] = measure_latency(
        index, tokenizer, QUERIES, RUN, model=tiny_tilde(), alpha=0.5, candidates=(4,), repetitions=2, warmup=0
    )
    assert result.method == "TILDE-QDL" and result.alpha == 0.5 and result.query_processing_ms > 0


def test_bad_arguments_are_clear_errors(index: TildeIndex, tokenizer) -> None:
    with pytest.raises(ValueError, match="pass the model"):
        measure_latency(index, tokenizer, QUERIES, RUN, alpha=0.5)
    with pytest.raises(ValueError, match="'alpha'"):
        measure_latency(index, tokenizer, QUERIES, RUN, alpha=2.0)
    with pytest.raises(ValueError, match="'repetitions'"):
        measure_latency(index, tokenizer, QUERIES, RUN, repetitions=0)
    with pytest.raises(ValueError, match="no query of 'run'"):
        measure_latency(index, tokenizer, QUERIES, {"q3": RUN["q3"]})


def test_tilde_v2_latency_is_measured_per_count_on_one_thread(tmp_path: Path) -> None:
    tokenizer = WordPieceTokenizer.from_vocab()
    texts = {"a": "cats sit on mats", "b": "dogs run in parks", "c": "a cat and a dog"}
    index = build_index(tiny_tilde_v2(), tokenizer, texts, list(texts), tmp_path / "v2", progress=False)
    run = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}, "unknown": {"a": 1.0}}
    results = measure_v2_latency(
        index, tokenizer, {"q": "cat mats"}, run, TargetVocabulary.cleaned(tokenizer), candidates=[2, 5], repetitions=2
    )
    assert [(r.method, r.candidates, r.padded, r.queries) for r in results] == [
        ("TILDEv2", 2, False, 1),
        ("TILDEv2", 5, True, 1),
    ]
    assert all(r.total_ms >= r.reranking_ms > 0 and r.threads == 1 and "1 thread" in r.device for r in results)
