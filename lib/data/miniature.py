"""A paper-shaped miniature of the MS MARCO export, built from the book's real data only (issue 43).

The ``paper`` profile reads full MS MARCO in :mod:`lib.data.msmarco`'s layout, tens of gigabytes. The
miniature is a folder in exactly that layout and those formats, written by that module's writers, small
enough to run the ``paper`` code path end to end in minutes. Every passage and query is a real one, taken
from the converted book data (:mod:`lib.data.convert`):

=================================  ===========================================================
``collection.tsv``                 every passage the files below name, plus ``passages`` − that many
                                   other book passages drawn at random (seeded); v1 ids as they are
``queries.train.tsv``              DL21's judged queries that have a passage judged relevant (≥ 2,
                                   TREC DL's binary threshold) with text and are no DL19/DL20 query
``qrels.train.txt``                those relevant passages, grade 1 (MS MARCO's binary judgments)
``triples.train.tsv``              ``qid<TAB>pos_pid<TAB>neg_pid``: up to ``triples_per_query`` per
                                   query, a relevant passage against one of DL21's BM25 top-100 not
                                   judged relevant (seeded), as ``triples.train.small`` pairs a judged
                                   passage with a BM25 candidate
``pids.v2.tsv``                    ``pid<TAB>v2 id``: DL21's passages are MS MARCO **v2** passages; the
                                   miniature gives them integer ids from :data:`V2_ID_BASE` on, above
                                   every v1 id, so its pids are integers as the export's are
``queries.dev-small.tsv``          the MS MARCO dev-small queries whose judged passage the book corpus
                                   holds, none a DL19/DL20 or training query; ``qrels.dev-small.txt``
                                   their judgments of passages with text
``queries.dl19.tsv``, ``dl20``     the judged TREC DL 2019 / 2020 queries, their graded qrels of the
                                   passages with text (``qrels.dl19.txt``, ``qrels.dl20.txt``)
``runs/dl19__bm25.trec``, ``dl20`` BM25's top ``depth`` of each query, **unscored** as the export's
                                   official top-1000: every score ``0.0``, each query's candidates
                                   shuffled (seeded), rank = position
``manifest.json``                  the sha256 of every file, and ``"miniature": true``
=================================  ===========================================================

No official dev-small top-1000 exists in the book data, and BM25 is a later stage's
(:mod:`lib.first_stage`), as are the teacher's scores of the triples (:mod:`lib.models`):
``python -m lib.experiments.miniature`` writes this folder, then ``runs/dev-small__bm25.trec`` — BM25's top
``depth`` over the miniature's ``collection.tsv``, unscored as the official one (:func:`unscored`) — and the
teacher file.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lib.core import paths
from lib.core.atomic import atomic_write
from lib.core.types import ranking_from_run
from lib.data.msmarco import query_key, write_manifest, write_query_set, write_rows, write_run
from lib.data.readers import read_collection, read_qrels, read_queries, read_run
from lib.data.splits import TEST_SETS, check_disjoint_from_tests, without_test_queries

#: What the miniature's ``manifest.json`` says of it besides its files' hashes.
MARK: dict[str, Any] = {"miniature": True}

#: The first integer id given to a v2 (DL21) passage: above every MS MARCO v1 pid (0 … 8,841,822).
V2_ID_BASE = 10_000_000

#: The file mapping the miniature's ids of v2 passages to their MS MARCO v2 ids.
V2_IDS = "pids.v2.tsv"

#: TREC DL's binary threshold: a passage judged at least this is relevant (``trec_eval -l 2``).
RELEVANT = 2


def is_miniature(folder: str | os.PathLike) -> bool:
    """Whether the data folder ``folder`` is a miniature: its ``manifest.json`` carries :data:`MARK`."""
    manifest = Path(folder) / "manifest.json"
    if not manifest.is_file():
        return False
    return all(json.loads(manifest.read_text(encoding="utf-8")).get(key) == value for key, value in MARK.items())


@dataclass(frozen=True)
class Miniature:
    """The miniature's contents: ``passages`` by pid, each set's ``queries`` and ``qrels`` (``(qid, pid)`` → grade),
    the unscored ``runs`` of the test years, the training ``triples`` and ``v2_ids`` (miniature pid → v2 id)."""

    passages: dict[str, str]
    queries: dict[str, dict[str, str]]
    qrels: dict[str, dict[tuple[str, str], int]]
    runs: dict[str, dict[str, list[tuple[str, float]]]]
    triples: list[tuple[str, str, str]]
    v2_ids: dict[str, str]


def _positive(name: str, value: int | None) -> None:
    if value is not None and value < 1:
        raise ValueError(f"parameter {name!r} must be >= 1, got {value}")


def _train_set(source: Path, tests: Mapping[str, Mapping[str, str]], seed: int, per_query: int) -> dict[str, Any]:
    """DL21's queries, relevant passages and triples, its v2 passages under new integer ids (module doc)."""
    texts = read_collection(source / "collection.v2.tsv")
    qrels = read_qrels(source / "qrels.dl21.txt")
    run = read_run(source / "runs" / "dl21__bm25.trec")
    queries = without_test_queries(read_queries(source / "queries.dl21.tsv"), tests)
    relevant = {
        qid: sorted(pid for pid, grade in qrels.get(qid, {}).items() if grade >= RELEVANT and pid in texts)
        for qid in queries
    }
    chosen = {qid: text for qid, text in queries.items() if relevant[qid]}
    triples = []
    for qid in sorted(chosen, key=query_key):
        negatives = [pid for pid in ranking_from_run(run.get(qid, {})) if pid in texts and pid not in relevant[qid]]
        generator = random.Random(f"miniature-triples:{seed}:{qid}")
        drawn = generator.sample(negatives, min(per_query, len(negatives)))
        triples += [(qid, relevant[qid][i % len(relevant[qid])], neg) for i, neg in enumerate(drawn)]
    used = sorted({pid for pids in relevant.values() for pid in pids} | {neg for _, _, neg in triples})
    new = {v2: str(V2_ID_BASE + row) for row, v2 in enumerate(used)}
    return {
        "queries": chosen,
        "qrels": {(qid, new[pid]): 1 for qid in chosen for pid in relevant[qid]},
        "triples": [(qid, new[pos], new[neg]) for qid, pos, neg in triples],
        "passages": {new[v2]: texts[v2] for v2 in used},
        "v2_ids": {pid: v2 for v2, pid in new.items()},
    }


def unscored(
    run: Mapping[str, Mapping[str, float]], name: str, depth: int, seed: int
) -> dict[str, list[tuple[str, float]]]:
    """Each query's top ``depth`` of the scored ``run`` of set ``name``, as the export's official top-1000 is:
    shuffled (seeded by ``seed``, ``name`` and the query) and every score ``0.0``, ready for
    :func:`lib.data.msmarco.write_run` (rank = position)."""
    candidates = {}
    for qid, scored in run.items():
        top = ranking_from_run(scored)[:depth]
        random.Random(f"miniature-shuffle:{seed}:{name}:{qid}").shuffle(top)
        candidates[qid] = [(pid, 0.0) for pid in top]
    return candidates


def _test_year(source: Path, name: str, corpus: Mapping[str, str], depth: int, seed: int) -> dict[str, Any]:
    """A test year's queries, its judgments of passages with text and its BM25 top ``depth``, unscored and shuffled."""
    qrels = read_qrels(source / f"qrels.{name}.txt")
    return {
        "queries": read_queries(source / f"queries.{name}.tsv"),
        "qrels": {(qid, pid): grade for qid, judged in qrels.items() for pid, grade in judged.items() if pid in corpus},
        "run": unscored(read_run(source / "runs" / f"{name}__bm25.trec"), name, depth, seed),
    }


def build_miniature(
    source: str | os.PathLike | None = None,
    passages: int | None = None,
    seed: int = 42,
    depth: int = 100,
    triples_per_query: int = 4,
) -> Miniature:
    """The miniature's contents (module doc) from the converted book data in ``source`` (default: ``<data>/converted``).

    ``passages`` is the size of ``collection.tsv``: at least the passages the query sets, runs and triples
    name (``None``: those alone), at most those and every other v1 book passage; outside that range it is a
    ``ValueError`` naming the parameter and the bound. ``depth`` cuts the test years' BM25 runs,
    ``triples_per_query`` the training triples of a query. Training and dev-small queries are checked to
    share no id or text with each other or with a test year (:func:`lib.data.splits.check_disjoint_from_tests`).
    """
    for name, value in (("passages", passages), ("depth", depth), ("triples_per_query", triples_per_query)):
        _positive(name, value)
    source = Path(source) if source is not None else paths.converted_dir("book")
    corpus = read_collection(source / "collection.tsv")
    tests = {name: _test_year(source, name, corpus, depth, seed) for name in TEST_SETS}
    test_queries = {name: year["queries"] for name, year in tests.items()}
    train = _train_set(source, test_queries, seed, triples_per_query)
    dev_qrels = read_qrels(source / "qrels.dev-small.txt")
    dev_queries = without_test_queries(
        read_queries(source / "queries.dev-small.tsv"), {**test_queries, "train": train["queries"]}
    )
    dev = {
        "queries": {q: t for q, t in dev_queries.items() if any(pid in corpus for pid in dev_qrels.get(q, {}))},
    }
    dev["qrels"] = {(q, pid): g for q in dev["queries"] for pid, g in dev_qrels[q].items() if pid in corpus}
    check_disjoint_from_tests(train["queries"], {"dev-small": dev["queries"]})
    check_disjoint_from_tests({**train["queries"], **dev["queries"]}, test_queries)
    needed = {pid for year in tests.values() for (_, pid) in year["qrels"]}
    needed |= {pid for year in tests.values() for ranked in year["run"].values() for pid, _ in ranked}
    needed |= {pid for (_, pid) in dev["qrels"]}
    chosen = {pid: corpus[pid] for pid in needed} | train["passages"]
    others = sorted(set(corpus) - needed, key=query_key)
    size = len(chosen) if passages is None else passages
    if not len(chosen) <= size <= len(chosen) + len(others):
        raise ValueError(
            f"parameter 'passages' must be between {len(chosen)} (the passages the query sets need) and "
            f"{len(chosen) + len(others)} (every book passage), got {passages}"
        )
    chosen |= {
        pid: corpus[pid] for pid in random.Random(f"miniature-passages:{seed}").sample(others, size - len(chosen))
    }
    return Miniature(
        passages=chosen,
        queries={"train": train["queries"], "dev-small": dev["queries"], **test_queries},
        qrels={"train": train["qrels"], "dev-small": dev["qrels"], **{n: y["qrels"] for n, y in tests.items()}},
        runs={name: year["run"] for name, year in tests.items()},
        triples=train["triples"],
        v2_ids=train["v2_ids"],
    )


def write_miniature(miniature: Miniature, out: str | os.PathLike) -> dict[str, Any]:
    """Write ``miniature`` into ``out`` in the export's layout (module doc); returns the manifest.

    ``out`` is created when missing. A folder whose ``manifest.json`` does not say ``"miniature": true``
    (a real export, the book data) is refused with a ``ValueError`` naming it; a miniature's manifest is
    replaced, not merged, since the miniature is written whole. Every file is written atomically.
    """
    out = Path(out)
    manifest_path = out / "manifest.json"
    if manifest_path.is_file():
        if json.loads(manifest_path.read_text(encoding="utf-8")).get("miniature") is not True:
            raise ValueError(f"{out}: its manifest.json is not a miniature's: refusing to write a miniature over it")
        manifest_path.unlink()
    (out / "runs").mkdir(parents=True, exist_ok=True)
    written = [out / "collection.tsv", out / "triples.train.tsv", out / V2_IDS]
    with atomic_write(written[0]) as handle:
        write_rows(handle, sorted(miniature.passages.items(), key=lambda row: query_key(row[0])))
    with atomic_write(written[1]) as handle:
        write_rows(handle, miniature.triples)
    with atomic_write(written[2]) as handle:
        write_rows(handle, sorted(miniature.v2_ids.items(), key=lambda row: query_key(row[0])))
    for name, queries in miniature.queries.items():
        written += write_query_set(out, name, queries.items(), miniature.qrels[name])
    for name, candidates in miniature.runs.items():
        written += write_run(out, name, candidates)
    return write_manifest(out, written, MARK)
