"""TILDEv2's sparse passage index and its query-time scoring (Zhuang & Zuccon 2021, §3.2 and §4).

At indexing time every candidate passage goes through TILDEv2 once; the index keeps, for each
distinct piece of the passage, the largest weight any of its occurrences got (all that the
max-pooled exact match of :func:`lib.models.tilde_v2.exact_match_scores` reads), in float16 as
the authors store it. At query time scoring is a tokenizer, a lookup and a sum: no network.

Layout of an index folder (little-endian, memory-mappable): ``pieces.bin`` (``uint16`` piece ids,
each passage's sorted, concatenated), ``weights.f16`` (their float16 weights), ``offsets.i64``
(``int64 [passages + 1]``) and ``index.json`` (format, pids, the size of every file); the header is
written last, and loading checks every file's size against it. Under torchrun the processes share
the model's pass over the passages and rank 0 writes (:func:`build_index`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from lib.core import distributed
from lib.core.atomic import atomic_write, write_json
from lib.core.broken_files import read_index_header
from lib.core.types import Run
from lib.models.tilde_v2 import TildeV2
from lib.models.tilde_vocabulary import TargetVocabulary
from lib.representations.bert import WordPieceTokenizer
from lib.reranking.tilde_index import length_sorted_pieces

INDEX_FORMAT = 1
HEADER_NAME = "index.json"
FILES = {"pieces": ("pieces.bin", np.dtype("<u2")), "weights": ("weights.f16", np.dtype("<f2"))}
_OFFSETS = ("offsets.i64", np.dtype("<i8"))


@dataclass
class TildeV2Index:
    """A loaded index: per passage (row of ``pids``) its sorted distinct ``pieces`` and their ``weights``."""

    folder: Path
    pids: list[str]
    row_of: dict[str, int]
    pieces: np.ndarray
    weights: np.ndarray
    offsets: np.ndarray
    header: dict

    def __len__(self) -> int:
        return len(self.pids)

    @property
    def bytes_per_passage(self) -> float:
        """Bytes on disk per passage: pieces, weights and offsets (the JSON header excluded)."""
        return sum(self.header["files"].values()) / max(1, len(self))

    def score(self, query_pieces: np.ndarray, pids: Sequence[str]) -> np.ndarray:
        """``s(q, d)`` of each of ``pids`` for a query's cleaned pieces (duplicates count twice), ``float64``.

        One gather over all the candidates' entries: each entry whose piece is in the query adds its
        weight times the piece's count in the query to its passage's score.
        """
        rows = np.empty(len(pids), dtype=np.int64)
        for index, pid in enumerate(pids):
            try:
                rows[index] = self.row_of[pid]
            except KeyError:
                raise KeyError(f"passage {pid!r} is not in the TILDEv2 index {self.folder}") from None
        starts, ends = self.offsets[rows], self.offsets[rows + 1]
        lengths = ends - starts
        entries = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))
        unique, counts = np.unique(np.asarray(query_pieces, dtype=np.int64), return_counts=True)
        if not len(unique) or not len(entries):
            return np.zeros(len(pids), dtype=np.float64)
        pieces = self.pieces[entries].astype(np.int64)
        where = np.searchsorted(unique, pieces).clip(max=len(unique) - 1)
        matched = np.where(unique[where] == pieces, counts[where], 0)
        contribution = self.weights[entries].astype(np.float64) * matched
        owner = np.repeat(np.arange(len(pids)), lengths)
        return np.bincount(owner, weights=contribution, minlength=len(pids))


def passage_maxima(ids: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct pieces of one passage (sorted) and the largest weight of each."""
    pieces, inverse = np.unique(ids, return_inverse=True)
    best = np.zeros(len(pieces), dtype=np.float32)
    np.maximum.at(best, inverse, weights.astype(np.float32))
    return pieces, best


def build_index(
    model: TildeV2,
    tokenizer: WordPieceTokenizer,
    texts: Mapping[str, str],
    pids: Sequence[str],
    folder: str | os.PathLike,
    batch_size: int = 32,
    progress: bool = True,
) -> TildeV2Index:
    """Run TILDEv2 once over ``pids`` (duplicates dropped; batches of similar length) and write the index (§3.2).

    Under torchrun with ``W`` processes (:mod:`lib.core.distributed`) process ``r`` encodes batches
    ``r, r + W, …`` of the length order (:func:`lib.core.distributed.map_round_robin`) and rank 0
    receives each round and writes the index alone — the same files as one process writes — while
    the others wait at a barrier; every process then loads it from ``folder`` (a folder all see).
    """
    distributed.init_from_env()
    order, pieces_of = length_sorted_pieces(tokenizer, texts, pids)
    batches = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
    folder = Path(folder)

    @torch.inference_mode()
    def encode(batch: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each passage's distinct pieces and their largest weights, as stored."""
        chunk = [pieces_of[pid] for pid in batch]
        ids, weights = model.piece_weights(chunk)
        ids, weights = ids.cpu().numpy(), weights.float().cpu().numpy()
        rows = []
        for row, piece_list in enumerate(chunk):
            length = min(len(piece_list), model.max_passage_length)
            pieces, best = passage_maxima(ids[row, :length], weights[row, :length])
            rows.append((pieces.astype(FILES["pieces"][1]), best.astype(FILES["weights"][1])))
        return rows

    was_training = model.training
    model.eval()
    try:
        encoded = distributed.map_round_robin(batches, encode)
        if distributed.is_main():
            _write(folder, order, encoded, progress, model.settings())
        else:
            for _ in encoded:  # every round is a collective: take part while rank 0 writes
                pass
    finally:
        model.train(was_training)
    distributed.barrier()
    return load_index(folder)


def _write(
    folder: Path,
    order: Sequence[str],
    encoded: Iterable[list[tuple[np.ndarray, np.ndarray]]],
    progress: bool,
    model_settings: Mapping[str, object],
) -> None:
    """Write the index files from batches of (pieces, weights) rows in ``order``, the header last."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / HEADER_NAME).unlink(missing_ok=True)
    offsets = [0]
    with (
        atomic_write(folder / FILES["pieces"][0], "wb") as pieces_file,
        atomic_write(folder / FILES["weights"][0], "wb") as weights_file,
        tqdm(total=len(order), desc="TILDEv2 index", unit="passage", disable=not progress) as bar,
    ):
        for rows in encoded:
            for pieces, best in rows:
                pieces_file.write(pieces.tobytes())
                weights_file.write(best.tobytes())
                offsets.append(offsets[-1] + len(pieces))
            bar.update(len(rows))
    with atomic_write(folder / _OFFSETS[0], "wb") as handle:
        handle.write(np.asarray(offsets, dtype=_OFFSETS[1]).tobytes())
    files = {
        FILES["pieces"][0]: offsets[-1] * FILES["pieces"][1].itemsize,
        FILES["weights"][0]: offsets[-1] * FILES["weights"][1].itemsize,
        _OFFSETS[0]: len(offsets) * _OFFSETS[1].itemsize,
    }
    header = {"format": INDEX_FORMAT, "passages": len(order), "entries": offsets[-1], "files": files, "pids": order}
    write_json(folder / HEADER_NAME, {**header, "model_settings": dict(model_settings)})


def load_index(folder: str | os.PathLike) -> TildeV2Index:
    """Memory-map an index written by :func:`build_index`; a missing or truncated file is an error naming it."""
    folder = Path(folder)
    header = read_index_header(folder, HEADER_NAME, INDEX_FORMAT, "TILDEv2 index")
    entries = header["entries"]

    def mapped(name: str, dtype: np.dtype) -> np.ndarray:
        return (
            np.zeros(0, dtype=dtype)
            if entries == 0
            else np.memmap(folder / name, dtype=dtype, mode="r", shape=(entries,))
        )

    offsets = np.fromfile(folder / _OFFSETS[0], dtype=_OFFSETS[1])
    pids = header["pids"]
    return TildeV2Index(
        folder=folder,
        pids=pids,
        row_of={pid: row for row, pid in enumerate(pids)},
        pieces=mapped(*FILES["pieces"]),
        weights=mapped(*FILES["weights"]),
        offsets=offsets,
        header=header,
    )


def score_run(
    index: TildeV2Index,
    tokenizer: WordPieceTokenizer,
    queries: Mapping[str, str],
    run: Run,
    vocabulary: TargetVocabulary,
) -> dict[str, dict[str, float]]:
    """TILDEv2's score of every candidate of ``run`` from ``index``, the queries cleaned with ``vocabulary``."""
    scores = {}
    for qid, candidates in run.items():
        if qid not in queries:
            raise KeyError(f"query {qid!r} of the run has no text in 'queries'")
        terms = np.asarray(vocabulary.clean(tokenizer.pieces([queries[qid]])[0]), dtype=np.int64)
        pids = list(candidates)
        scores[qid] = dict(zip(pids, index.score(terms, pids).tolist(), strict=True))
    return scores


__all__ = ["TildeV2Index", "build_index", "load_index", "passage_maxima", "score_run"]
