"""Stage 1: the data layer: registry and fetch, conversion, readers, splits, and loaders.

The loaders below read the converted standard files (``make data`` produces them) and are what
chapters call; a missing file is an error that says how to produce it.
"""

from __future__ import annotations

from pathlib import Path

from lib.core import paths
from lib.data.readers import (
    DataFormatError,
    read_collection,
    read_qrels,
    read_queries,
    read_run,
    read_teacher_scores,
    read_triples,
)

__all__ = [
    "DataFormatError",
    "book_texts",
    "converted_file",
    "load_collection",
    "load_qrels",
    "load_queries",
    "load_run",
    "read_collection",
    "read_qrels",
    "read_queries",
    "read_run",
    "read_teacher_scores",
    "read_triples",
]


def converted_file(name: str) -> Path:
    """The path of a converted file; a missing one is a ``FileNotFoundError`` that says what to run."""
    path = paths.converted_dir() / name
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: no such file. Run `make data` (or `python -m lib.data.convert`) to fetch and convert the data."
        )
    return path


def load_collection(corpus: str = "v1") -> dict[str, str]:
    """``{pid: text}`` of the v1 (DL19/DL20) or v2 (DL21) book corpus."""
    if corpus not in ("v1", "v2"):
        raise ValueError(f"parameter 'corpus' must be 'v1' or 'v2', got {corpus!r}")
    return read_collection(converted_file("collection.tsv" if corpus == "v1" else "collection.v2.tsv"))


def load_queries(query_set: str) -> dict[str, str]:
    """``{qid: text}`` of ``dl19``, ``dl20``, ``dl21`` (judged queries) or ``dev-small``."""
    return read_queries(converted_file(f"queries.{query_set}.tsv"))


def load_qrels(query_set: str) -> dict[str, dict[str, int]]:
    """``{qid: {pid: grade}}`` of a query set, every official judgment."""
    return read_qrels(converted_file(f"qrels.{query_set}.txt"))


def load_run(query_set: str, system: str) -> dict[str, dict[str, float]]:
    """A shipped first-stage run, e.g. ``load_run("dl19", "bm25")``, as ``{qid: {pid: score}}``."""
    return read_run(converted_file(f"runs/{query_set}__{system}.trec"))


def book_texts() -> dict[str, str]:
    """Every book passage, v1 and v2 together (their ids never collide: v2 ids look like ``msmarco_passage_…``)."""
    return {**load_collection("v1"), **load_collection("v2")}
