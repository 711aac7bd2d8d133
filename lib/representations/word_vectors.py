"""Word embeddings for KNRM, Conv-KNRM and TK: trained on the book corpus, or GloVe for the ``paper`` profile.

The papers initialise every non-BERT model with 300-d GloVe vectors (42B CommonCrawl, lower-cased;
TK paper §4.2, TREC notebook §3), and the TREC runs compare GloVe with FastText (TUW19-p1 vs. p2).
GloVe cannot be downloaded at book scale (ARCHITECTURE.md, "Conventions"), so the book trains
300-d vectors on its own corpus with gensim:

- :func:`train_word_vectors` — word2vec (CBOW, negative sampling) or fastText (CBOW with character
  3–6-grams), ``min_count=5`` like the paper's vocabulary. **Determinism:** gensim initialises the
  vectors from ``seed`` and draws its sampling randomness from one ``RandomState(seed)``; with
  ``workers=1`` the jobs run in corpus order and the vectors are bit-identical run to run (checked
  in the tests, also under different ``PYTHONHASHSEED`` values). With ``workers > 1`` the threads
  race on the shared weights (Hogwild) and two runs differ, so the book uses ``workers=1``.
- :func:`embedding_matrix` — the ``[V, dim]`` initialisation matrix of a :class:`~lib.representations.text.Vocabulary`:
  row 0 (``[PAD]``) is zeros; a term with a trained vector gets it; a term without one gets a
  fastText subword vector when the vectors are fastText (the TREC run p2, "without OOV terms"),
  otherwise (and for ``[UNK]``) a seeded random normal vector with the standard deviation of the
  covered vectors' entries (``oov_std=None``), so random rows have the scale of trained ones.
- :func:`load_glove_text` — the ``paper`` profile: a GloVe text file (``word v1 … vD`` per line).
- :func:`save_matrix` / :func:`load_matrix` — ``.npy`` files, written atomically.

Cost on the book machine (2 AMD EPYC cores; v1 + v2 corpus, 40,516 passages, 2.37M tokens, 20,584
words with count ≥ 5; 300-d, CBOW): word2vec ~6 s per epoch with ``workers=1`` (5 epochs: 34–44 s)
and about half with ``workers=2`` (5 epochs: 19–22 s, not reproducible); fastText ~30 s per epoch
(5 epochs: 154–178 s with ``workers=1``, 146 s with ``workers=2`` on a busy machine). The hashes of
the ``workers=1`` vectors were identical under another ``PYTHONHASHSEED`` (word2vec: 1 and 2;
fastText: 1 and 3).
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np
import torch
from gensim.models import FastText, KeyedVectors, Word2Vec
from gensim.models.fasttext import FastTextKeyedVectors

from lib.core.atomic import atomic_write
from lib.representations.text import PAD_ID, PAPER_MIN_COUNT, UNK_ID, Vocabulary, tokenize

#: The papers' embedding size (GloVe 300-d; TK paper §4.2).
PAPER_DIM = 300
METHODS = ("word2vec", "fasttext")


class _Sentences:
    """A re-iterable view of a corpus as token lists (gensim iterates once for the vocabulary, then per epoch)."""

    def __init__(self, sentences: Iterable[str | Sequence[str]]) -> None:
        self._items = sentences if isinstance(sentences, Sequence) else list(sentences)

    def __iter__(self) -> Iterator[list[str]]:
        for item in self._items:
            yield tokenize(item) if isinstance(item, str) else list(item)


@dataclass(frozen=True)
class WordVectorSettings:
    """How :func:`train_word_vectors` trains (gensim's settings; the papers' 300 dimensions and vocabulary threshold).

    Attributes:
        method: ``"word2vec"`` or ``"fasttext"`` (character 3–6-grams; its vectors also give a vector to a word
            never seen in training).
        dim: vector size (300 as GloVe in the papers; small in tests).
        epochs: passes over the corpus.
        workers: training threads; more than 1 is faster but not deterministic.
        min_count: gensim's vocabulary threshold (the paper's 5).
        window, negative, sg: gensim's context window, negative samples and skip-gram flag
            (default CBOW, gensim's default and the cheaper one).
        bucket: fastText's hash buckets for character n-grams (fastText's default 2M takes
            2M × ``dim`` floats, 2.4 GB at 300-d; fewer buckets share more n-grams).
    """

    method: str = "word2vec"
    dim: int = PAPER_DIM
    epochs: int = 5
    workers: int = 1
    min_count: int = PAPER_MIN_COUNT
    window: int = 5
    negative: int = 5
    sg: bool = False
    bucket: int = 2_000_000

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"parameter 'method' must be one of {METHODS}, got {self.method!r}")
        for name in ("dim", "epochs", "workers", "min_count"):
            if getattr(self, name) < 1:
                raise ValueError(f"parameter {name!r} must be at least 1, got {getattr(self, name)}")


def train_word_vectors(
    sentences: Iterable[str | Sequence[str]], settings: WordVectorSettings | None = None, seed: int = 0
) -> KeyedVectors:
    """Train gensim word vectors on ``sentences``: texts (by :func:`lib.representations.text.tokenize`) or tokens.

    ``settings`` (:class:`WordVectorSettings`) say which method and sizes; ``seed`` is gensim's, and with
    ``workers=1`` the result is deterministic. Returns the trained ``KeyedVectors``
    (``FastTextKeyedVectors`` for fastText).
    """
    settings = settings or WordVectorSettings()
    corpus = _Sentences(sentences)
    common = dict(
        vector_size=settings.dim,
        window=settings.window,
        min_count=settings.min_count,
        negative=settings.negative,
        sg=int(settings.sg),
        seed=seed,
        workers=settings.workers,
        epochs=settings.epochs,
    )
    model = Word2Vec(**common) if settings.method == "word2vec" else FastText(bucket=settings.bucket, **common)
    model.build_vocab(corpus)
    if len(model.wv) == 0:
        raise ValueError(f"no word occurs at least min_count={settings.min_count} times in the training sentences")
    model.train(corpus, total_examples=model.corpus_count, epochs=settings.epochs)
    return model.wv


@dataclass(frozen=True)
class Coverage:
    """How the rows of an embedding matrix were filled.

    Attributes:
        terms: vocabulary terms other than ``[PAD]`` and ``[UNK]``.
        found: terms with a vector of their own (trained word, GloVe word).
        subword: terms given a fastText subword vector.
        random: terms given a seeded random vector.
    """

    terms: int
    found: int
    subword: int
    random: int

    @property
    def fraction(self) -> float:
        """Share of the terms that have a vector of their own."""
        return self.found / self.terms if self.terms else 0.0

    def __str__(self) -> str:
        return (
            f"{self.found:,} of {self.terms:,} terms have a vector ({self.fraction:.1%}); "
            f"{self.subword:,} from fastText subwords, {self.random:,} random"
        )


def _has_own_vector(keyed_vectors: KeyedVectors, term: str) -> bool:
    return term in keyed_vectors.key_to_index


def _fill(
    vocabulary: Vocabulary, keyed_vectors: KeyedVectors, seed: int, oov_std: float | None
) -> tuple[torch.Tensor, Coverage]:
    dim = keyed_vectors.vector_size
    matrix = np.zeros((len(vocabulary), dim), dtype=np.float32)
    filled = np.zeros(len(vocabulary), dtype=bool)
    filled[PAD_ID] = True
    found = subword = 0
    subwords = isinstance(keyed_vectors, FastTextKeyedVectors) and keyed_vectors.bucket > 0
    for index, term in enumerate(vocabulary.terms):
        if index in (PAD_ID, UNK_ID):
            continue
        if _has_own_vector(keyed_vectors, term):
            matrix[index] = keyed_vectors.get_vector(term)
            filled[index] = True
            found += 1
        elif subwords:
            vector = keyed_vectors.get_vector(term)
            if np.any(vector):
                matrix[index] = vector
                filled[index] = True
                subword += 1
    covered = filled.copy()
    covered[PAD_ID] = False
    if oov_std is None:
        oov_std = float(matrix[covered].std()) if covered.any() else 0.1
    missing = np.flatnonzero(~filled)
    rng = np.random.default_rng(seed)
    matrix[missing] = rng.normal(0.0, oov_std, size=(len(missing), dim)).astype(np.float32)
    random = int(len(missing)) - 1  # [UNK] is always random and not a term
    coverage = Coverage(terms=len(vocabulary) - 2, found=found, subword=subword, random=random)
    return torch.from_numpy(matrix), coverage


def embedding_matrix(
    vocabulary: Vocabulary, keyed_vectors: KeyedVectors, seed: int = 0, oov_std: float | None = None
) -> torch.Tensor:
    """The ``FloatTensor[len(vocabulary), dim]`` that initialises a model's embedding layer.

    Row 0 (``[PAD]``) is zeros; a term with a vector gets it; otherwise a fastText subword vector
    (fastText vectors only), otherwise a random ``N(0, oov_std²)`` vector from ``seed`` (``[UNK]``
    always). ``oov_std=None`` uses the standard deviation of the entries of the covered rows.
    """
    return _fill(vocabulary, keyed_vectors, seed, oov_std)[0]


def coverage(vocabulary: Vocabulary, keyed_vectors: KeyedVectors) -> Coverage:
    """How :func:`embedding_matrix` fills ``vocabulary``'s rows from ``keyed_vectors``."""
    return _fill(vocabulary, keyed_vectors, 0, None)[1]


def _open_text(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", newline="\n")
    return open(path, encoding="utf-8", newline="\n")


def load_glove_text(
    path: str | os.PathLike,
    vocabulary: Vocabulary,
    dim: int | None = PAPER_DIM,
    seed: int = 0,
    oov_std: float | None = None,
) -> tuple[torch.Tensor, Coverage]:
    """Read a GloVe text file (``word v1 … vD`` per line, optionally gzip) for ``vocabulary``: matrix and coverage.

    Only the vocabulary's terms are kept, so GloVe-42B (1.9M words) needs little memory. A word is
    everything before the last ``dim`` fields, so the few GloVe-840B words that contain a space
    are read correctly. A first line of two integers (word2vec's text header) is skipped. ``dim``
    is the expected size (``None``: the size of the first vector). A malformed line (wrong number
    of fields, a field that is not a number, a word given twice) is a ``ValueError`` naming
    ``file:line``. The returned :class:`Coverage` says how many terms GloVe covers.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such GloVe file (the paper profile uses glove.42B.300d.txt)")
    wanted = vocabulary.index
    words: list[str] = []
    vectors: list[np.ndarray] = []
    seen: set[str] = set()
    with _open_text(path) as handle:
        for number, line in enumerate(handle, start=1):
            line = line.rstrip("\n").rstrip("\r")
            if not line.strip():
                raise ValueError(f"{path}:{number}: empty line")
            fields = line.rstrip(" ").split(" ")
            if number == 1 and len(fields) == 2 and all(field.isdigit() for field in fields):
                continue  # word2vec text header "count dim"
            if dim is None:
                dim = len(fields) - 1
            if len(fields) < dim + 1 or dim < 1:
                raise ValueError(f"{path}:{number}: expected a word and {dim} numbers, got {len(fields)} fields")
            word = " ".join(fields[:-dim])
            if not word:
                raise ValueError(f"{path}:{number}: the line has no word before its {dim} numbers")
            try:
                vector = np.asarray([float(field) for field in fields[-dim:]], dtype=np.float32)
            except ValueError:
                raise ValueError(f"{path}:{number}: a vector field of {word!r} is not a number") from None
            if not np.all(np.isfinite(vector)):
                raise ValueError(f"{path}:{number}: the vector of {word!r} is not finite")
            if word in seen:
                raise ValueError(f"{path}:{number}: the word {word!r} appears twice")
            seen.add(word)
            if word in wanted:
                words.append(word)
                vectors.append(vector)
    if dim is None:
        raise ValueError(f"{path}: the file holds no vectors")
    keyed_vectors = KeyedVectors(vector_size=dim, count=len(words))
    if words:
        keyed_vectors.add_vectors(words, np.stack(vectors))
    return _fill(vocabulary, keyed_vectors, seed, oov_std)


def save_matrix(path: str | os.PathLike, matrix: torch.Tensor | np.ndarray) -> Path:
    """Write an embedding matrix as a float32 ``.npy`` file, atomically."""
    array = matrix.detach().cpu().numpy() if isinstance(matrix, torch.Tensor) else np.asarray(matrix)
    if array.ndim != 2:
        raise ValueError(f"an embedding matrix has 2 dimensions, got shape {tuple(array.shape)}")
    with atomic_write(path, mode="wb") as handle:
        np.save(handle, array.astype(np.float32, copy=False), allow_pickle=False)
    return Path(path)


def load_matrix(path: str | os.PathLike, vocabulary: Vocabulary | None = None) -> torch.Tensor:
    """Read a matrix written by :func:`save_matrix`; with ``vocabulary``, check that it has one row per term."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such embedding matrix (the embeddings chapter writes it)")
    array = np.load(path, allow_pickle=False)
    if array.ndim != 2:
        raise ValueError(f"{path}: an embedding matrix has 2 dimensions, got shape {array.shape}")
    if vocabulary is not None and array.shape[0] != len(vocabulary):
        raise ValueError(f"{path}: {array.shape[0]} rows but the vocabulary has {len(vocabulary)} terms")
    return torch.from_numpy(array)


def cosine_neighbours(keyed_vectors: KeyedVectors, term: str, k: int = 5) -> list[tuple[str, float]]:
    """The ``k`` nearest words of ``term`` by cosine similarity (for the chapter's sanity table)."""
    if term not in keyed_vectors.key_to_index and not isinstance(keyed_vectors, FastTextKeyedVectors):
        raise KeyError(f"{term!r} has no vector")
    return [(word, float(score)) for word, score in keyed_vectors.most_similar(term, topn=k)]


__all__ = [
    "METHODS",
    "PAPER_DIM",
    "Coverage",
    "coverage",
    "cosine_neighbours",
    "embedding_matrix",
    "load_glove_text",
    "load_matrix",
    "save_matrix",
    "train_word_vectors",
    "WordVectorSettings",
]
