"""Full MS MARCO passage ranking through ``ir_datasets``, exported in the book's standard formats.

The book's own data is a subset (ARCHITECTURE.md, "The data flow, as files"); the papers train on
the full MS MARCO passage collection (TK paper §4; Hofstätter et al. 2020, §4). :func:`export`
writes the full data, with ``ir_datasets`` fetching and caching the official files, into a folder of
the same formats and names as :mod:`lib.data.convert`, so that :mod:`lib.data.readers` and everything
after them read it unchanged:

=================================  ===========================================================
``collection.tsv``                 ``pid<TAB>text``, all 8,841,823 passages (``msmarco-passage``)
``queries.train.tsv``              ``qid<TAB>text``, the 808,731 training queries
``qrels.train.txt``                TREC qrels ``qid 0 pid grade`` of the training queries
``triples.train.tsv``              ``qid<TAB>pos_pid<TAB>neg_pid``, the official training triples:
                                   ``small`` (default): ``msmarco-passage/train/triples-small``, the
                                   ~39.8 M triples of ``triples.train.small.tsv`` as ids (the triples
                                   of Hofstätter et al.'s teacher scores,
                                   :func:`lib.data.readers.read_teacher_scores`); ``full``: the id
                                   triples ``qidpidtriples.train.full`` (``msmarco-passage/train``)
``queries.dev-small.tsv``          the 6,980 dev-small queries; ``qrels.dev-small.txt`` their qrels
``runs/dev-small__bm25.trec``      their official BM25 top-1000 (part ``dev-small-run``: 0.7 GB more)
``queries.dl19.tsv``, ``dl20``     the judged TREC DL 2019 / 2020 queries (43 / 54), their graded
                                   qrels (``qrels.dl19.txt``, ``qrels.dl20.txt``)
``runs/dl19__bm25.trec``, ``dl20`` the official BM25 top-1000 candidates of the judged queries
``manifest.json``                  the sha256 of every output (merged over calls)
=================================  ===========================================================

Texts are normalised as in :mod:`lib.data.convert` (ftfy, one space for any whitespace), so a
passage of the book subset has the same text here; a text that is empty after normalisation is
left out with a warning (the readers refuse empty texts). Query sets, qrels and runs are sorted
as :mod:`lib.data.convert` sorts them (a judgment given twice is written once, with its last grade);
the collection and the triples keep ``ir_datasets``' order.
Every file is written atomically (:mod:`lib.core.atomic`). A miniature of this export built from the
book's real data (:mod:`lib.data.miniature`, ``python -m lib.experiments.miniature``) is written by the
same writers (:func:`write_rows`, :func:`write_query_set`, :func:`write_run`, :func:`write_manifest`).

**The official top-1000 carries no BM25 scores or ranks**: the MS MARCO organisers shuffled each
query's 1,000 candidates, and ``ir_datasets`` gives every candidate the score 0. The runs keep
that: score ``0.0`` for every candidate, rank = position in the file. Re-ranking all 1,000 (the
paper's setting) does not depend on the order, but a cut to a smaller depth needs a scored BM25
run (e.g. one retrieved with :mod:`lib.first_stage.lucene` over ``collection.tsv``).

**Where ir_datasets keeps its files**: ``IR_DATASETS_HOME`` (default ``~/.ir_datasets``), read
once when ``ir_datasets`` is first imported; :func:`export`'s ``home`` sets it before that import.
Downloads are MD5-checked by ``ir_datasets`` while they stream. A file placed in
``IR_DATASETS_HOME/msmarco-passage/`` by hand at the path ``ir_datasets`` caches it under (e.g.
``collection.tsv``, ``train/queries.tsv``, ``trec-dl-2019/qrels``) is used as it is, without
any check, and the collection needs ``irds_version.txt`` containing ``v2`` beside it (else
``ir_datasets`` deletes it as an old version). The size: about 1 GB of collection and queries
archive, 7.9 GB of ``triples.train.small`` (``small``) or 2.6 GB (``full``), 3 GB of exported
collection.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import IO, Any

from lib.core import paths
from lib.core.atomic import atomic_write, write_json
from lib.data.convert import normalise_text
from lib.data.registry import sha256_of

#: The parts :func:`export` can write, in the order it writes them.
PARTS: tuple[str, ...] = ("collection", "train", "triples", "dev-small", "dev-small-run", "dl19", "dl20")

#: The book's query-set name -> the ir_datasets dataset of its queries, qrels and (for TREC DL) runs.
QUERY_SETS: dict[str, str] = {
    "train": "msmarco-passage/train",
    "dev-small": "msmarco-passage/dev/small",
    "dl19": "msmarco-passage/trec-dl-2019/judged",
    "dl20": "msmarco-passage/trec-dl-2020/judged",
}

#: ``triples=`` -> the ir_datasets dataset whose docpairs are the training triples.
TRIPLES: dict[str, str] = {
    "small": "msmarco-passage/train/triples-small",
    "full": "msmarco-passage/train",
}

#: The name of the official BM25 top-1000 runs (``runs/<set>__bm25.trec``).
RUN_SYSTEM = "bm25"


def default_out() -> Path:
    """The default export folder: the ``paper`` profile's data folder, ``<data>/msmarco`` (``TKBOOK_DATA``).

    The ``paper`` profile's chapters read it (:func:`lib.core.paths.converted_dir`).
    """
    return paths.converted_dir("paper")


def load_ir_datasets(home: str | os.PathLike | None = None) -> ModuleType:
    """Import ``ir_datasets`` with its files under ``home`` (``IR_DATASETS_HOME``; ``None``: as set).

    ``ir_datasets`` reads ``IR_DATASETS_HOME`` once, at import: when it is imported already with
    another home, that is a ``RuntimeError`` (start a new process with the variable set).
    """
    if home is not None:
        wanted = Path(home).expanduser().resolve()
        if "ir_datasets" in sys.modules:
            current = os.environ.get("IR_DATASETS_HOME")
            if current is None or Path(current).expanduser().resolve() != wanted:
                raise RuntimeError(
                    f"ir_datasets is imported already with IR_DATASETS_HOME={current!r}, not {str(wanted)!r}: "
                    "set IR_DATASETS_HOME before the first import (e.g. in a new process)"
                )
        os.environ["IR_DATASETS_HOME"] = str(wanted)
    import ir_datasets

    return ir_datasets


def query_key(qid: str) -> tuple[int, str]:
    """The order of query and passage ids in the written files: numeric for integer ids, others first, lexically."""
    return (int(qid), "") if qid.isdigit() else (-1, qid)


class _Texts:
    """Normalised ``(id, text)`` rows; empty texts are counted and left out."""

    def __init__(self, what: str) -> None:
        self.what, self.skipped = what, []

    def rows(self, items: Iterable[tuple[str, str]]) -> Iterable[tuple[str, str]]:
        for key, text in items:
            clean = normalise_text(text)
            if clean:
                yield key, clean
            else:
                self.skipped.append(key)

    def warn(self) -> None:
        if self.skipped:
            warnings.warn(
                f"{len(self.skipped)} {self.what} with an empty text left out (ids {self.skipped[:5]})", stacklevel=3
            )


def write_rows(handle: IO[str], rows: Iterable[Sequence[str]]) -> None:
    """Write ``rows`` as tab-separated lines (``collection.tsv``, ``queries.<set>.tsv``, ``triples.train.tsv``)."""
    for row in rows:
        handle.write("\t".join(row) + "\n")


def _export_collection(irds: ModuleType, out: Path) -> list[Path]:
    texts = _Texts("passages")
    target = out / "collection.tsv"
    with atomic_write(target) as handle:
        docs = ((doc.doc_id, doc.text) for doc in irds.load("msmarco-passage").docs_iter())
        write_rows(handle, texts.rows(docs))
    texts.warn()
    return [target]


def write_query_set(
    out: Path, name: str, queries: Iterable[tuple[str, str]], qrels: Mapping[tuple[str, str], int]
) -> list[Path]:
    """Write ``queries.<name>.tsv`` and ``qrels.<name>.txt`` (``qid 0 pid grade``) in :func:`query_key` order.

    ``queries`` are ``(qid, text)`` rows; ``qrels`` maps ``(qid, pid)`` to its grade (a judgment given
    twice is one key: its last grade). Returns the two paths.
    """
    query_file, qrels_file = out / f"queries.{name}.tsv", out / f"qrels.{name}.txt"
    with atomic_write(query_file) as handle:
        write_rows(handle, sorted(queries, key=lambda row: query_key(row[0])))
    with atomic_write(qrels_file) as handle:
        for (qid, pid), grade in sorted(qrels.items(), key=lambda item: (query_key(item[0][0]), query_key(item[0][1]))):
            handle.write(f"{qid} 0 {pid} {grade}\n")
    return [query_file, qrels_file]


def write_run(out: Path, name: str, candidates: Mapping[str, Sequence[tuple[str, float]]]) -> list[Path]:
    """Write ``runs/<name>__bm25.trec``: each query's ``(pid, score)`` candidates in the given order, rank = position.

    Queries in :func:`query_key` order. Returns the path (in a list, as the other writers).
    """
    target = out / "runs" / f"{name}__{RUN_SYSTEM}.trec"
    with atomic_write(target) as handle:
        for qid in sorted(candidates, key=query_key):
            for rank, (pid, score) in enumerate(candidates[qid], start=1):
                handle.write(f"{qid} Q0 {pid} {rank} {score!r} {RUN_SYSTEM}\n")
    return [target]


def write_manifest(out: Path, written: Iterable[Path], marks: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Merge the sha256 of every ``written`` file (by its path relative to ``out``) into ``out/manifest.json``.

    Entries of earlier calls are kept; ``marks`` (e.g. ``{"miniature": True}``) are added as they are.
    Returns the manifest, written atomically with its keys sorted.
    """
    manifest_path = out / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.is_file() else {}
    manifest.update({str(path.relative_to(out)): sha256_of(path) for path in written})
    manifest.update(marks or {})
    write_json(manifest_path, dict(sorted(manifest.items())))
    return manifest


def _export_queries_and_qrels(irds: ModuleType, out: Path, name: str) -> list[Path]:
    dataset = irds.load(QUERY_SETS[name])
    texts = _Texts(f"{name} queries")
    queries = list(texts.rows((q.query_id, q.text) for q in dataset.queries_iter()))
    texts.warn()
    qrels = {(qrel.query_id, qrel.doc_id): int(qrel.relevance) for qrel in dataset.qrels_iter()}
    return write_query_set(out, name, queries, qrels)


def _export_run(irds: ModuleType, out: Path, name: str) -> list[Path]:
    candidates: dict[str, list[tuple[str, float]]] = {}
    for hit in irds.load(QUERY_SETS[name]).scoreddocs_iter():
        candidates.setdefault(hit.query_id, []).append((hit.doc_id, float(hit.score)))
    return write_run(out, name, candidates)


def _export_triples(irds: ModuleType, out: Path, triples: str) -> list[Path]:
    target = out / "triples.train.tsv"
    with atomic_write(target) as handle:
        pairs = irds.load(TRIPLES[triples]).docpairs_iter()
        write_rows(handle, ((pair.query_id, pair.doc_id_a, pair.doc_id_b) for pair in pairs))
    return [target]


def export(
    out: str | os.PathLike | None = None,
    parts: Sequence[str] = PARTS,
    triples: str = "small",
    home: str | os.PathLike | None = None,
) -> dict[str, str]:
    """Write the ``parts`` of full MS MARCO (module doc) into ``out``; returns the updated manifest.

    Args:
        out: the target folder (default :func:`default_out`); created when missing.
        parts: any of :data:`PARTS`: ``collection``, ``train`` (queries and qrels), ``triples``,
            ``dev-small`` (queries and qrels), ``dev-small-run`` (its BM25 top-1000), ``dl19``,
            ``dl20`` (queries, qrels and the BM25 top-1000 run).
        triples: ``"small"`` (``triples.train.small`` as ids, the teacher scores' triples) or
            ``"full"`` (``qidpidtriples.train.full``).
        home: ``IR_DATASETS_HOME`` for this process (see :func:`load_ir_datasets`); ``None``: as set.

    ``manifest.json`` in ``out`` maps every file written so far (also by earlier calls) to its sha256.
    """
    unknown = [part for part in parts if part not in PARTS]
    if unknown or not parts:
        raise ValueError(f"parameter 'parts' must name some of {list(PARTS)}, got {list(parts)!r}")
    if triples not in TRIPLES:
        raise ValueError(f"parameter 'triples' must be one of {list(TRIPLES)}, got {triples!r}")
    out = Path(out) if out is not None else default_out()
    out.mkdir(parents=True, exist_ok=True)
    irds = load_ir_datasets(home)
    written: list[Path] = []
    for part in PARTS:
        if part not in parts:
            continue
        if part == "collection":
            written += _export_collection(irds, out)
        elif part == "triples":
            written += _export_triples(irds, out, triples)
        elif part == "dev-small-run":
            written += _export_run(irds, out, "dev-small")
        else:
            written += _export_queries_and_qrels(irds, out, part)
            if part in ("dl19", "dl20"):
                written += _export_run(irds, out, part)
    return write_manifest(out, written)


def main(argv: list[str] | None = None) -> None:
    """``python -m lib.data.msmarco``: export full MS MARCO passage ranking through ir_datasets."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--out", default=None, help=f"target folder (default: {default_out()})")
    parser.add_argument(
        "--subset",
        dest="parts",
        action="append",
        choices=PARTS,
        help="a part to export (repeat for several; default: all)",
    )
    parser.add_argument("--triples", choices=sorted(TRIPLES), default="small", help="which training triples")
    parser.add_argument("--home", default=None, help="IR_DATASETS_HOME (default: the variable or ~/.ir_datasets)")
    args = parser.parse_args(argv)
    manifest = export(args.out, args.parts or PARTS, args.triples, args.home)
    out = Path(args.out) if args.out is not None else default_out()
    print(f"{len(manifest)} files in {out}")


if __name__ == "__main__":
    main()
