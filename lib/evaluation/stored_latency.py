"""Query latency when the passage side is pre-computed and held in memory (lecture 8, slides 16–21 and 27).

A model whose passage side does not depend on the query (PreTTR's lower layers, ColBERT's token
vectors, TK's contextualised vectors, TK-Sparse's kept vectors, a bi-encoder's one vector) lets an
index store that side at indexing time; at query time only the query is encoded and combined with the
stored passages. Such a model has ``encode_passages(doc_ids, doc_mask) → (vectors [N, L, m], mask [N, L])``,
``encode_query(query_ids [1, Lq], query_mask) → (vectors, mask)`` and ``score_stored(query vectors, query mask,
vectors, mask) → scores [N]`` (``score_encoded`` is the two in one call).

- :func:`store_passages` — encodes passages in batches, outside any timing (indexing time).
- :func:`measure_stored_latency` — times the query-time work only: encode the query, score the stored
  candidates, sort (median over repetitions), as :func:`lib.evaluation.efficiency.measure_latency`
  times a model that runs whole at query time.

What an on-disk index of these vectors holds per passage, and the time to read it, is
:mod:`lib.evaluation.regimes`' (with :mod:`lib.reranking.passage_index`).
"""

from __future__ import annotations

import torch
from torch import nn

from lib.evaluation.efficiency import Latency, Tensors, device_name, median_ms


def is_precomputable(model: nn.Module) -> bool:
    """Whether ``model`` can score against stored passages (``encode_passages``, ``encode_query``, ``score_stored``)."""
    return all(callable(getattr(model, name, None)) for name in ("encode_passages", "encode_query", "score_stored"))


def store_passages(
    model: nn.Module, doc_ids: torch.Tensor, doc_mask: torch.Tensor, batch_size: int = 64
) -> tuple[torch.Tensor, torch.Tensor]:
    """``model.encode_passages`` over all ``N`` passages in batches, padded to one length: ``[N, L, m]``, ``[N, L]``."""
    if not is_precomputable(model):
        raise TypeError(f"{type(model).__name__} has no encode_passages / score_encoded: its passages cannot be stored")
    model.eval()
    parts = []
    with torch.inference_mode():
        for start in range(0, doc_ids.shape[0], batch_size):
            parts.append(
                model.encode_passages(doc_ids[start : start + batch_size], doc_mask[start : start + batch_size])
            )
    length = max(vectors.shape[1] for vectors, _ in parts)
    vectors = torch.cat([nn.functional.pad(v, (0, 0, 0, length - v.shape[1])) for v, _ in parts])
    mask = torch.cat([nn.functional.pad(m, (0, length - m.shape[1])) for _, m in parts])
    return vectors, mask


def measure_stored_latency(
    model: nn.Module,
    tensors: Tensors,
    batch_size: int = 256,
    repetitions: int = 3,
    warmup: int = 1,
    repeated: bool = False,
) -> Latency:
    """Time one query against its stored candidates: the query-time work of a pre-computing index.

    ``tensors`` are one query's ``(query_ids, query_mask, doc_ids, doc_mask)`` rows (the query
    repeated on every row, as :func:`lib.evaluation.efficiency.encode_pairs` gives them). The passages
    are stored first (:func:`store_passages`, not timed) and cut into chunks of ``batch_size``, each as
    long as its longest passage; the timed work encodes the query once (``encode_query``) and scores the stored
    passages chunk by chunk (``score_stored``), then sorts. The stored vectors are in memory here; the cost model of
    :mod:`lib.evaluation.regimes` also times reading them from an on-disk index.
    """
    query_ids, query_mask, doc_ids, doc_mask = tensors
    vectors, mask = store_passages(model, doc_ids, doc_mask)
    query, query_mask = query_ids[:1], query_mask[:1]
    chunks = []
    for start in range(0, vectors.shape[0], batch_size):
        chunk_mask = mask[start : start + batch_size]
        length = int(chunk_mask.any(dim=0).nonzero().max()) + 1 if chunk_mask.any() else 1
        chunks.append((vectors[start : start + batch_size, :length], chunk_mask[:, :length]))

    def rerank_once() -> torch.Tensor:
        with torch.inference_mode():
            encoded = model.encode_query(query, query_mask)  # once per query, whatever the chunks
            scores = torch.cat([model.score_stored(*encoded, chunk, kept) for chunk, kept in chunks])
            return torch.argsort(scores, descending=True)

    return Latency(
        candidates=int(doc_ids.shape[0]),
        milliseconds=median_ms(rerank_once, doc_ids.device, repetitions, warmup),
        measured=True,
        repeated=repeated,
        batch_size=batch_size,
        device=device_name(doc_ids.device),
        dtype="float32",
    )
