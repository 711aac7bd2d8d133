"""Chapter 6's latency measurement (``lib.experiments.tilde_timings``): TILDE's rows, chapter 2's re-rankers."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from lib.core.profiles import get_profile
from lib.experiments.tilde_timings import latency_of, latency_table
from lib.models.tilde_vocabulary import TargetVocabulary
from lib.representations.bert import WordPieceTokenizer
from lib.reranking.tilde_index import load_index, write_index
from tests.tilde_helpers import tiny_tilde

QUERIES = {"q1": "what is the manhattan project", "q2": "why is the sky blue"}
RUN = {"q1": {"a": 3.0, "b": 2.0}, "q2": {"c": 2.0}}
TEXTS = {"a": "the manhattan project built the bomb", "b": "a project", "c": "the sky is blue because of scattering"}


def test_latency_table_times_ql_and_qdl_and_leaves_out_what_chapter_2_has_not_trained(
    raw: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path / "artifacts"))
    tokenizer = WordPieceTokenizer.from_vocab()
    vocabulary = TargetVocabulary.cleaned(tokenizer)
    log_probs = np.log(np.random.default_rng(0).uniform(0.01, 0.99, (3, vocabulary.vocab_size)))
    write_index(
        tmp_path / "index", list(TEXTS), [(log_probs, vocabulary.terms(tokenizer, list(TEXTS.values())))], vocabulary
    )
    table, left_out = latency_table(
        load_index(tmp_path / "index"), tokenizer, QUERIES, RUN, tiny_tilde(), TEXTS, get_profile("smoke"), [2, 4], 1
    )
    assert table[["method", "candidates", "repeated"]].values.tolist() == [
        ["TILDE-QL", 2, True],
        ["TILDE-QL", 4, True],
        ["TILDE-QDL", 2, True],
        ["TILDE-QDL", 4, True],
    ]
    assert (table["total ms"] > 0).all() and (table["queries"] == 2).all()
    assert [message.split(" left out")[0] for message in left_out] == ["TK-2 (chapter 2)", "BERT-cat (chapter 2)"]
    assert all("make chapter CH=02_training PROFILE=smoke" in message for message in left_out)
    assert latency_of(table, "TILDE-QDL", 4) == table["total ms"].iloc[3]
    assert math.isnan(latency_of(table, "BERT-cat (chapter 2)", 4))
