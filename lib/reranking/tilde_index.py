"""TILDE's passage index: each passage's log-probability vector and its target pieces, pre-computed (§3.2).

At indexing time every candidate passage goes through TILDE once; at query time TILDE-QL only
gathers from these vectors (no neural network), and TILDE-DL needs the passages' pieces.

Layout of an index folder (memory-mappable, little-endian, row ``i`` is ``pids[i]``):

- ``log_probs.f16`` — raw ``float16`` matrix ``[passages, vocab_size]``, row-major: ``log P(t|d)``
  (natural log of σ(z_t), :mod:`lib.models.tilde`) for every piece of the vocabulary. float16 is
  the authors' storage; ``log_prob_dtype="float32"`` doubles the size and keeps differences below
  float16's resolution (its spacing is ~0.004–0.008 for log-probabilities between -4 and -16),
  which matters for a model whose predictions barely depend on the passage;
- ``terms.bin`` — the passages' target pieces (the whole passage tokenised, then cleaned with the
  index's :class:`~lib.models.tilde_vocabulary.TargetVocabulary`, duplicates kept), concatenated, as
  ``uint16`` when the vocabulary has at most 65,536 pieces, else ``int32``;
- ``offsets.i64`` — raw ``int64`` ``[passages + 1]``: passage ``i``'s pieces are ``terms[offsets[i]:offsets[i+1]]``;
- ``index.json`` — the header: format, pid order, vocabulary size and name (``cleaned`` / ``full``)
  with its fingerprint, dtypes, the expected size of every file, and free-form ``metadata``.

Every file is written atomically (:mod:`lib.core.atomic`); the header goes last and is removed first when
an index is rewritten, so a folder without a header is an unfinished build. Under torchrun the processes
share the model's pass over the passages and rank 0 alone writes (:func:`build_index`). Loading checks every
file's size against the header: a truncated file is an error naming it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm  # the plain text bar: tqdm.auto needs ipywidgets, which the book does not install

from lib.core import distributed
from lib.core.atomic import atomic_write, write_json
from lib.core.broken_files import read_index_header
from lib.models.tilde import Tilde
from lib.models.tilde_vocabulary import TargetVocabulary
from lib.representations.bert import WordPieceTokenizer

INDEX_FORMAT = 1
HEADER_NAME = "index.json"
LOG_PROBS_NAME = "log_probs.f16"
TERMS_NAME = "terms.bin"
OFFSETS_NAME = "offsets.i64"
#: The dtypes a log-probability matrix may be stored in.
LOG_PROB_DTYPES: dict[str, np.dtype] = {"float16": np.dtype("<f2"), "float32": np.dtype("<f4")}
_OFFSET_DTYPE = np.dtype("<i8")


def term_dtype(vocab_size: int) -> np.dtype:
    """The dtype of stored piece ids: ``uint16`` up to 65,536 pieces, else ``int32``."""
    return np.dtype("<u2") if vocab_size <= 2**16 else np.dtype("<i4")


@dataclass
class TildeIndex:
    """A loaded index (:func:`load_index`): memory-mapped log-probabilities and the passages' pieces.

    Attributes:
        folder: where it lives.
        pids: passage ids in row order; ``row_of`` maps a pid to its row.
        log_probs: ``np.memmap`` float16 ``[passages, vocab_size]``.
        terms: ``np.memmap`` of all passages' pieces; ``offsets``: ``int64 [passages + 1]`` into it.
        vocabulary: the name of the target vocabulary the pieces were cleaned with; ``header``: all of ``index.json``.
    """

    folder: Path
    pids: list[str]
    row_of: dict[str, int]
    log_probs: np.ndarray
    terms: np.ndarray
    offsets: np.ndarray
    vocabulary: str
    header: dict[str, Any]

    def __len__(self) -> int:
        return len(self.pids)

    @property
    def vocab_size(self) -> int:
        return int(self.log_probs.shape[1])

    @property
    def bytes_per_passage(self) -> float:
        """Bytes on disk per passage: log-probabilities, pieces and offsets (the JSON header excluded)."""
        return sum(self.header["files"].values()) / max(1, len(self))

    @property
    def log_prob_bytes_per_passage(self) -> int:
        """The log-probability vector alone: ``vocab_size × 2`` bytes in float16."""
        return self.vocab_size * self.log_probs.dtype.itemsize

    def rows(self, pids: Sequence[str]) -> np.ndarray:
        """The rows of ``pids`` (``int64``); a pid not in the index is a ``KeyError`` naming it and the folder."""
        try:
            return np.fromiter((self.row_of[pid] for pid in pids), dtype=np.int64, count=len(pids))
        except KeyError as error:
            raise KeyError(f"passage {error.args[0]!r} is not in the TILDE index {self.folder}") from None

    def passage_terms(self, pid: str) -> np.ndarray:
        """One passage's stored target pieces."""
        row = self.rows([pid])[0]
        return np.asarray(self.terms[self.offsets[row] : self.offsets[row + 1]], dtype=np.int64)

    def check_vocabulary(self, vocabulary: TargetVocabulary) -> None:
        """A ``ValueError`` unless ``vocabulary`` is the one the index was built with."""
        expected = (self.header["vocabulary"], self.header["vocabulary_fingerprint"], self.vocab_size)
        given = (vocabulary.name, vocabulary.fingerprint, vocabulary.vocab_size)
        if given != expected:
            raise ValueError(
                f"{self.folder / HEADER_NAME}: the index was built with vocabulary {expected}, "
                f"not {given} (name, fingerprint, size): use the same tokenizer and vocabulary"
            )


def write_index(
    folder: str | os.PathLike,
    pids: Sequence[str],
    blocks: Iterable[tuple[np.ndarray, Sequence[np.ndarray]]],
    vocabulary: TargetVocabulary,
    metadata: Mapping[str, Any] | None = None,
    log_prob_dtype: str = "float16",
) -> Path:
    """Write an index of ``pids`` from ``blocks`` of ``(log_probs [b, vocab], pieces of the b passages)``, in pid order.

    The blocks are streamed to disk (an index larger than memory is fine). ``pieces`` should already
    be cleaned with ``vocabulary`` (:meth:`TargetVocabulary.terms`); their ids must fit the vocabulary.
    ``log_prob_dtype`` is ``"float16"`` (the paper's) or ``"float32"``.
    """
    if log_prob_dtype not in LOG_PROB_DTYPES:
        raise ValueError(f"parameter 'log_prob_dtype' must be one of {list(LOG_PROB_DTYPES)}, got {log_prob_dtype!r}")
    value_dtype = LOG_PROB_DTYPES[log_prob_dtype]
    folder = Path(folder)
    pids = [str(pid) for pid in pids]
    if len(set(pids)) != len(pids):
        raise ValueError("parameter 'pids' holds a passage id twice")
    vocab_size = vocabulary.vocab_size
    ids_dtype = term_dtype(vocab_size)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / HEADER_NAME).unlink(missing_ok=True)
    offsets = [0]
    with (
        atomic_write(folder / LOG_PROBS_NAME, "wb") as log_file,
        atomic_write(folder / TERMS_NAME, "wb") as terms_file,
    ):
        for log_probs, pieces in blocks:
            log_probs = np.asarray(log_probs)
            if log_probs.ndim != 2 or log_probs.shape[1] != vocab_size or log_probs.shape[0] != len(pieces):
                raise ValueError(
                    f"a block of log-probabilities has shape {log_probs.shape}; expected "
                    f"({len(pieces)}, {vocab_size}) for its {len(pieces)} passages"
                )
            log_file.write(np.ascontiguousarray(log_probs, dtype=value_dtype).tobytes())
            for ids in pieces:
                ids = np.asarray(ids, dtype=np.int64)
                if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
                    raise ValueError(f"passage {pids[len(offsets) - 1]!r}: a piece id is outside [0, {vocab_size})")
                terms_file.write(ids.astype(ids_dtype).tobytes())
                offsets.append(offsets[-1] + ids.size)
    if len(offsets) - 1 != len(pids):
        raise ValueError(f"the blocks hold {len(offsets) - 1} passages but 'pids' names {len(pids)}")
    with atomic_write(folder / OFFSETS_NAME, "wb") as handle:
        handle.write(np.asarray(offsets, dtype=_OFFSET_DTYPE).tobytes())
    files = {
        LOG_PROBS_NAME: len(pids) * vocab_size * value_dtype.itemsize,
        TERMS_NAME: offsets[-1] * ids_dtype.itemsize,
        OFFSETS_NAME: len(offsets) * _OFFSET_DTYPE.itemsize,
    }
    header = {
        "format": INDEX_FORMAT,
        "passages": len(pids),
        "vocab_size": vocab_size,
        "log_prob_dtype": value_dtype.str,
        "log_base": "e",
        "term_dtype": ids_dtype.str,
        "terms": offsets[-1],
        "vocabulary": vocabulary.name,
        "vocabulary_fingerprint": vocabulary.fingerprint,
        "files": files,
        "metadata": dict(metadata or {}),
        "pids": pids,
    }
    write_json(folder / HEADER_NAME, header)
    return folder


def load_index(folder: str | os.PathLike) -> TildeIndex:
    """Memory-map an index folder written by :func:`write_index`; sizes are checked against the header."""
    folder = Path(folder)
    header = read_index_header(folder, HEADER_NAME, INDEX_FORMAT, "TILDE index")
    count, vocab_size = header["passages"], header["vocab_size"]
    shape = (count, vocab_size)
    log_probs = _memmap(folder / LOG_PROBS_NAME, np.dtype(header["log_prob_dtype"]), shape)
    terms = _memmap(folder / TERMS_NAME, np.dtype(header["term_dtype"]), (header["terms"],))
    offsets = np.fromfile(folder / OFFSETS_NAME, dtype=_OFFSET_DTYPE)
    if offsets[0] != 0 or offsets[-1] != header["terms"] or np.any(np.diff(offsets) < 0):
        raise ValueError(f"{folder / OFFSETS_NAME}: the offsets are not an ascending 0 … {header['terms']}")
    pids = header["pids"]
    if len(pids) != count:
        raise ValueError(f"{folder / HEADER_NAME}: {len(pids)} pids for {count} passages")
    return TildeIndex(
        folder=folder,
        pids=pids,
        row_of={pid: row for row, pid in enumerate(pids)},
        log_probs=log_probs,
        terms=terms,
        offsets=offsets,
        vocabulary=header["vocabulary"],
        header=header,
    )


def _memmap(path: Path, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    if 0 in shape:  # numpy cannot map an empty file
        return np.zeros(shape, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r", shape=shape)


def length_sorted_pieces(
    tokenizer: WordPieceTokenizer, texts: Mapping[str, str], pids: Iterable[str]
) -> tuple[list[str], dict[str, list[int]]]:
    """``pids`` without duplicates, shortest passage first (batches of similar length pad little), and their pieces.

    A pid without text in ``texts`` is a ``KeyError`` naming it, before any work.
    """
    order = list(dict.fromkeys(str(pid) for pid in pids))
    missing = [pid for pid in order if pid not in texts]
    if missing:
        raise KeyError(f"passages without text in 'texts': {missing[:5]}{' …' if len(missing) > 5 else ''}")
    pieces_of = dict(zip(order, tokenizer.pieces([texts[pid] for pid in order]), strict=True))
    order.sort(key=lambda pid: len(pieces_of[pid]))
    return order, pieces_of


def build_index(
    model: Tilde,
    tokenizer: WordPieceTokenizer,
    texts: Mapping[str, str],
    pids: Iterable[str],
    folder: str | os.PathLike,
    vocabulary: TargetVocabulary,
    batch_size: int = 64,
    progress: bool = True,
    metadata: Mapping[str, Any] | None = None,
    log_prob_dtype: str = "float16",
) -> TildeIndex:
    """Run TILDE once over every passage of ``pids`` (duplicates dropped) and write the index (TILDE §3.2).

    Passages go through the model in batches of similar length; the index's rows follow that order
    (``TildeIndex.pids``), which scoring never depends on.

    The model runs where it is, in eval mode, under ``torch.inference_mode()``; log-probabilities
    are stored as ``log_prob_dtype`` (float16 as the paper, or float32). A pid without text in
    ``texts`` is a ``KeyError`` naming it, before any work.

    Under torchrun with ``W`` processes (:mod:`lib.core.distributed`) process ``r`` encodes batches
    ``r, r + W, …`` of the length order (:func:`lib.core.distributed.map_round_robin`) and rank 0
    receives each round of ``W`` batches and writes the index alone — the same files as one process
    writes — while the others wait at a barrier; every process then loads the index from ``folder``
    (a folder every process sees). With a pooled cache on the model
    (:meth:`lib.models.tilde.Tilde.use_pooled_cache`) each process adds the shards of its own batches.
    """
    if vocabulary.vocab_size != model.vocab_size:
        raise ValueError(f"the vocabulary has {vocabulary.vocab_size} pieces, the model {model.vocab_size}")
    if batch_size < 1:
        raise ValueError(f"parameter 'batch_size' must be at least 1, got {batch_size}")
    if log_prob_dtype not in LOG_PROB_DTYPES:
        raise ValueError(f"parameter 'log_prob_dtype' must be one of {list(LOG_PROB_DTYPES)}, got {log_prob_dtype!r}")
    distributed.init_from_env()
    order, pieces_of = length_sorted_pieces(tokenizer, texts, pids)  # the rows follow this order
    batches = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]

    def encode(batch: list[str]) -> np.ndarray:
        log_probs = model.piece_log_probs([pieces_of[pid] for pid in batch], "passage", batch_size=batch_size)
        return np.ascontiguousarray(log_probs.numpy(), dtype=LOG_PROB_DTYPES[log_prob_dtype])

    encoded = distributed.map_round_robin(batches, encode)
    if distributed.is_main():

        def blocks() -> Iterable[tuple[np.ndarray, list[np.ndarray]]]:
            with tqdm(total=len(order), desc="TILDE index", unit="passage", disable=not progress) as bar:
                for batch, log_probs in zip(batches, encoded, strict=True):
                    yield log_probs, [vocabulary.clean(pieces_of[pid]) for pid in batch]
                    bar.update(len(batch))

        info = {"model_settings": model.settings(), **dict(metadata or {})}
        write_index(folder, order, blocks(), vocabulary, info, log_prob_dtype)
    else:
        for _ in encoded:  # every round is a collective: take part while rank 0 writes
            pass
    distributed.barrier()
    return load_index(folder)


def cast_index(
    source: TildeIndex, folder: str | os.PathLike, vocabulary: TargetVocabulary, log_prob_dtype: str = "float16"
) -> TildeIndex:
    """A copy of ``source`` in ``folder`` with its log-probabilities stored as ``log_prob_dtype``: no model pass.

    Casting the model's float32 vectors gives exactly what :func:`build_index` would store in float16.
    ``vocabulary`` must be the one ``source`` was built with.
    """
    source.check_vocabulary(vocabulary)

    def blocks(rows: int = 1024) -> Iterable[tuple[np.ndarray, list[np.ndarray]]]:
        for start in range(0, len(source), rows):
            stop = min(start + rows, len(source))
            pieces = [source.terms[source.offsets[i] : source.offsets[i + 1]] for i in range(start, stop)]
            yield np.asarray(source.log_probs[start:stop]), pieces

    write_index(folder, source.pids, blocks(), vocabulary, source.header["metadata"], log_prob_dtype)
    return load_index(folder)


__all__ = [
    "HEADER_NAME",
    "INDEX_FORMAT",
    "LOG_PROB_DTYPES",
    "LOG_PROBS_NAME",
    "OFFSETS_NAME",
    "TERMS_NAME",
    "TildeIndex",
    "build_index",
    "cast_index",
    "length_sorted_pieces",
    "load_index",
    "term_dtype",
    "write_index",
]
