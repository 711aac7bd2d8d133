"""TILDE's passage index (``lib.reranking.tilde_index``): exact round trip, memory mapping, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from lib.models.tilde_vocabulary import TargetVocabulary
from lib.reranking.tilde_index import (
    HEADER_NAME,
    LOG_PROBS_NAME,
    TERMS_NAME,
    cast_index,
    load_index,
    term_dtype,
    write_index,
)
from tests.tilde_helpers import hand_index


def test_the_index_round_trips_exactly(tmp_path: Path) -> None:
    index, log_probs, terms = hand_index(tmp_path / "index")
    assert index.pids == ["p1", "p2", "p3"] and len(index) == 3 and index.vocab_size == 8
    assert isinstance(index.log_probs, np.memmap) and index.log_probs.dtype == np.float16
    assert np.array_equal(index.log_probs, log_probs)  # bit-exact float16
    for pid, expected in zip(index.pids, terms, strict=True):
        assert np.array_equal(index.passage_terms(pid), expected)
    assert index.offsets.tolist() == [0, 4, 4, 5] and index.terms.dtype == np.uint16
    assert index.rows(["p3", "p1"]).tolist() == [2, 0]
    # 8 pieces × 2 bytes, 5 pieces × 2 bytes over 3 passages, 4 offsets × 8 bytes over 3 passages
    assert index.bytes_per_passage == pytest.approx(8 * 2 + 5 * 2 / 3 + 4 * 8 / 3)
    assert index.log_prob_bytes_per_passage == 16
    header = json.loads((tmp_path / "index" / HEADER_NAME).read_text(encoding="utf-8"))
    assert header["vocabulary"] == "cleaned" and header["log_prob_dtype"] == "<f2" and header["passages"] == 3


def test_a_truncated_file_is_an_error_naming_it(tmp_path: Path) -> None:
    hand_index(tmp_path / "index")
    path = tmp_path / "index" / LOG_PROBS_NAME
    path.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(ValueError, match=f"{LOG_PROBS_NAME}: 45 bytes, but the index header .* expects 48"):
        load_index(tmp_path / "index")
    (tmp_path / "index" / TERMS_NAME).unlink()
    path.unlink()
    with pytest.raises(FileNotFoundError, match=LOG_PROBS_NAME):
        load_index(tmp_path / "index")


def test_a_folder_without_header_is_no_index(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no TILDE index, or its build did not finish"):
        load_index(tmp_path)


def test_rewriting_replaces_the_index(tmp_path: Path) -> None:
    hand_index(tmp_path / "index", seed=0)
    index, log_probs, _ = hand_index(tmp_path / "index", seed=1)
    assert np.array_equal(index.log_probs, log_probs)
    assert sorted(p.name for p in (tmp_path / "index").iterdir() if p.name.startswith(".")) == []  # no leftovers


def test_bad_input_is_a_clear_error(tmp_path: Path) -> None:
    index, _, _ = hand_index(tmp_path / "index")
    with pytest.raises(KeyError, match="passage 'p9' is not in the TILDE index"):
        index.rows(["p1", "p9"])
    vocabulary = TargetVocabulary("full", np.ones(8, dtype=bool))
    with pytest.raises(ValueError, match="built with vocabulary"):
        index.check_vocabulary(vocabulary)
    block = (np.zeros((1, 7), dtype=np.float16), [np.array([1])])
    with pytest.raises(ValueError, match=r"expected \(1, 8\)"):
        write_index(tmp_path / "bad", ["p1"], [block], vocabulary)
    with pytest.raises(ValueError, match="outside"):
        write_index(tmp_path / "bad", ["p1"], [(np.zeros((1, 8)), [np.array([8])])], vocabulary)
    with pytest.raises(ValueError, match="names 2"):
        write_index(tmp_path / "bad", ["p1", "p2"], [(np.zeros((1, 8)), [np.array([1])])], vocabulary)
    assert not (tmp_path / "bad" / HEADER_NAME).exists()


def test_float32_storage_round_trips_too(tmp_path: Path) -> None:
    vocabulary = TargetVocabulary("full", np.ones(8, dtype=bool))
    log_probs = np.log(np.random.default_rng(0).uniform(0.01, 0.99, (2, 8))).astype(np.float32)
    write_index(
        tmp_path, ["a", "b"], [(log_probs, [np.array([1]), np.array([2, 3])])], vocabulary, log_prob_dtype="float32"
    )
    index = load_index(tmp_path)
    assert index.log_probs.dtype == np.float32 and np.array_equal(index.log_probs, log_probs)
    assert index.log_prob_bytes_per_passage == 8 * 4
    with pytest.raises(ValueError, match="'log_prob_dtype'"):
        write_index(tmp_path, ["a"], [], vocabulary, log_prob_dtype="float64")


def test_a_cast_copy_holds_the_float32_vectors_in_float16(tmp_path: Path) -> None:
    vocabulary = TargetVocabulary("full", np.ones(8, dtype=bool))
    log_probs = np.log(np.random.default_rng(1).uniform(0.01, 0.99, (3, 8))).astype(np.float32)
    terms = [np.array([1]), np.array([], dtype=np.int64), np.array([2, 3])]
    write_index(tmp_path / "f32", ["a", "b", "c"], [(log_probs, terms)], vocabulary, log_prob_dtype="float32")
    cast = cast_index(load_index(tmp_path / "f32"), tmp_path / "f16", vocabulary, "float16")
    assert cast.pids == ["a", "b", "c"] and cast.log_probs.dtype == np.float16
    assert np.array_equal(cast.log_probs, log_probs.astype(np.float16))
    assert np.array_equal(cast.terms, load_index(tmp_path / "f32").terms) and cast.offsets.tolist() == [0, 1, 1, 3]
    other = TargetVocabulary("cleaned", np.array([False, *[True] * 7]))
    with pytest.raises(ValueError, match="built with vocabulary"):
        cast_index(load_index(tmp_path / "f32"), tmp_path / "bad", other)


def test_piece_ids_use_the_smallest_dtype() -> None:
    assert term_dtype(30522) == np.uint16 and term_dtype(2**16) == np.uint16 and term_dtype(2**16 + 1) == np.int32
