"""A bi-encoder's vectors, computed once per text and cached: its score of any query–passage pair is a dot product.

A bi-encoder (:class:`lib.models.bi_encoder.BiEncoder`; Reimers & Gurevych 2019) encodes query and
passage independently and scores their cosine, so every passage needs one encoding however many
queries it meets — the property that makes it a cheap *teacher* for distillation (Hofstätter et al.
2020, §3) and a dense retriever (lecture 8). This module

- :func:`encode` — unit-length vectors of texts, in length-sorted batches (no autograd); under
  torchrun each process encodes every ``W``-th batch and the processes exchange their rows
  (:mod:`lib.core.distributed`), so ``W`` GPUs share the teacher's pass over a corpus;
- :func:`cached_encodings` — the same, kept as ``<name>.npy`` + ``<name>.ids.txt`` and reused when
  the ids match (both written atomically, by rank 0 alone under torchrun);
- :func:`dense_scores` — the cosine of each (query, candidate) of a run;
- :func:`candidate_scores` — a bi-encoder's score of every candidate of a run, each text encoded once
  (reusing vectors already computed);
- :func:`dense_top_k` — each query's ``k`` nearest passages (exact search, a matrix product).

:func:`dense_scores` equals :meth:`BiEncoder.forward` on the same pairs up to float rounding (tested).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn import functional
from tqdm import tqdm

from lib.core import distributed
from lib.core.atomic import atomic_write
from lib.core.broken_files import read_or_set_aside
from lib.core.types import Run
from lib.models.bi_encoder import BiEncoder


@dataclass
class Encodings:
    """Unit-length vectors ``[N, H]`` (float32, CPU) of the texts ``ids`` (row ``i`` is ``ids[i]``)."""

    ids: list[str]
    vectors: torch.Tensor

    def rows(self) -> dict[str, int]:
        """Row of each id."""
        return {key: row for row, key in enumerate(self.ids)}


def encode(
    model: BiEncoder,
    tokenizer: Any,
    texts: Mapping[str, str],
    ids: Sequence[str],
    max_length: int,
    batch_size: int = 128,
    progress: bool = False,
) -> Encodings:
    """The unit-length mean-pooled vectors of ``texts[id]`` for each id, on the model's device, in inference mode.

    Texts are cut at ``max_length`` word pieces (the book's 30 for queries, 200 for passages) and
    batched by length (less padding; the result does not depend on the batching). A missing id is a
    ``KeyError`` naming it, raised before any encoding. Under torchrun with ``W`` processes, process
    ``r`` encodes batches ``r, r + W, …`` of the length order (similar lengths for all) and every
    process returns all the rows (:func:`lib.core.distributed.gather_objects`; a single process's
    vectors up to float rounding).
    """
    missing = [key for key in ids if key not in texts]
    if missing:
        raise KeyError(f"{len(missing)} ids have no text, e.g. {missing[:5]}")
    device = next(model.parameters()).device
    order = sorted(range(len(ids)), key=lambda i: len(texts[ids[i]]))
    batches = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
    mine = batches[distributed.rank() :: distributed.world_size()]
    vectors = torch.zeros(len(ids), model.bert.config.hidden_size)
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            show = progress and distributed.is_main()
            for chosen in tqdm(mine, desc="encode", unit="batch", disable=not show):
                piece_ids, mask = tokenizer.encode([texts[ids[i]] for i in chosen], max_length)
                pooled = model.encode(piece_ids.to(device), mask.to(device)).float()
                vectors[chosen] = functional.normalize(pooled, dim=-1).cpu()
    finally:
        model.train(was_training)
    if distributed.is_distributed():
        rows = [i for chosen in mine for i in chosen]
        for their_rows, their_vectors in distributed.gather_objects((rows, vectors[rows].numpy())):
            vectors[their_rows] = torch.from_numpy(their_vectors)
    return Encodings(list(ids), vectors)


def cached_encodings(
    path: str | Path,
    model: BiEncoder,
    tokenizer: Any,
    texts: Mapping[str, str],
    ids: Sequence[str],
    max_length: int,
    batch_size: int = 128,
    progress: bool = False,
) -> Encodings:
    """:func:`encode`, kept at ``path`` (``.npy``, ids in ``.ids.txt`` beside it) and reused when the ids match; a
    broken kept file is set aside (with a warning) and encoded again."""
    path = Path(path)
    id_path = path.with_suffix(".ids.txt")
    if path.is_file() and id_path.is_file() and id_path.read_text(encoding="utf-8").split("\n") == list(ids):

        def read(file: Path) -> Encodings:
            vectors = np.load(file, allow_pickle=False)
            if vectors.ndim != 2 or len(vectors) != len(ids):
                raise ValueError(f"{vectors.shape} vectors for {len(ids)} ids")
            return Encodings(list(ids), torch.from_numpy(vectors))

        # every process reads; a broken file fails on all of them, rank 0 sets it aside, all encode again
        kept = read_or_set_aside(path, read, "a cache of bi-encoder vectors", move=distributed.is_main())
        if kept is not None:
            return kept
    encodings = encode(model, tokenizer, texts, ids, max_length, batch_size, progress)
    if distributed.is_main():
        with atomic_write(path, mode="wb") as handle:
            np.save(handle, encodings.vectors.numpy(), allow_pickle=False)
        with atomic_write(id_path) as handle:
            handle.write("\n".join(ids))
    distributed.barrier()
    return encodings


def dense_scores(queries: Encodings, passages: Encodings, candidates: Run) -> dict[str, dict[str, float]]:
    """The cosine of every (query, candidate) of ``candidates``; a missing vector is a ``KeyError``."""
    query_rows, passage_rows = queries.rows(), passages.rows()
    scores: dict[str, dict[str, float]] = {}
    for qid, ranked in candidates.items():
        if qid not in query_rows:
            raise KeyError(f"query {qid!r} has no vector")
        absent = [pid for pid in ranked if pid not in passage_rows]
        if absent:
            raise KeyError(f"query {qid!r}: passages {absent[:5]} have no vector")
        pids = list(ranked)
        matrix = passages.vectors[[passage_rows[pid] for pid in pids]]
        values = (matrix @ queries.vectors[query_rows[qid]]).tolist()
        scores[qid] = dict(zip(pids, values, strict=True))
    return scores


def candidate_scores(
    model: BiEncoder,
    tokenizer: Any,
    queries: Mapping[str, str],
    texts: Mapping[str, str],
    run: Run,
    max_query_length: int,
    max_doc_length: int,
    known: Encodings | None = None,
) -> dict[str, dict[str, float]]:
    """The bi-encoder's cosine of every candidate of ``run``, each text encoded once.

    The scores of :func:`lib.reranking.scoring.score_candidates` (every candidate, up to float
    rounding) at a fraction of its cost: every query and every distinct passage is encoded once, and
    a passage already in ``known`` (e.g. a teacher's cached corpus vectors) is not encoded again.
    """
    wanted = sorted({pid for candidates in run.values() for pid in candidates})
    rows = {} if known is None else known.rows()
    missing = [pid for pid in wanted if pid not in rows]
    vectors = encode(model, tokenizer, texts, missing, max_doc_length).vectors if missing else torch.zeros(0, 1)
    reuse = [pid for pid in wanted if pid in rows]
    parts = [vectors] if missing else []
    if reuse:
        parts.append(known.vectors[[rows[pid] for pid in reuse]])
    passages = Encodings(missing + reuse, torch.cat(parts) if parts else torch.zeros(0, 1))
    encoded_queries = encode(model, tokenizer, queries, sorted(run), max_query_length)
    return dense_scores(encoded_queries, passages, run)


def dense_top_k(queries: Encodings, passages: Encodings, k: int) -> dict[str, dict[str, float]]:
    """Each query's ``k`` passages of highest cosine (exact search): a run ``{qid: {pid: cosine}}``."""
    if k < 1:
        raise ValueError(f"parameter 'k' must be >= 1, got {k}")
    k = min(k, len(passages.ids))
    run: dict[str, dict[str, float]] = {}
    for start in range(0, len(queries.ids), 1024):
        block = queries.vectors[start : start + 1024] @ passages.vectors.T
        values, indices = block.topk(k, dim=1)
        for row, qid in enumerate(queries.ids[start : start + 1024]):
            run[qid] = {passages.ids[i]: v for i, v in zip(indices[row].tolist(), values[row].tolist(), strict=True)}
    return run


__all__ = ["Encodings", "cached_encodings", "candidate_scores", "dense_scores", "dense_top_k", "encode"]
