"""The TIME test collection: 423 Time magazine articles of 1963, 83 queries, 324 binary judgments (Cornell SMART).

The book's long documents (chapter 9; lecture 8, slides 13 and 34–40): real articles, mean 624 words, 198 of them
longer than 512 — where BERT-cat's first 512 pieces (FirstP) and its best window (MaxP) differ. It is much older and
smaller than TREC DL, so the book evaluates models trained elsewhere on it (zero-shot) and never trains or tunes on
it. The files are the registry's ``fabianobie/luppar/data/time/`` (``make data`` fetches them into the raw folder):

- ``TIME.ALL``: the documents, each starting with a header line ``*TEXT NNN MM/DD/YY PAGE NNN``, the text in upper
  case, every text line followed by a blank line;
- ``TIME.QUE``: the queries, each ``*FIND N`` followed by its text;
- ``TIME.REL.ALL``: the judgments, one line per query: ``qid docno docno …`` (``TIME.REL`` is an older subset).

**Document numbers.** The judgments number documents by their *position in the original 425-document file*, not by
the ``*TEXT`` number, and this copy lacks two documents between positions 371 and 377, where no judgment points:
position ``p ≤ 370`` is the ``p``-th ``*TEXT`` entry of ``TIME.ALL`` and ``p ≥ 378`` is entry ``p − 2``
(:func:`position_of`). Entries 371–375 keep their entry number as their position — their true positions lie in
371–377, no judgment points there, and no other document has those numbers, so the choice changes no evaluation.
The book names documents by this position and queries by their ``*FIND`` number. (Read as ``*TEXT`` ids, the
judgments would match only the 253 of ``TIME.REL``; with the positions, most judged documents are near the top of a
plain BM25 ranking of their query — the check of the shared data's ``SOURCES.md``, repeated in the tests.)

Every reader raises :class:`lib.data.readers.DataFormatError` naming the file and line of the first problem.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from lib.core import paths
from lib.core.types import Qrels
from lib.data.readers import DataFormatError

#: The collection's folder under the raw data folder (its registry names).
FOLDER = "fabianobie/luppar/data/time"
#: The first entry whose position is its entry number + 2 (position 378 and on); entries before it keep theirs.
SHIFTED_FROM = 376

#: A document header; the date is taken as written (one header of the real file reads ``08/30 63``).
_TEXT = re.compile(r"^\*TEXT\s+(\d+)\s+(\d\d/\d\d[/ ]\d\d)\s+PAGE\s+(\d+)\s*$")
_FIND = re.compile(r"^\*FIND\s+(\d+)\s*$")


@dataclass(frozen=True)
class TimeCollection:
    """TIME as the book reads it: ``documents`` (position → text), each document's ``*TEXT`` ``headers`` (number,
    date, page), ``queries`` (``*FIND`` number → text) and ``qrels`` (binary: grade 1)."""

    documents: dict[str, str]
    headers: dict[str, tuple[str, str, str]]
    queries: dict[str, str]
    qrels: Qrels


def position_of(entry: int) -> int:
    """The judgments' document number of the ``entry``-th ``*TEXT`` entry of ``TIME.ALL`` (1-based; module doc)."""
    if entry < 1:
        raise ValueError(f"parameter 'entry' must be >= 1, got {entry}")
    return entry + 2 if entry >= SHIFTED_FROM else entry


def _text(lines: list[str]) -> str:
    return " ".join(" ".join(lines).split())


def _blocks(path: str | os.PathLike, header: re.Pattern, what: str) -> list[tuple[int, re.Match, str]]:
    """``(line of the header, the header's match, the text after it)`` for every block of ``path``; a text line
    before the first header or a block without text is an error."""
    blocks: list[tuple[int, re.Match, list[str]]] = []
    with open(path, encoding="ascii", errors="strict") as handle:
        try:
            lines = handle.read().splitlines()
        except UnicodeDecodeError as error:
            raise DataFormatError(path, None, f"not ASCII text (byte at offset {error.start})") from None
    for number, line in enumerate(lines, start=1):
        if line.startswith("*"):
            match = header.match(line)
            if match is None:
                raise DataFormatError(path, number, f"malformed {what} header {line.strip()!r}")
            blocks.append((number, match, []))
        elif line.strip():
            if not blocks:
                raise DataFormatError(path, number, f"text before the first {what} header")
            blocks[-1][2].append(line)
    if not blocks:
        raise DataFormatError(path, None, f"no {what} header: not a SMART {what} file")
    for number, match, text in blocks:
        if not text:
            raise DataFormatError(path, number, f"{what} {match.group(1)} has no text")
    return [(number, match, _text(text)) for number, match, text in blocks]


def read_documents(path: str | os.PathLike) -> tuple[dict[str, str], dict[str, tuple[str, str, str]]]:
    """``TIME.ALL``: the documents by position (:func:`position_of`) and their headers ``(*TEXT number, date,
    page)``; a ``*TEXT`` number seen twice is an error."""
    documents: dict[str, str] = {}
    headers: dict[str, tuple[str, str, str]] = {}
    seen: set[str] = set()
    for entry, (number, match, text) in enumerate(_blocks(path, _TEXT, "*TEXT"), start=1):
        if match.group(1) in seen:
            raise DataFormatError(path, number, f"duplicate *TEXT number {match.group(1)}")
        seen.add(match.group(1))
        position = str(position_of(entry))
        documents[position], headers[position] = text, (match.group(1), match.group(2), match.group(3))
    return documents, headers


def read_queries(path: str | os.PathLike) -> dict[str, str]:
    """``TIME.QUE``: the queries by ``*FIND`` number (without leading zeros); a number seen twice is an error."""
    queries: dict[str, str] = {}
    for number, match, text in _blocks(path, _FIND, "*FIND"):
        qid = str(int(match.group(1)))
        if qid in queries:
            raise DataFormatError(path, number, f"duplicate query *FIND {qid}")
        queries[qid] = text
    return queries


def read_judgments(path: str | os.PathLike, documents: set[str], queries: set[str]) -> Qrels:
    """``TIME.REL.ALL``: binary judgments ``{qid: {position: 1}}``. A line whose query or document is not in
    ``queries`` / ``documents``, a non-integer field, a query judged on two lines and a document named twice on
    a line are errors."""
    qrels: Qrels = {}
    with open(path, encoding="ascii") as handle:
        for number, line in enumerate(handle, start=1):
            fields = line.split()
            if not fields:
                continue
            if not all(field.isdigit() for field in fields) or len(fields) < 2:
                raise DataFormatError(path, number, f"expected 'qid docno docno …' of integers, got {line.strip()!r}")
            qid, docs = str(int(fields[0])), [str(int(field)) for field in fields[1:]]
            if qid not in queries:
                raise DataFormatError(path, number, f"judgments of query {qid}, which TIME.QUE does not have")
            if qid in qrels or len(set(docs)) != len(docs):
                raise DataFormatError(path, number, f"query {qid} judged twice, or a document named twice on a line")
            unknown = [doc for doc in docs if doc not in documents]
            if unknown:
                raise DataFormatError(path, number, f"query {qid} judges documents {unknown}, which TIME.ALL lacks")
            qrels[qid] = dict.fromkeys(docs, 1)
    if not qrels:
        raise DataFormatError(path, None, "empty file (no judgments)")
    return qrels


def load_time(folder: str | os.PathLike | None = None) -> TimeCollection:
    """The TIME collection from ``folder`` (default: the raw data folder's :data:`FOLDER`, which ``make data``
    fills); a missing folder names that command."""
    folder = Path(folder) if folder is not None else paths.raw_dir() / FOLDER
    if not (folder / "TIME.ALL").is_file():
        raise FileNotFoundError(f"{folder / 'TIME.ALL'}: the TIME collection is not fetched (`make data` fetches it)")
    documents, headers = read_documents(folder / "TIME.ALL")
    queries = read_queries(folder / "TIME.QUE")
    qrels = read_judgments(folder / "TIME.REL.ALL", set(documents), set(queries))
    return TimeCollection(documents, headers, queries, qrels)


__all__ = [
    "FOLDER", "SHIFTED_FROM", "TimeCollection", "load_time", "position_of", "read_documents",
    "read_judgments", "read_queries",
]  # fmt: skip
