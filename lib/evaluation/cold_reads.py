"""Cold reads: does the stored regime still win when its index no longer sits in memory?

Chapter 3 times the stored regime (:mod:`lib.evaluation.regimes`) with an index of the timed queries' candidates
alone, a few megabytes the page cache holds after the warm-up. A collection's index is larger than memory: MS MARCO's
8,841,823 passages (:data:`MSMARCO_PASSAGES`) at TK-BERT-6's int8 vectors are hundreds of gigabytes, and a query's
candidates are read from pages that are, for the most part, on disk. ``python -m benchmarks.cold_reads`` measures
both: an index of a collection's size (the real passages' vectors padded with copies, for timing only) queried
*warm* (its pages in memory after a warm-up) and *cold* (its pages evicted before each timed run; read through the
kernel's default memory map, advised for random reads, or as the library serves an index: advised for random reads
and every candidate's rows asked for at once before the query is encoded), and writes JSON under
``benchmarks/results/cold/``.

This module holds what the benchmark and chapter 3 share: the collection size an index is projected to
(:func:`projected_bytes`), the published size it is compared with — ColBERTv2's residual compression stores MS
MARCO's passage index in about 25 GiB at 2 bits per dimension, 16 GiB at 1, against ColBERT's 154 GiB (Santhanam et
al., "ColBERTv2: Effective and Efficient Retrieval via Lightweight Late Interaction", NAACL 2022;
:data:`COLBERTV2_MSMARCO`) — and the reader of every
committed result, :func:`committed_cold_reads`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

#: The passages of MS MARCO's passage collection (v1), the size an index is projected to.
MSMARCO_PASSAGES = 8_841_823
#: Bytes in a GiB (sizes are compared in GiB, as ColBERTv2 reports them).
GIB = 2**30
#: ColBERTv2's published index size of MS MARCO's passages, for comparison (paraphrased, not quoted).
COLBERTV2_MSMARCO: Mapping[str, Any] = {
    "gib": 25.0,
    "bits_per_dimension": 2,
    "one_bit_gib": 16.0,
    "colbert_gib": 154.0,
    "bytes_per_passage": 25.0 * GIB / MSMARCO_PASSAGES,
    "source": "Santhanam et al., ColBERTv2: Effective and Efficient Retrieval via Lightweight Late Interaction, "
    "NAACL 2022",
    "sentence": "ColBERTv2's residual compression (a centroid id and 2 bits per dimension of each token vector's "
    "residual) stores the index of MS MARCO's 8.8M passages in about 25 GiB, 16 GiB at 1 bit per dimension, against "
    "154 GiB for ColBERT's 16-bit vectors (paraphrase of the paper's reported sizes; the paper's text is not held "
    "here: the three sizes agree across independent summaries of it).",
}
#: The states an index is queried in: its pages in memory (after a warm-up), and evicted before each timed run with
#: the vectors mapped by the kernel's default (``cold``: a fault reads the kernel's read-around window), advised
#: ``MADV_RANDOM`` (``cold-random``: a fault reads its page, one after the other) or as the library serves them
#: (``cold-prefetched``: advised random, and every candidate's rows asked for at once, ``MADV_WILLNEED``, before the
#: query is encoded — :data:`lib.reranking.passage_index.READS`).
STATES: tuple[str, ...] = ("warm", "cold", "cold-random", "cold-prefetched")
#: The columns of :func:`committed_cold_reads` before the latencies.
COLUMNS: tuple[str, ...] = ("device", "date", "precision", "model", "index", "passages", "state")
PROJECTED = "MS MARCO GiB (projected)"


def projected_bytes(bytes_per_passage: float, codebook_bytes: int = 0, passages: int = MSMARCO_PASSAGES) -> float:
    """An index's size at ``passages`` passages: its bytes per passage × ``passages``, plus what it stores once (a
    ``pq`` index's codebooks, ``codebook_bytes``)."""
    if bytes_per_passage < 0 or codebook_bytes < 0 or passages < 1:
        raise ValueError(f"sizes must be >= 0 and passages >= 1, got {bytes_per_passage}, {codebook_bytes}, {passages}")
    return bytes_per_passage * passages + codebook_bytes


def _rows(result: Mapping[str, Any], counts: Sequence[int], labels: Mapping[str, str]) -> list[dict[str, Any]]:
    """One committed file's rows: each model's latencies in each state it was timed in (a cold row with its cold /
    warm ratios)."""
    rows = []
    for entry in result["models"]:
        for state in (state for state in STATES if state in entry):
            row = {
                "device": result["device"], "date": result["environment"]["date"][:10],
                "precision": result["clock"]["precision"], "model": labels.get(entry["name"], entry["name"]),
                "index": entry["dtype"], "passages": entry["passages"], "state": state,
            }  # fmt: skip
            for count in counts:
                row[f"ms for {count:,}"] = entry[state].get(f"ms_{count}", math.nan)
                row[f"cold / warm for {count:,}"] = entry[state].get(f"over_warm_{count}", math.nan)
            row[PROJECTED] = entry["projected_msmarco_bytes"] / GIB
            rows.append(row)
    return rows


def committed_cold_reads(
    folder: Path, counts: Sequence[int] = (100, 1000), labels: Mapping[str, str] | None = None
) -> pd.DataFrame:
    """Every result committed under ``folder`` (``benchmarks/results/cold/*.json``) as one frame: per file and model,
    a row per state of :data:`STATES` it timed — the file's device, date and clock's precision, the model (``labels``
    maps a name to its label), its index's dtype, the passages it held, the state, the median latency at each of
    ``counts`` ("ms for <count>"; NaN where the file did not time that count), on a cold row the cold / warm ratio at
    each count, and the index's size projected to MS MARCO in GiB. Empty, with those columns, when none is committed."""
    rows = []
    for path in sorted(folder.glob("*.json")):
        rows += _rows(json.loads(path.read_text()), counts, labels or {})
    latencies = [f"{kind} for {count:,}" for kind in ("ms", "cold / warm") for count in counts]
    return pd.DataFrame(rows, columns=[*COLUMNS, *latencies, PROJECTED])


__all__ = [
    "COLBERTV2_MSMARCO", "COLUMNS", "GIB", "MSMARCO_PASSAGES", "PROJECTED", "STATES", "committed_cold_reads",
    "projected_bytes",
]  # fmt: skip
