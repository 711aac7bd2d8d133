"""TILDE's target vocabulary: which word pieces count as targets and as query / passage terms (§4.3).

The paper removes "stopwords and symbols" from the *target* tokens of BERT's vocabulary (the model
inputs are unchanged): 30,522 word pieces become 28,403. :meth:`TargetVocabulary.cleaned` follows
the rule of the authors' code (ielab/TILDE, ``clean_vacab``), which gives exactly those 28,403 on
bert-base-uncased:

1. every TILDE stopword (:data:`lib.representations.stopwords.TILDE_STOPWORDS`: NLTK's English list without the
   question words) that the tokenizer turns into one single word piece is removed;
2. every whole-word piece (not starting with ``##``) that is not made only of ASCII letters, digits,
   ``_`` and ``-`` is removed: punctuation, symbols, other scripts, and the special pieces
   (``[PAD]``, ``[CLS]``, ``[unused0]``, …). Continuation pieces (``##…``) are all kept; so are
   numbers.

:meth:`TargetVocabulary.full` keeps every piece: the "w/o clean_vocab" row of the paper's Table 3.
One vocabulary object serves training (the targets of eq. 7) and scoring (the query pieces summed by
TILDE-QL, the passage pieces averaged by TILDE-DL), so an ablation changes both together.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence

import numpy as np
import torch

from lib.representations.bert import WordPieceTokenizer
from lib.representations.stopwords import TILDE_STOPWORDS

#: The pieces the cleaning keeps among whole words (ielab/TILDE ``clean_vacab``).
_KEPT_WORD = re.compile(r"^[A-Za-z0-9_-]*$")
#: The names of the two vocabularies.
VOCABULARIES: tuple[str, ...] = ("cleaned", "full")


class TargetVocabulary:
    """A boolean mask over the word-piece vocabulary: ``True`` for a target piece, ``False`` for a removed one.

    Attributes:
        name: ``"cleaned"`` or ``"full"`` (see the module doc).
        keep: ``np.ndarray[bool]`` of the vocabulary's size.
    """

    def __init__(self, name: str, keep: np.ndarray) -> None:
        if name not in VOCABULARIES:
            raise ValueError(f"parameter 'name' must be one of {list(VOCABULARIES)}, got {name!r}")
        keep = np.asarray(keep)
        if keep.dtype != np.bool_ or keep.ndim != 1 or not keep.any():
            raise ValueError("parameter 'keep' must be a non-empty 1-d boolean mask with at least one kept piece")
        self.name = name
        self.keep = keep
        self._keep_tensor = torch.from_numpy(keep)

    @classmethod
    def cleaned(cls, tokenizer: WordPieceTokenizer) -> TargetVocabulary:
        """Stopwords and symbols removed (§4.3; the rule of the module doc)."""
        keep = np.ones(tokenizer.vocab_size, dtype=bool)
        for ids in tokenizer.pieces(sorted(TILDE_STOPWORDS)):
            if len(ids) == 1:
                keep[ids[0]] = False
        for piece, index in tokenizer.hf.get_vocab().items():
            if not (piece.startswith("#") and len(piece) > 1) and not _KEPT_WORD.match(piece):
                keep[index] = False
        return cls("cleaned", keep)

    @classmethod
    def full(cls, tokenizer: WordPieceTokenizer) -> TargetVocabulary:
        """Every word piece is a target (the ablation without vocabulary cleaning)."""
        return cls("full", np.ones(tokenizer.vocab_size, dtype=bool))

    @classmethod
    def named(cls, name: str, tokenizer: WordPieceTokenizer) -> TargetVocabulary:
        """:meth:`cleaned` or :meth:`full` by name; another name is a ``ValueError`` naming ``vocabulary``."""
        if name not in VOCABULARIES:
            raise ValueError(f"parameter 'vocabulary' must be one of {list(VOCABULARIES)}, got {name!r}")
        return cls.cleaned(tokenizer) if name == "cleaned" else cls.full(tokenizer)

    @property
    def vocab_size(self) -> int:
        """All word pieces, removed ones included (the length of BERT's output)."""
        return int(self.keep.size)

    @property
    def size(self) -> int:
        """The number of target pieces, |V| of eq. 7 (28,403 for the cleaned bert-base-uncased vocabulary)."""
        return int(self.keep.sum())

    @property
    def removed(self) -> np.ndarray:
        """The removed ids, ascending."""
        return np.flatnonzero(~self.keep)

    @property
    def fingerprint(self) -> str:
        """A short hash of the mask (an index records which vocabulary its term lists were cleaned with)."""
        return hashlib.sha256(np.packbits(self.keep).tobytes()).hexdigest()[:16]

    def clean(self, ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """``ids`` without the removed pieces, in order, duplicates kept (``int64``)."""
        ids = np.asarray(ids, dtype=np.int64)
        return ids[self.keep[ids]] if ids.size else ids

    def terms(self, tokenizer: WordPieceTokenizer, texts: Sequence[str]) -> list[np.ndarray]:
        """Each text's target pieces: the whole text tokenised (no cut, no special tokens), then :meth:`clean`."""
        return [self.clean(ids) for ids in tokenizer.pieces(texts)]

    def targets(self, terms: Iterable[Sequence[int] | np.ndarray]) -> torch.Tensor:
        """The multi-hot targets ``y`` of eq. 7, ``FloatTensor[B, vocab_size]``: 1 where a piece occurs in the text.

        ``terms`` are the texts' pieces; removed pieces are never targets, whether or not they were cleaned.
        """
        terms = list(terms)
        y = torch.zeros((len(terms), self.vocab_size), dtype=torch.float32)
        for row, ids in enumerate(terms):
            ids = torch.as_tensor(np.asarray(ids, dtype=np.int64))
            if ids.numel():
                y[row, ids] = 1.0
        return y * self._keep_tensor

    def mask(self) -> torch.Tensor:
        """``BoolTensor[vocab_size]``: the pieces over which eq. 7 averages."""
        return self._keep_tensor

    def __repr__(self) -> str:
        return f"TargetVocabulary({self.name!r}, {self.size} of {self.vocab_size} pieces)"


__all__ = ["VOCABULARIES", "TargetVocabulary"]
