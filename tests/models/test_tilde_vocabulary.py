"""TILDE's target vocabulary (``lib.models.tilde_vocabulary``) and stopwords (``lib.representations.stopwords``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from lib.models.tilde_vocabulary import TargetVocabulary
from lib.representations.bert import WordPieceTokenizer
from lib.representations.stopwords import KEPT_QUESTION_WORDS, NLTK_ENGLISH_STOPWORDS, TILDE_STOPWORDS


@pytest.fixture(scope="module")
def tokenizer(raw: Path) -> WordPieceTokenizer:
    return WordPieceTokenizer.from_vocab()


@pytest.fixture(scope="module")
def cleaned(tokenizer: WordPieceTokenizer) -> TargetVocabulary:
    return TargetVocabulary.cleaned(tokenizer)


def test_the_stopwords_are_nltk_s_list_without_the_question_words() -> None:
    assert len(NLTK_ENGLISH_STOPWORDS) == len(set(NLTK_ENGLISH_STOPWORDS)) == 179
    assert KEPT_QUESTION_WORDS == {"where", "how", "what", "when", "which", "why", "who"}
    assert KEPT_QUESTION_WORDS <= set(NLTK_ENGLISH_STOPWORDS)
    assert TILDE_STOPWORDS == set(NLTK_ENGLISH_STOPWORDS) - KEPT_QUESTION_WORDS and len(TILDE_STOPWORDS) == 172


def test_cleaning_gives_the_paper_s_vocabulary_size(cleaned: TargetVocabulary, tokenizer: WordPieceTokenizer) -> None:
    assert (cleaned.vocab_size, cleaned.size) == (30522, 28403)  # §4.3: "28,403 tokens"
    full = TargetVocabulary.full(tokenizer)
    assert full.size == full.vocab_size == 30522 and full.removed.size == 0
    assert TargetVocabulary.named("full", tokenizer).fingerprint == full.fingerprint != cleaned.fingerprint


def test_stopwords_and_symbols_are_removed_question_words_kept(
    cleaned: TargetVocabulary, tokenizer: WordPieceTokenizer
) -> None:
    def kept(piece: str) -> bool:
        return bool(cleaned.keep[tokenizer.hf.convert_tokens_to_ids(piece)])

    for piece in ("the", "is", "of", "a", "[PAD]", "[CLS]", "[unused0]", "!", ".", "$", "é", "中"):
        assert not kept(piece), piece
    for piece in ("what", "how", "why", "who", "manhattan", "project", "2019", "##s", "##ing", "-"):
        assert kept(piece), piece


def test_clean_keeps_order_and_duplicates(cleaned: TargetVocabulary, tokenizer: WordPieceTokenizer) -> None:
    [terms] = cleaned.terms(tokenizer, ["What is the cost of the cost?"])
    assert tokenizer.decode(terms) == ["what", "cost", "cost"]
    assert cleaned.clean([]).size == 0


def test_removed_pieces_are_never_targets(cleaned: TargetVocabulary, tokenizer: WordPieceTokenizer) -> None:
    pieces = tokenizer.pieces(["the cost of a project!", "why"])
    targets = cleaned.targets(pieces)  # uncleaned on purpose: removed pieces still do not count
    assert targets.shape == (2, 30522) and targets.dtype == torch.float32
    assert set(np.flatnonzero(targets[0].numpy())) == set(cleaned.clean(pieces[0]).tolist())
    assert targets[:, torch.from_numpy(cleaned.removed)].sum() == 0
    assert targets[1].sum() == 1  # "why" is a kept question word
    assert targets[0, tokenizer.hf.convert_tokens_to_ids("cost")] == 1  # multi-hot, not counts


def test_bad_names_are_clear_errors(tokenizer: WordPieceTokenizer) -> None:
    with pytest.raises(ValueError, match="'vocabulary'"):
        TargetVocabulary.named("clean", tokenizer)
    with pytest.raises(ValueError, match="'keep'"):
        TargetVocabulary("full", np.zeros(4, dtype=bool))
