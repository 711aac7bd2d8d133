"""Word-level text representation for the non-BERT models (KNRM, Conv-KNRM, TK): tokenizer and vocabulary.

- :func:`tokenize` is the book's word tokenizer: **lower-case, then every maximal run of Unicode
  word characters** (Python's ``re`` pattern ``\\w+`` on ``str``: letters, digits and ``_`` of any
  script). Punctuation and whitespace separate tokens and are dropped, so ``"Wi-Fi (2.4 GHz)"`` is
  ``["wi", "fi", "2", "4", "ghz"]``. The TREC notebook paper tokenizes with BlingFire (§3); this
  rule is the book's simpler, dependency-free stand-in (a deviation the book lists).
- :class:`Vocabulary` keeps every term with a **minimum collection occurrence of 5** (TK paper §4.3,
  TREC notebook §3), ``[PAD]`` = 0 and ``[UNK]`` = 1, then the terms by count, descending, ties by
  the term itself: the same corpus always gives the same ids.
- :meth:`Vocabulary.encode` is the book's tokenizer contract (shared with :mod:`lib.representations.bert`):
  ``encode(texts, max_length) -> (ids LongTensor[B, L], mask BoolTensor[B, L])`` with padding id 0,
  ``True`` for real tokens and ``L`` the longest text of the batch capped at ``max_length`` (at least 1).
  Callers pass the paper's caps: 30 tokens for queries, 200 for documents (TK paper §4.3).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import torch

from lib.core.atomic import atomic_write

#: The tokenizer's rule: maximal runs of Unicode word characters, after lower-casing.
TOKEN_PATTERN = re.compile(r"\w+")

PAD = "[PAD]"
UNK = "[UNK]"
PAD_ID = 0
UNK_ID = 1
#: The paper's vocabulary threshold (minimum collection occurrence; TK paper §4.3).
PAPER_MIN_COUNT = 5

#: Query and document caps of the paper, in tokens (TK paper §4.3).
QUERY_MAX_LENGTH = 30
DOC_MAX_LENGTH = 200

_HEADER = "# tkbook vocabulary: one term per line, line N (from 0, after this header) is id N; term<TAB>count"


def tokenize(text: str) -> list[str]:
    """Lower-case ``text`` and return its maximal runs of Unicode word characters (regex ``\\w+``)."""
    return TOKEN_PATTERN.findall(text.lower())


def pad_batch(sequences: Sequence[Sequence[int]], max_length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad id sequences with 0 into ``(ids[B, L], mask[B, L])``, cut at ``max_length``.

    ``L`` is the longest (cut) sequence of the batch, at least 1, so an empty text is one padding
    position with mask ``False``.
    """
    if max_length < 1:
        raise ValueError(f"parameter 'max_length' must be at least 1, got {max_length}")
    cut = [list(sequence[:max_length]) for sequence in sequences]
    length = max([len(sequence) for sequence in cut] + [1])
    ids = torch.zeros((len(cut), length), dtype=torch.long)
    for row, sequence in enumerate(cut):
        if sequence:
            ids[row, : len(sequence)] = torch.tensor(sequence, dtype=torch.long)
    mask = torch.zeros((len(cut), length), dtype=torch.bool)
    for row, sequence in enumerate(cut):
        mask[row, : len(sequence)] = True
    return ids, mask


class Vocabulary:
    """Term ↔ id mapping with ``[PAD]`` = 0 and ``[UNK]`` = 1; the word-level tokenizer of the contract.

    Build it with :meth:`build` (from texts) or :meth:`from_token_streams` (from token lists).
    """

    def __init__(self, terms: Sequence[str], counts: Sequence[int] | None = None) -> None:
        """``terms`` in id order, starting with ``[PAD]`` and ``[UNK]``; ``counts`` their collection counts."""
        terms = list(terms)
        if terms[:2] != [PAD, UNK]:
            raise ValueError(f"a vocabulary starts with {PAD!r} (id 0) and {UNK!r} (id 1), got {terms[:2]}")
        if counts is not None and len(counts) != len(terms):
            raise ValueError(f"{len(terms)} terms but {len(counts)} counts")
        self.terms: list[str] = terms
        self.counts: list[int] = [0] * len(terms) if counts is None else [int(c) for c in counts]
        self.index: dict[str, int] = {}
        for position, term in enumerate(terms):
            if term in self.index:
                raise ValueError(f"term {term!r} appears twice (ids {self.index[term]} and {position})")
            self.index[term] = position

    # --- construction ------------------------------------------------------------------------
    @classmethod
    def from_token_streams(cls, streams: Iterable[Iterable[str]], min_count: int = PAPER_MIN_COUNT) -> Vocabulary:
        """Every term occurring at least ``min_count`` times over all streams; ids by count desc., then term."""
        if min_count < 1:
            raise ValueError(f"parameter 'min_count' must be at least 1, got {min_count}")
        counter: Counter[str] = Counter()
        for stream in streams:
            counter.update(stream)
        for special in (PAD, UNK):
            counter.pop(special, None)
        kept = [(term, n) for term, n in counter.items() if n >= min_count]
        kept.sort(key=lambda item: (-item[1], item[0]))
        return cls([PAD, UNK] + [term for term, _ in kept], [0, 0] + [n for _, n in kept])

    @classmethod
    def build(cls, texts: Iterable[str], min_count: int = PAPER_MIN_COUNT) -> Vocabulary:
        """The vocabulary of ``texts`` under :func:`tokenize` with the paper's ``min_count`` (5)."""
        return cls.from_token_streams((tokenize(text) for text in texts), min_count=min_count)

    # --- lookup ------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.terms)

    def __contains__(self, term: object) -> bool:
        return term in self.index

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocabulary) and self.terms == other.terms and self.counts == other.counts

    def __repr__(self) -> str:
        return f"Vocabulary({len(self)} terms)"

    @property
    def pad_id(self) -> int:
        return PAD_ID

    @property
    def unk_id(self) -> int:
        return UNK_ID

    def id_of(self, term: str) -> int:
        """The id of ``term``, ``[UNK]``'s id (1) when the term is not in the vocabulary."""
        return self.index.get(term, UNK_ID)

    def ids(self, text: str) -> list[int]:
        """The ids of ``text``'s tokens, uncapped."""
        return [self.index.get(token, UNK_ID) for token in tokenize(text)]

    def decode(self, ids: Iterable[int]) -> list[str]:
        """The terms of ``ids`` (padding included as ``[PAD]``)."""
        return [self.terms[int(i)] for i in ids]

    def encode(self, texts: Sequence[str], max_length: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Token ids and mask of a batch, right-padded with 0 and cut at ``max_length`` (the contract)."""
        if isinstance(texts, str):
            raise TypeError("parameter 'texts' must be a list of strings, not one string")
        return pad_batch([self.ids(text) for text in texts], max_length)

    def oov_rate(self, texts: Iterable[str]) -> float:
        """The fraction of tokens of ``texts`` that map to ``[UNK]`` (0.0 for no tokens)."""
        total = unknown = 0
        for text in texts:
            tokens = tokenize(text)
            total += len(tokens)
            unknown += sum(1 for token in tokens if token not in self.index)
        return unknown / total if total else 0.0

    # --- persistence -------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> Path:
        """Write the vocabulary as a plain text file (a header, then ``term<TAB>count`` in id order), atomically."""
        for term in self.terms:
            if not term or any(ch in term for ch in "\t\n\r"):
                raise ValueError(f"term {term!r} cannot be saved: empty or contains a tab or newline")
        with atomic_write(path) as handle:
            handle.write(_HEADER + "\n")
            for term, count in zip(self.terms, self.counts, strict=True):
                handle.write(f"{term}\t{count}\n")
        return Path(path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Vocabulary:
        """Read a file written by :meth:`save`; a malformed line is a ``ValueError`` naming ``file:line``."""
        path = Path(path)
        terms: list[str] = []
        counts: list[int] = []
        with open(path, encoding="utf-8", newline="\n") as handle:
            for number, line in enumerate(handle, start=1):
                line = line.rstrip("\n")
                if number == 1:
                    if line != _HEADER:
                        raise ValueError(f"{path}:1: not a tkbook vocabulary file (header {line[:60]!r})")
                    continue
                fields = line.split("\t")
                if len(fields) != 2 or not fields[0] or not fields[1].isdigit():
                    raise ValueError(f"{path}:{number}: expected 'term<TAB>count', got {line[:80]!r}")
                terms.append(fields[0])
                counts.append(int(fields[1]))
        try:
            return cls(terms, counts)
        except ValueError as error:
            raise ValueError(f"{path}: {error}") from None
