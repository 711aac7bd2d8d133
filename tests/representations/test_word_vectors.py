"""Word embeddings (``lib.representations.word_vectors``): word2vec / fastText, GloVe text files, matrices."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from lib import data
from lib.core.paths import REPO_ROOT
from lib.representations.text import Vocabulary
from lib.representations.word_vectors import (
    WordVectorSettings,
    coverage,
    embedding_matrix,
    load_glove_text,
    load_matrix,
    save_matrix,
    train_word_vectors,
)

FIXTURES = Path(__file__).parents[1] / "fixtures"
GLOVE = FIXTURES / "glove.tiny.5d.txt"
TINY = Vocabulary(["[PAD]", "[UNK]", "the", "cat", "dog", "hat"], [0, 0, 9, 7, 6, 5])


@pytest.fixture(scope="module")
def passages(converted: Path) -> list[str]:
    """A slice of the real v1 corpus: its first 2,000 passages."""
    return list(data.load_collection("v1").values())[:2000]


@pytest.fixture(scope="module")
def vocabulary(passages: list[str]) -> Vocabulary:
    return Vocabulary.build(passages)


@pytest.mark.parametrize("method", ["word2vec", "fasttext"])
def test_trained_vectors_give_a_matrix_with_a_zero_padding_row(
    method: str, passages: list[str], vocabulary: Vocabulary
) -> None:
    vectors = train_word_vectors(passages, WordVectorSettings(method=method, dim=16, epochs=1, bucket=50_000), seed=3)
    matrix = embedding_matrix(vocabulary, vectors, seed=0)
    assert matrix.shape == (len(vocabulary), 16) and matrix.dtype == torch.float32
    assert torch.count_nonzero(matrix[0]) == 0
    assert torch.all(matrix[1:].norm(dim=1) > 0)
    report = coverage(vocabulary, vectors)
    assert report.terms == len(vocabulary) - 2
    assert report.found + report.subword + report.random == report.terms
    assert report.fraction > 0.9  # same corpus, same min count: nearly every term has a vector
    index = vocabulary.id_of("the")
    assert torch.allclose(matrix[index], torch.tensor(vectors["the"]))


def test_fasttext_gives_subword_vectors_to_words_it_never_saw(passages: list[str]) -> None:
    vectors = train_word_vectors(
        passages, WordVectorSettings(method="fasttext", dim=16, epochs=1, bucket=50_000), seed=3
    )
    unseen = Vocabulary(["[PAD]", "[UNK]", "the", "unpassageable"])
    report = coverage(unseen, vectors)
    assert (report.found, report.subword, report.random) == (1, 1, 0)
    w2v = train_word_vectors(passages, WordVectorSettings(method="word2vec", dim=16, epochs=1), seed=3)
    assert (coverage(unseen, w2v).found, coverage(unseen, w2v).random) == (1, 1)


def test_training_is_deterministic_with_one_worker(passages: list[str], vocabulary: Vocabulary) -> None:
    slice_ = passages[:500]
    first = train_word_vectors(slice_, WordVectorSettings(dim=16, epochs=1, min_count=2), seed=7)
    second = train_word_vectors(slice_, WordVectorSettings(dim=16, epochs=1, min_count=2), seed=7)
    assert np.array_equal(first.vectors, second.vectors)
    other_seed = train_word_vectors(slice_, WordVectorSettings(dim=16, epochs=1, min_count=2), seed=8)
    assert not np.array_equal(first.vectors, other_seed.vectors)
    assert torch.equal(embedding_matrix(vocabulary, first, seed=1), embedding_matrix(vocabulary, second, seed=1))


def test_training_does_not_depend_on_the_python_hash_seed() -> None:
    """gensim ≥ 4 seeds from ``seed`` only: a process with another PYTHONHASHSEED gives the same vectors."""
    corpus = ["the cat sat on the mat", "the dog sat on the log"] * 20
    script = (
        "import hashlib; "
        "from lib.representations.word_vectors import WordVectorSettings as S, train_word_vectors as t; "
        f"v = t({corpus!r}, S(dim=8, epochs=2, min_count=1), seed=5); "
        "print(hashlib.sha256(v.vectors.tobytes()).hexdigest(), ','.join(v.index_to_key))"
    )
    here = train_word_vectors(corpus, WordVectorSettings(dim=8, epochs=2, min_count=1), seed=5)
    expected = f"{hashlib.sha256(here.vectors.tobytes()).hexdigest()} {','.join(here.index_to_key)}"
    hash_seed = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == expected


def test_oov_rows_are_seeded_random() -> None:
    vectors = load_glove_text(GLOVE, TINY, dim=5)[0]
    again = load_glove_text(GLOVE, TINY, dim=5)[0]
    other = load_glove_text(GLOVE, TINY, dim=5, seed=1)[0]
    hat = TINY.id_of("hat")
    assert torch.equal(vectors, again)
    assert torch.equal(vectors[2:hat], other[2:hat])  # the GloVe rows do not depend on the seed
    assert not torch.equal(vectors[hat], other[hat]) and not torch.equal(vectors[1], other[1])
    assert 0.05 < float(vectors[hat].std()) < 1.0  # the scale of the covered rows


def test_glove_text_loader_reads_the_vocabulary_rows() -> None:
    matrix, report = load_glove_text(GLOVE, TINY, dim=5)
    assert matrix.shape == (6, 5)
    assert torch.count_nonzero(matrix[0]) == 0
    assert torch.allclose(matrix[TINY.id_of("cat")], torch.tensor([-0.1529, -0.24279, 0.89837, 0.16996, 0.53516]))
    assert (report.terms, report.found, report.subword, report.random) == (4, 3, 0, 1)
    assert "3 of 4 terms" in str(report)
    inferred, _ = load_glove_text(GLOVE, TINY, dim=None)
    assert torch.equal(inferred, matrix)


def test_glove_text_loader_names_file_and_line_of_a_malformed_line(tmp_path: Path) -> None:
    lines = GLOVE.read_text(encoding="utf-8").splitlines()
    bad = tmp_path / "glove.bad.txt"
    bad.write_text("\n".join(lines[:2] + ["dog 0.1 0.2 oops 0.4 0.5"] + lines[3:]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"{bad}:3: .*not a number"):
        load_glove_text(bad, TINY, dim=5)
    bad.write_text("\n".join(lines[:3] + ["dog 0.1 0.2"]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"{bad}:4: expected a word and 5 numbers"):
        load_glove_text(bad, TINY, dim=5)
    with pytest.raises(ValueError, match=rf"{GLOVE}:1: expected a word and 300 numbers"):
        load_glove_text(GLOVE, TINY)  # the paper's 300-d expected


def test_matrix_save_load_round_trip(tmp_path: Path) -> None:
    matrix, _ = load_glove_text(GLOVE, TINY, dim=5)
    path = save_matrix(tmp_path / "emb" / "glove.npy", matrix)
    assert torch.equal(load_matrix(path, TINY), matrix)
    assert not list(path.parent.glob(".*part"))
    with pytest.raises(ValueError, match="rows but the vocabulary has"):
        load_matrix(path, Vocabulary(["[PAD]", "[UNK]"]))
    with pytest.raises(FileNotFoundError, match="missing.npy"):
        load_matrix(tmp_path / "missing.npy")
