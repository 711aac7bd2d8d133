"""The vectors a frozen TILDE encoder gives, kept on disk and computed once per input (the book's CPU budget).

With a frozen encoder (:meth:`lib.models.tilde.Tilde.train_only_top` with no layer) TILDE's head
reads vectors that never change: every variant of the ablation, the training of each, every index
of chapter 6, and chapter 2's teacher when it is the same encoder with the same pooling read the
same vector of the same input. A BERT pass is most of what a CPU spends on TILDE, so
:class:`PooledCache` keeps each vector once, under two keys:

- the encoder's *fingerprint* (:meth:`lib.models.tilde.Tilde.encoder_fingerprint`: its weights and
  its pooling), one folder per fingerprint — vectors of other weights can never be read;
- the *input row's* digest: the ids the encoder reads (marker, the capped word pieces, ``[SEP]``),
  so the direction and the caps are part of the key.

Each :meth:`PooledCache.put` writes one shard, ``<fingerprint>/<digest of its keys>.npz`` (the keys
and the float32 vectors), atomically; a folder is read once per process, shards in name order. An
interrupted run loses nothing it had written, and no file is ever rewritten; a broken shard (a truncated copy)
is set aside with a warning and its vectors are computed again.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from lib.core.atomic import atomic_write
from lib.core.broken_files import read_or_set_aside

#: The digest length of an input row's key, in bytes (SHA-1).
KEY_BYTES = 20


def row_key(row: Sequence[int]) -> bytes:
    """The key of one input row (the ids the encoder reads): SHA-1 of the ids as little-endian int32."""
    return hashlib.sha1(np.asarray(row, dtype="<i4").tobytes()).digest()


def _read_shard(shard: Path) -> tuple[np.ndarray, np.ndarray]:
    """A shard's keys and vectors; a truncated or mismatched shard raises."""
    with np.load(shard, allow_pickle=False) as data:
        keys, matrix = data["keys"], data["vectors"]
    if keys.dtype != np.dtype(f"S{KEY_BYTES}") or matrix.ndim != 2 or len(keys) != len(matrix):
        raise ValueError(f"keys {keys.dtype} {keys.shape} do not match vectors {matrix.shape}")
    return keys, matrix


class PooledCache:
    """Pooled vectors by encoder fingerprint and input row, in ``folder`` (module doc)."""

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder)
        self._rows: dict[str, dict[bytes, int]] = {}
        self._vectors: dict[str, list[np.ndarray]] = {}

    def _load(self, fingerprint: str) -> dict[bytes, int]:
        if fingerprint in self._rows:
            return self._rows[fingerprint]
        rows: dict[bytes, int] = {}
        vectors: list[np.ndarray] = []
        for shard in sorted((self.folder / fingerprint).glob("*.npz")):
            read = read_or_set_aside(shard, _read_shard, "a pooled-vector shard (TILDE's cache)")
            if read is None:  # broken: set aside, its rows are recomputed when asked for
                continue
            keys, matrix = read
            for key, vector in zip(keys.tolist(), matrix, strict=True):
                if key not in rows:
                    rows[key] = len(vectors)
                    vectors.append(vector)
        self._rows[fingerprint], self._vectors[fingerprint] = rows, vectors
        return rows

    def __len__(self) -> int:
        """The vectors read or written by this process, all fingerprints together."""
        return sum(len(vectors) for vectors in self._vectors.values())

    def get(self, fingerprint: str, rows: Sequence[Sequence[int]]) -> tuple[dict[int, torch.Tensor], list[int]]:
        """The cached vector of each of ``rows`` by position, and the positions that have none."""
        known, vectors = self._load(fingerprint), self._vectors[fingerprint]
        found: dict[int, torch.Tensor] = {}
        missing: list[int] = []
        for position, row in enumerate(rows):
            index = known.get(row_key(row))
            if index is None:
                missing.append(position)
            else:
                found[position] = torch.from_numpy(vectors[index])
        return found, missing

    def put(self, fingerprint: str, rows: Sequence[Sequence[int]], vectors: torch.Tensor) -> None:
        """Keep ``vectors[i]`` as the vector of ``rows[i]`` (one new shard; rows already kept are skipped)."""
        if len(rows) != len(vectors):
            raise ValueError(f"{len(rows)} rows but {len(vectors)} vectors")
        known, kept = self._load(fingerprint), self._vectors[fingerprint]
        matrix = vectors.detach().to("cpu", torch.float32).numpy()
        new = {}
        for row, vector in zip(rows, matrix, strict=True):
            key = row_key(row)
            if key not in known and key not in new:
                new[key] = vector
        if not new:
            return
        keys = np.array(list(new), dtype=f"S{KEY_BYTES}")
        values = np.stack(list(new.values()))
        shard = self.folder / fingerprint / f"{hashlib.sha1(keys.tobytes()).hexdigest()[:20]}.npz"
        with atomic_write(shard, mode="wb") as handle:
            np.savez(handle, keys=keys, vectors=values)
        for key, vector in new.items():
            known[key] = len(kept)
            kept.append(vector)


__all__ = ["KEY_BYTES", "PooledCache", "row_key"]
