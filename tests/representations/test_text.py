"""The word tokenizer and vocabulary (``lib.representations.text``): min count 5, [PAD]/[UNK], caps, masks."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from lib import data
from lib.representations.text import DOC_MAX_LENGTH, PAD, QUERY_MAX_LENGTH, UNK, Vocabulary, tokenize

TEXTS = ["the cat sat", "The cat ran!", "a dog; the DOG", "the cat", "the end", "the cat, the hat"]


def test_tokenize_lowercases_and_splits_on_non_word_characters() -> None:
    assert tokenize("Wi-Fi (2.4 GHz) isn't café_au_lait") == ["wi", "fi", "2", "4", "ghz", "isn", "t", "café_au_lait"]
    assert tokenize("  ,;  ") == []


def test_min_count_and_special_ids() -> None:
    vocab = Vocabulary.build(TEXTS, min_count=2)
    # the: 7, cat: 4, dog: 2 — ties by term; a, sat, ran, end, hat occur once.
    assert vocab.terms == [PAD, UNK, "the", "cat", "dog"]
    assert vocab.counts == [0, 0, 7, 4, 2]
    assert (vocab.pad_id, vocab.unk_id) == (0, 1)
    assert vocab.id_of("hat") == 1 and vocab.id_of("cat") == 3
    assert Vocabulary.build(TEXTS).terms == [PAD, UNK, "the"]  # the paper's default: 5


def test_ties_are_sorted_by_term_whatever_the_input_order() -> None:
    texts = ["zeta beta alpha", "alpha zeta beta"]
    expected = [PAD, UNK, "alpha", "beta", "zeta"]
    assert Vocabulary.build(texts, 1).terms == Vocabulary.build(texts[::-1], 1).terms == expected


def test_encode_pads_masks_and_caps() -> None:
    vocab = Vocabulary.build(TEXTS, min_count=2)
    ids, mask = vocab.encode(["The cat and the dog", "cat", ""], max_length=4)
    assert ids.dtype == torch.long and mask.dtype == torch.bool
    assert ids.tolist() == [[2, 3, 1, 2], [3, 0, 0, 0], [0, 0, 0, 0]]
    assert mask.tolist() == [[True] * 4, [True, False, False, False], [False] * 4]
    ids, mask = vocab.encode(["cat", "the"], max_length=30)
    assert ids.shape == (2, 1)  # the longest text, not the cap
    ids, mask = vocab.encode([""], max_length=30)
    assert ids.shape == (1, 1) and not mask.any()  # at least one position
    with pytest.raises(ValueError, match="'max_length'"):
        vocab.encode(["cat"], max_length=0)
    with pytest.raises(TypeError, match="list of strings"):
        vocab.encode("cat", max_length=3)


def test_save_load_round_trip(tmp_path: Path) -> None:
    vocab = Vocabulary.build(TEXTS + ["naïve café naïve café"], min_count=2)
    path = vocab.save(tmp_path / "vocab.txt")
    assert Vocabulary.load(path) == vocab
    assert not list(tmp_path.glob(".*part"))  # written atomically, no leftovers


def test_load_names_file_and_line_of_a_malformed_entry(tmp_path: Path) -> None:
    path = Vocabulary.build(TEXTS, min_count=2).save(tmp_path / "vocab.txt")
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[4] = "cat"  # no count
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"{path}:5: expected"):
        Vocabulary.load(path)
    path.write_text("cat\t3\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"{path}:1: not a tkbook vocabulary"):
        Vocabulary.load(path)


def test_real_corpus_vocabulary_is_deterministic_and_caps_apply(converted: Path) -> None:
    passages = list(data.load_collection("v1").values())[:3000]
    first, second = Vocabulary.build(passages), Vocabulary.build(list(passages))
    assert first == second and len(first) > 1000
    assert min(first.counts[2:]) >= 5
    assert 0.0 < first.oov_rate(passages) < 0.25
    queries = list(data.load_queries("dl19").values())
    q_ids, q_mask = first.encode(queries, QUERY_MAX_LENGTH)
    d_ids, d_mask = first.encode(passages[:64], DOC_MAX_LENGTH)
    assert q_ids.shape[1] <= QUERY_MAX_LENGTH and d_ids.shape[1] <= DOC_MAX_LENGTH
    assert torch.equal(q_ids == 0, ~q_mask) and torch.equal(d_ids == 0, ~d_mask)
