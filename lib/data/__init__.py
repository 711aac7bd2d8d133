"""Stage 1: the data layer: registry and fetch, conversion, readers, splits, and loaders.

The loaders below read the standard files of the data folder the process reads
(:func:`lib.core.paths.converted_dir`: the book subset that ``make data`` converts, or, under the
``paper`` profile, full MS MARCO exported by ``python -m lib.data.msmarco``) and are what chapters
call; a missing folder or file is an error that names it and the command that writes it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from lib.core import paths
from lib.core.types import Run
from lib.data.readers import (
    DataFormatError,
    iter_teacher_scores,
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
    "corpus_tag",
    "fill_command",
    "held_query_sets",
    "held_runs",
    "holds",
    "is_unscored",
    "load_collection",
    "load_qrels",
    "load_queries",
    "load_run",
    "missing_sentence",
    "read_collection",
    "read_qrels",
    "read_queries",
    "read_run",
    "iter_teacher_scores",
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


def corpus_tag() -> str:
    """How a system name tags a retrieval over the data folder's ``collection.tsv`` (``bm25-<tag>``).

    ``bookcorpus`` for the book subset's pooled corpus, else the folder's name (``msmarco``: full MS MARCO).
    """
    folder = paths.converted_dir()
    return "bookcorpus" if _is_book_folder(folder) else folder.name


def holds(*names: str) -> bool:
    """Whether the data folder this process reads has every file of ``names`` (e.g. ``collection.v2.tsv``).

    What a chapter asks before a part that only some folders support: the book subset has DL21, the
    v2 passages and every shipped run; full MS MARCO's export has none of them (module doc).
    """
    folder = paths.converted_dir()
    return all((folder / name).is_file() for name in names)


def held_query_sets(query_sets: Iterable[str]) -> tuple[str, ...]:
    """The sets of ``query_sets`` whose queries and qrels the data folder has, in the given order."""
    return tuple(name for name in query_sets if holds(f"queries.{name}.tsv", f"qrels.{name}.txt"))


def held_runs(query_set: str, systems: Iterable[str]) -> tuple[str, ...]:
    """The systems of ``systems`` whose run of ``query_set`` the data folder has, in the given order."""
    return tuple(system for system in systems if holds(f"runs/{query_set}__{system}.trec"))


def is_unscored(run: Run) -> bool:
    """Whether every candidate of ``run`` has the score 0, as in the MS MARCO export's official top-1000.

    Such a run's order is no ranking (the organisers shuffled the candidates, :mod:`lib.data.msmarco`):
    measures at a cut-off and a cut to a smaller depth mean nothing on it. An empty run is unscored.
    """
    return all(score == 0 for candidates in run.values() for score in candidates.values())


def missing_sentence(what: str, names: Iterable[str]) -> str:
    """The sentence a chapter shows instead of a part whose files (``names``) the data folder lacks."""
    folder = paths.converted_dir()
    book = _is_book_folder(folder)
    why = f"run {fill_command(folder)} to write them" if book else "full MS MARCO's export writes none"
    return f"The data folder {paths.shown(folder)} has no {what} ({', '.join(names)}): {why}, so this part is left out."
