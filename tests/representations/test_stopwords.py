"""The stopword list applied before a word model (chapter 8's baseline for TK-Sparse)."""

from __future__ import annotations

import pytest

from lib.representations.stopwords import StopwordRemoving
from lib.representations.text import Vocabulary


def test_the_stopword_list_is_removed_before_the_vocabulary_encodes() -> None:
    vocabulary = Vocabulary.from_token_streams([["the", "androgen", "receptor", "is", "a", "type"]], min_count=1)
    tokenizer = StopwordRemoving(vocabulary)
    assert tokenizer.without_stopwords("The androgen receptor is a type") == "androgen receptor type"
    ids, mask = tokenizer.encode(["The androgen receptor", "the a is"], 6)
    assert ids[0].tolist()[:2] == vocabulary.encode(["androgen receptor"], 6)[0][0].tolist()[:2]
    assert mask[1].sum() == 0  # stopwords only: no token
    assert len(tokenizer) == len(vocabulary)
    with pytest.raises(TypeError, match="list of strings"):
        tokenizer.encode("the androgen", 6)
