"""The book's BERT (``lib.representations.bert``): the real WordPiece vocabulary, the small config, loading."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from lib.experiments import score_cache
from lib.representations.bert import (
    BERT_SIZES,
    CLS_ID,
    WordPieceTokenizer,
    load_bert,
    small_bert_config,
)

#: Tiny models run as fast on one thread, and a busy machine cannot stall a second one.
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def tiny_config():
    return small_bert_config(layers=2, hidden=32, heads=2, intermediate=64, max_position=64)


@pytest.fixture(scope="module")
def tokenizer(raw: Path) -> WordPieceTokenizer:
    return WordPieceTokenizer.from_vocab()


def test_wordpiece_tokenizer_uses_the_real_vocabulary_without_special_tokens(tokenizer: WordPieceTokenizer) -> None:
    assert len(tokenizer) == 30522
    assert (tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id, tokenizer.sep_id, tokenizer.mask_id) == (
        0,
        100,
        101,
        102,
        103,
    )
    ids, mask = tokenizer.encode(["Hello World", "unaffable", ""], max_length=2)
    assert ids.tolist() == [[7592, 2088], [14477, 20961], [0, 0]]  # cut at 2: una ##ffa (##ble dropped)
    assert mask.tolist() == [[True, True], [True, True], [False, False]]
    assert tokenizer.decode(ids[1]) == ["una", "##ffa"]
    ids, mask = tokenizer.encode(["hello"], max_length=30)
    assert ids.shape == (1, 1) and ids.dtype == torch.long and mask.dtype == torch.bool


def test_the_tokenizer_pickles_the_same_whatever_it_cut_last(tokenizer: WordPieceTokenizer) -> None:
    """The score cache keys scores by the pickled tokenizer: a cut must not leave its setting behind."""
    before = score_cache.tokenizer_digest(tokenizer)
    assert tokenizer.pieces(["unaffable words"], 2) == [[14477, 20961]]
    assert score_cache.tokenizer_digest(tokenizer) == before
    assert tokenizer.pieces(["unaffable words"]) == [[14477, 20961, 3468, 2616]]  # and the next call is uncut
    assert score_cache.tokenizer_digest(tokenizer) == before


def test_tokenizer_save_load_round_trip(tokenizer: WordPieceTokenizer, tmp_path: Path) -> None:
    folder = tokenizer.save(tmp_path / "tok")
    assert (folder / "vocab.txt").read_text(encoding="utf-8").splitlines()[CLS_ID] == "[CLS]"
    texts = ["What is the Manhattan Project?", "Wi-Fi 2.4 GHz"]
    for loaded in (WordPieceTokenizer.load(folder), WordPieceTokenizer.load(folder / "vocab.txt")):
        for left, right in zip(loaded.encode(texts, 30), tokenizer.encode(texts, 30), strict=True):
            assert torch.equal(left, right)


def test_load_bert_errors_are_clear(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such checkpoint folder"):
        load_bert(tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match="no such checkpoint folder"):
        load_bert("./missing/bert")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no config.json"):
        load_bert(tmp_path / "empty")
    with pytest.raises(OSError, match="hub name needs internet.*bert_base_uncased_folder"):
        load_bert("tkbook-no-such-model-xyz", local_files_only=True)
    with pytest.raises(OSError, match="hub name needs internet.*bert_base_uncased_folder"):
        load_bert(Path("tkbook-no-such-model-xyz"), local_files_only=True)  # a Path that names no folder: a hub name


def test_small_config_is_checked() -> None:
    config = small_bert_config()
    assert (config.num_hidden_layers, config.hidden_size, config.max_position_embeddings) == (2, 128, 256)
    assert small_bert_config(**BERT_SIZES["mini"]).num_hidden_layers == 4
    with pytest.raises(ValueError, match="'hidden'"):
        small_bert_config(hidden=100, heads=3)
