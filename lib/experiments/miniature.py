"""``python -m lib.experiments.miniature``: the paper-shaped miniature of the MS MARCO export and its teacher scores.

:mod:`lib.data.miniature` builds and writes the miniature's data from the book's real data, in the export's
layout (:mod:`lib.data.msmarco`); the ``paper`` path also reads dev-small's BM25 candidates and a teacher's
scores of the training triples, which the data stage cannot compute (it imports no retriever and no model).
This module composes them: it writes the data, then ``runs/dev-small__bm25.trec``, BM25's top ``depth``
(:func:`lib.first_stage.lucene.retrieve`) over the miniature's ``collection.tsv``, indexed in a temporary
folder, written unscored and shuffled as the export's official top-1000
(:func:`lib.data.miniature.unscored`), then :data:`TEACHER_FILE`, the scores of every triple of
``triples.train.tsv`` in the format of Hofstätter et al. 2020's published teacher files
(:func:`lib.data.readers.read_teacher_scores`),

    ``pos_score<TAB>neg_score<TAB>qid<TAB>pos_pid<TAB>neg_pid``

by the book's teacher, the zero-shot MiniLM bi-encoder (:mod:`lib.experiments.distillation_set`): the cosine
of the query's and the passage's vectors, every query and passage encoded once
(:func:`lib.reranking.dense.encode`), on the CPU in float32 (exact, deterministic; :mod:`lib.core.device`).
The file's hash joins the manifest, which says ``"miniature": true``. Nothing is cached.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lib.core import paths
from lib.core.atomic import atomic_write
from lib.core.profiles import MINIATURE_TEACHER
from lib.data import read_queries
from lib.data.miniature import MARK, build_miniature, unscored, write_miniature
from lib.data.msmarco import write_manifest, write_run
from lib.first_stage import lucene
from lib.models.bi_encoder import BiEncoder
from lib.representations.bert import load_tokenizer
from lib.representations.pretrained import minilm_folder
from lib.representations.text import DOC_MAX_LENGTH, QUERY_MAX_LENGTH
from lib.reranking.dense import dense_scores, encode

#: The miniature's teacher file, named after the published ones (``<teacher>_msmarcopassage_train_scores_ids.tsv``);
#: the ``paper-mini`` profile's ``teacher_scores``.
TEACHER_FILE = MINIATURE_TEACHER


def teacher_scores(
    model: BiEncoder,
    tokenizer: Any,
    queries: Mapping[str, str],
    passages: Mapping[str, str],
    triples: Sequence[tuple[str, str, str]],
) -> list[tuple[float, float]]:
    """The bi-encoder's ``(positive, negative)`` cosine of each ``(qid, pos_pid, neg_pid)`` of ``triples``.

    Queries are cut at the book's 30 word pieces, passages at 200 (:mod:`lib.representations.text`).
    """
    candidates: dict[str, dict[str, float]] = {}
    for qid, pos, neg in triples:
        candidates.setdefault(qid, {}).update({pos: 0.0, neg: 0.0})
    pids = sorted({pid for chosen in candidates.values() for pid in chosen})
    encoded_queries = encode(model, tokenizer, queries, sorted(candidates), QUERY_MAX_LENGTH)
    encoded_passages = encode(model, tokenizer, passages, pids, DOC_MAX_LENGTH)
    scores = dense_scores(encoded_queries, encoded_passages, candidates)
    return [(scores[qid][pos], scores[qid][neg]) for qid, pos, neg in triples]


def write_teacher_file(
    path: str | os.PathLike, triples: Sequence[tuple[str, str, str]], scores: Sequence[tuple[float, float]]
) -> Path:
    """Write ``pos_score<TAB>neg_score<TAB>qid<TAB>pos_pid<TAB>neg_pid`` per triple, atomically; returns ``path``."""
    if len(triples) != len(scores):
        raise ValueError(f"{path}: {len(triples)} triples but {len(scores)} pairs of scores")
    path = Path(path)
    with atomic_write(path) as handle:
        for (qid, pos, neg), (pos_score, neg_score) in zip(triples, scores, strict=True):
            handle.write(f"{pos_score!r}\t{neg_score!r}\t{qid}\t{pos}\t{neg}\n")
    return path


def dev_small_run(out: str | os.PathLike, depth: int, seed: int) -> Path:
    """Write ``runs/dev-small__bm25.trec`` into the miniature ``out``: BM25's unscored top ``depth`` (module doc)."""
    out = Path(out)
    with tempfile.TemporaryDirectory(prefix="miniature-index-") as folder:
        index = lucene.build_index(out / "collection.tsv", Path(folder) / "index", progress=False)
        run = lucene.retrieve(index, read_queries(out / "queries.dev-small.tsv"), "bm25", k=depth)
    return write_run(out, "dev-small", unscored(run, "dev-small", depth, seed))[0]


def write(
    out: str | os.PathLike,
    source: str | os.PathLike | None = None,
    passages: int | None = None,
    seed: int = 42,
    depth: int = 100,
    triples_per_query: int = 4,
) -> dict[str, Any]:
    """Write the miniature (:func:`lib.data.miniature.build_miniature`'s parameters) and its teacher file into ``out``.

    ``depth`` cuts dev-small's BM25 run too. Returns the manifest: every file's sha256 and ``"miniature": true``.
    """
    miniature = build_miniature(source, passages, seed, depth, triples_per_query)
    write_miniature(miniature, out)
    run = dev_small_run(out, depth, seed)
    teacher = BiEncoder(minilm_folder())
    scores = teacher_scores(
        teacher, load_tokenizer(minilm_folder()), miniature.queries["train"], miniature.passages, miniature.triples
    )
    written = write_teacher_file(Path(out) / TEACHER_FILE, miniature.triples, scores)
    return write_manifest(Path(out), [run, written], MARK)


def _at_least_one(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {number}")
    return number


def main(argv: list[str] | None = None) -> None:
    """``python -m lib.experiments.miniature``: a paper-shaped miniature of the MS MARCO export from real data."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument(
        "--out", default=None, help="the folder to write (default: the paper-mini profile's, data/msmarco-mini)"
    )
    parser.add_argument("--source", default=None, help="the converted book data (default: data/converted)")
    parser.add_argument(
        "--passages", type=_at_least_one, default=None, help="collection.tsv's size (default: the passages needed)"
    )
    parser.add_argument("--seed", type=int, default=42, help="seeds the triples, the shuffles and the passages drawn")
    parser.add_argument("--depth", type=_at_least_one, default=100, help="BM25 candidates per query (all runs)")
    parser.add_argument("--triples-per-query", type=_at_least_one, default=4, help="training triples per query")
    args = parser.parse_args(argv)
    args.out = args.out or paths.converted_dir("paper-mini")
    try:
        manifest = write(args.out, args.source, args.passages, args.seed, args.depth, args.triples_per_query)
    except ValueError as error:
        parser.error(str(error))
    print(f"a miniature of {len(manifest) - len(MARK)} files in {args.out}")


if __name__ == "__main__":
    main()
