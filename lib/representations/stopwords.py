"""English stopwords for TILDE's cleaned target vocabulary (TILDE paper §4.3, footnote 7).

The TILDE paper removes "the stopwords provide[d] by the Python ``nltk`` library" from the target
vocabulary, "but we keep where, how, what, when, which, why, who". NLTK's data cannot be downloaded
here, so :data:`NLTK_ENGLISH_STOPWORDS` reproduces that list as a literal:
``nltk.corpus.stopwords.words("english")`` of the NLTK stopwords corpus as distributed with NLTK 3.x
until 2023 (179 words, in its file order; the file ``corpora/stopwords/english`` of
https://github.com/nltk/nltk_data). It is the list the TILDE authors used: their repository
(ielab/TILDE, ``tools.py``, ``get_stop_ids``) hard-codes the same 179 words with the comment
"from nltk.corpus import stopwords, stopwords.words('english')". Later NLTK data releases added a
few words (e.g. "he'd", "i'm"); the book keeps the paper's list.

:class:`StopwordRemoving` applies the list before a word model (chapter 8's baseline for TK-Sparse).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from lib.representations.text import Vocabulary, tokenize

#: ``nltk.corpus.stopwords.words("english")`` (NLTK stopwords corpus, 179 words, file order; see the module doc).
NLTK_ENGLISH_STOPWORDS: tuple[str, ...] = (
    "i", "me", "my", "myself", "we", "our", "ours", "ourselves", "you", "you're", "you've", "you'll",
    "you'd", "your", "yours", "yourself", "yourselves", "he", "him", "his", "himself", "she", "she's",
    "her", "hers", "herself", "it", "it's", "its", "itself", "they", "them", "their", "theirs",
    "themselves", "what", "which", "who", "whom", "this", "that", "that'll", "these", "those", "am",
    "is", "are", "was", "were", "be", "been", "being", "have", "has", "had", "having", "do", "does",
    "did", "doing", "a", "an", "the", "and", "but", "if", "or", "because", "as", "until", "while",
    "of", "at", "by", "for", "with", "about", "against", "between", "into", "through", "during",
    "before", "after", "above", "below", "to", "from", "up", "down", "in", "out", "on", "off", "over",
    "under", "again", "further", "then", "once", "here", "there", "when", "where", "why", "how", "all",
    "any", "both", "each", "few", "more", "most", "other", "some", "such", "no", "nor", "not", "only",
    "own", "same", "so", "than", "too", "very", "s", "t", "can", "will", "just", "don", "don't",
    "should", "should've", "now", "d", "ll", "m", "o", "re", "ve", "y", "ain", "aren", "aren't",
    "couldn", "couldn't", "didn", "didn't", "doesn", "doesn't", "hadn", "hadn't", "hasn", "hasn't",
    "haven", "haven't", "isn", "isn't", "ma", "mightn", "mightn't", "mustn", "mustn't", "needn",
    "needn't", "shan", "shan't", "shouldn", "shouldn't", "wasn", "wasn't", "weren", "weren't", "won",
    "won't", "wouldn", "wouldn't",
)  # fmt: skip

#: The question words TILDE keeps as targets although NLTK lists them (TILDE paper §4.3, footnote 7).
KEPT_QUESTION_WORDS: frozenset[str] = frozenset({"where", "how", "what", "when", "which", "why", "who"})

#: TILDE's stopwords: NLTK's English list without :data:`KEPT_QUESTION_WORDS` (172 words).
TILDE_STOPWORDS: frozenset[str] = frozenset(NLTK_ENGLISH_STOPWORDS) - KEPT_QUESTION_WORDS

__all__ = ["KEPT_QUESTION_WORDS", "NLTK_ENGLISH_STOPWORDS", "TILDE_STOPWORDS"]


@dataclass(frozen=True)
class StopwordRemoving:
    """A word tokenizer that drops ``stopwords`` from every text before ``vocabulary`` encodes it: the classic
    stopword list applied before the model, the baseline TK-Sparse's learned stopwords must beat (lecture 8,
    slide 31). ``encode`` and ``len`` behave as the vocabulary's; a text of stopwords only encodes to no token."""

    vocabulary: Vocabulary
    stopwords: frozenset[str] = frozenset(NLTK_ENGLISH_STOPWORDS)

    def __len__(self) -> int:
        return len(self.vocabulary)

    def without_stopwords(self, text: str) -> str:
        """``text``'s words (:func:`lib.representations.text.tokenize`) that are not stopwords, space-joined."""
        return " ".join(word for word in tokenize(text) if word not in self.stopwords)

    def encode(self, texts: Sequence[str], max_length: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The vocabulary's ids and mask of ``texts`` without their stopwords (:meth:`without_stopwords`)."""
        if isinstance(texts, str):
            raise TypeError("parameter 'texts' must be a list of strings, not one string")
        return self.vocabulary.encode([self.without_stopwords(text) for text in texts], max_length)
