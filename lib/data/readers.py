"""Readers for the standard MS MARCO / TREC formats, strict about malformed input.

Every reader names the file and the 1-based line of the first problem in a :class:`DataFormatError`.
Documented tolerances (applied by all readers):

- a UTF-8 byte-order mark at the start of the file is skipped;
- Windows line ends (CRLF) are accepted;
- blank lines are skipped (a file with no data lines at all is an error: ``empty file``).

Everything else is an error: bytes that are not UTF-8, too few or too many columns, a non-integer
relevance grade or rank, a non-numeric or non-finite score (``nan``, ``inf``), an empty query or
passage text (the real book data has none; an empty text would silently score as nothing), and a
duplicated id (a passage or query id twice, a qrels or run pair twice).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator


class DataFormatError(ValueError):
    """A malformed line in a data file; the message starts with ``<file>:<line>:``."""

    def __init__(self, path: str | os.PathLike, line: int | None, message: str) -> None:
        self.path = str(path)
        self.line = line
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}")


def _lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """(line number, line without its end) for every non-blank line; an empty file is an error."""
    seen = False
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1:
                raw = raw.removeprefix(b"\xef\xbb\xbf")
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as error:
                raise DataFormatError(
                    path, number, f"not UTF-8 text (byte {raw[error.start]:#04x} at column {error.start + 1})"
                ) from None
            if not line.strip():
                continue
            seen = True
            yield number, line
    if not seen:
        raise DataFormatError(path, None, "empty file (no data lines)")


def _id_text_pairs(path: str | os.PathLike, what: str) -> dict[str, str]:
    table: dict[str, str] = {}
    for number, line in _lines(path):
        fields = line.split("\t")
        if len(fields) != 2:
            expected = f"expected 2 tab-separated columns ({what}_id, text)"
            raise DataFormatError(path, number, f"{expected}, got {len(fields)}")
        key, text = fields[0].strip(), fields[1]
        if not key:
            raise DataFormatError(path, number, f"empty {what} id")
        if key in table:
            raise DataFormatError(path, number, f"duplicate {what} id {key!r}")
        if not text.strip():
            raise DataFormatError(path, number, f"empty {what} text for id {key!r}")
        table[key] = text
    return table


def read_collection(path: str | os.PathLike) -> dict[str, str]:
    """Read ``collection.tsv`` (``pid<TAB>text``) into ``{pid: text}``."""
    return _id_text_pairs(path, "passage")


def read_queries(path: str | os.PathLike) -> dict[str, str]:
    """Read ``queries.<set>.tsv`` (``qid<TAB>text``) into ``{qid: text}``."""
    return _id_text_pairs(path, "query")


def read_qrels(path: str | os.PathLike) -> dict[str, dict[str, int]]:
    """Read TREC qrels (``qid iter pid grade``, whitespace-separated) into ``{qid: {pid: grade}}``."""
    qrels: dict[str, dict[str, int]] = {}
    for number, line in _lines(path):
        fields = line.split()
        if len(fields) != 4:
            raise DataFormatError(path, number, f"expected 4 columns (qid iter pid grade), got {len(fields)}")
        qid, _iteration, pid, grade = fields
        try:
            value = int(grade)
        except ValueError:
            raise DataFormatError(path, number, f"relevance grade {grade!r} is not an integer") from None
        judged = qrels.setdefault(qid, {})
        if pid in judged:
            raise DataFormatError(path, number, f"duplicate judgment for query {qid!r}, passage {pid!r}")
        judged[pid] = value
    return qrels


def read_run(path: str | os.PathLike) -> dict[str, dict[str, float]]:
    """Read a TREC run (``qid Q0 pid rank score tag``) into ``{qid: {pid: score}}``.

    The scores keep trec_eval's semantics (rank by score, ties by pid); use
    :func:`lib.core.types.ranking_from_run` for the ordered list.
    """
    run: dict[str, dict[str, float]] = {}
    for number, line in _lines(path):
        fields = line.split()
        if len(fields) != 6:
            raise DataFormatError(path, number, f"expected 6 columns (qid Q0 pid rank score tag), got {len(fields)}")
        qid, _q0, pid, rank, score, _tag = fields
        try:
            int(rank)
        except ValueError:
            raise DataFormatError(path, number, f"rank {rank!r} is not an integer") from None
        try:
            value = float(score)
        except ValueError:
            raise DataFormatError(path, number, f"score {score!r} is not a number") from None
        if not math.isfinite(value):
            raise DataFormatError(path, number, f"score {score!r} is not finite")
        ranked = run.setdefault(qid, {})
        if pid in ranked:
            raise DataFormatError(path, number, f"duplicate entry for query {qid!r}, passage {pid!r}")
        ranked[pid] = value
    return run


def read_triples(path: str | os.PathLike) -> list[tuple[str, str, str]]:
    """Read MS MARCO training triples: ``query<TAB>positive<TAB>negative`` texts
    (``triples.train.small.tsv``) or ids (``qidpidtriples.train.full.2.tsv``), as 3-tuples of strings.
    """
    triples: list[tuple[str, str, str]] = []
    for number, line in _lines(path):
        fields = line.split("\t")
        if len(fields) != 3:
            expected = "expected 3 tab-separated columns (query, positive, negative)"
            raise DataFormatError(path, number, f"{expected}, got {len(fields)}")
        if not all(field.strip() for field in fields):
            raise DataFormatError(path, number, "empty column")
        triples.append((fields[0], fields[1], fields[2]))
    return triples


def read_teacher_scores(path: str | os.PathLike) -> tuple[list[tuple[str, str, str]], list[float]]:
    """Read a teacher's scores of training triples: ``(qid, pos_pid, neg_pid)`` triples and their margins.

    The format is that of the teacher files of Hofstätter et al. 2020, *Improving Efficient Neural
    Ranking Models with Cross-Architecture Knowledge Distillation* (the Margin-MSE paper,
    :mod:`lib.training.distillation`): one line per triple of MS MARCO's ``triples.train.small``,

        ``pos_score<TAB>neg_score<TAB>qid<TAB>pos_pid<TAB>neg_pid``

    the BERT-cat teacher's scores of the positive and the negative passage. The paper's authors
    publish them on Zenodo, record 4068216:
    ``bert_cat_ensemble_msmarcopassage_train_scores_ids.tsv`` (T2, the mean of the BERT-Base,
    BERT-Large and ALBERT-Large BERT-cat scores; in ``lib/data/paper_registry.txt`` with the MD5
    ``4d99696386f96a7f1631076bcc53ac3c`` published with it, fetched and checked by
    :func:`lib.data.registry.fetch_paper`) and
    ``bertbase_cat_msmarcopassage_train_scores_ids.tsv`` (T1, BERT-Base alone). The ids are those of
    :func:`lib.data.msmarco.export`'s ``collection.tsv`` and ``queries.train.tsv``.

    Returns the triples in file order and the margins ``pos_score − neg_score`` (the Margin-MSE
    targets), ready for ``lib.training.pairwise.train(pairs=triples, margins=margins)``. Besides the
    module's tolerances and errors: not 5 tab-separated columns, an empty id, a score that is not a
    number or not finite (``nan``, ``inf``) are errors naming file and line. A triple may occur twice.
    """
    triples: list[tuple[str, str, str]] = []
    margins: list[float] = []
    for qid, positive, negative, positive_score, negative_score in iter_teacher_scores(path):
        triples.append((qid, positive, negative))
        margins.append(positive_score - negative_score)
    return triples, margins


def iter_teacher_scores(path: str | os.PathLike) -> Iterator[tuple[str, str, str, float, float]]:
    """Each line of a teacher-scores file (:func:`read_teacher_scores`, the same checks) as
    ``(qid, pos_pid, neg_pid, pos_score, neg_score)``, in file order, one at a time."""
    for number, line in _lines(path):
        fields = line.split("\t")
        if len(fields) != 5:
            expected = "expected 5 tab-separated columns (pos_score, neg_score, qid, pos_pid, neg_pid)"
            raise DataFormatError(path, number, f"{expected}, got {len(fields)}")
        scores = []
        for name, value in zip(("pos_score", "neg_score"), fields[:2], strict=True):
            try:
                score = float(value)
            except ValueError:
                raise DataFormatError(path, number, f"{name} {value!r} is not a number") from None
            if not math.isfinite(score):
                raise DataFormatError(path, number, f"{name} {value!r} is not finite")
            scores.append(score)
        ids = tuple(field.strip() for field in fields[2:])
        if not all(ids):
            raise DataFormatError(path, number, "empty id (qid, pos_pid or neg_pid)")
        yield ids[0], ids[1], ids[2], scores[0], scores[1]
