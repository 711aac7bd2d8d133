"""Stage 1: the data layer: registry and fetch, conversion, readers, splits, and loaders.

The loaders below read the standard files of the data folder the process reads
(:func:`lib.core.paths.converted_dir`: the book subset that ``make data`` converts, or, under the
``paper`` profile, full MS MARCO exported by ``python -m lib.data.msmarco``) and are what chapters
call; a missing folder or file is an error that names it and the command that writes it.
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
    "fill_command",
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


#: The v2 passages of DL21: the book subset has them, full MS MARCO's export does not (MS MARCO v1 only).
V2_COLLECTION = "collection.v2.tsv"


def _is_book_folder(folder: Path) -> bool:
    return folder == paths.converted_dir("book")


def fill_command(folder: Path) -> str:
    """The command that writes ``folder``'s files: ``make data`` for the book subset, else the MS MARCO export."""
    if _is_book_folder(folder):
        return "`make data` (or `python -m lib.data.convert`)"
    return f"`python -m lib.data.msmarco --out {folder}`"


def converted_file(name: str) -> Path:
    """The path of a file of the data folder; a missing one is a ``FileNotFoundError`` that says what to run.

    In the book subset's folder: the command that converts the data. In another folder (the ``paper``
    profile's full MS MARCO export), a missing folder names the folder and the export command; a
    missing file names the export command too, and says when the export writes no such file at all.
    """
    folder = paths.converted_dir()
    path = folder / name
    if path.is_file():
        return path
    if _is_book_folder(folder):
        raise FileNotFoundError(f"{path}: no such file. Run {fill_command(folder)} to fetch and convert the data.")
    if not folder.is_dir():
        raise FileNotFoundError(
            f"{folder}: no such folder: the full MS MARCO export this process reads "
            f"({paths.CONVERTED_VARIABLE}={folder.name}, the paper profile's data) is missing. "
            f"Run {fill_command(folder)} to export it."
        )
    raise FileNotFoundError(
        f"{path}: no such file in {folder}. Run {fill_command(folder)} (`--subset PART` for one part) to export "
        "it; the export writes full MS MARCO v1's collection, train, dev-small, DL19 and DL20 files and their "
        "official BM25 runs, never the book subset's DL21, v2 passages or other shipped runs."
    )


def load_collection(corpus: str = "v1") -> dict[str, str]:
    """``{pid: text}`` of the v1 (DL19/DL20) or v2 (DL21) corpus of the data folder."""
    if corpus not in ("v1", "v2"):
        raise ValueError(f"parameter 'corpus' must be 'v1' or 'v2', got {corpus!r}")
    return read_collection(converted_file("collection.tsv" if corpus == "v1" else V2_COLLECTION))


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
    """Every passage of the data folder, v1 and v2 together (their ids never collide: v2 ids look like
    ``msmarco_passage_…``).

    Full MS MARCO's export (the ``paper`` profile) has no v2 corpus: its passages are ``collection.tsv``
    alone. The book subset's folder always has both (a missing v2 file there is an error).
    """
    texts = load_collection("v1")
    folder = paths.converted_dir()
    if _is_book_folder(folder) or (folder / V2_COLLECTION).is_file():
        texts.update(load_collection("v2"))
    return texts
