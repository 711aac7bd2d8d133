"""Chapter 9's data: TIME with its BM25 candidates, and documents assembled from the test years' passages.

- :func:`time_set`: the TIME collection (:mod:`lib.data.time_collection`; evaluation only, never trained or tuned
  on) as a judged set: its queries (the profile's slice), binary judgments and BM25's top ``depth`` documents from a
  Lucene index of its 423 documents (:mod:`lib.first_stage.lucene`, the book's BM25), with the documents' texts.
- :func:`assembled_set`: one judged year's documents assembled from its real passages
  (:mod:`lib.data.assembled_documents`): relevant documents around each query's passages judged relevant (grade ≥
  the year's relevance level), filler from its passages judged 0, then from the other queries' BM25 candidates;
  lengths drawn from TIME's documents. The candidates are the query's documents in a seeded random order, and
  BM25's order of the same documents (from an index of all the year's assembled documents; a document that shares
  no term with the query last) is returned beside them as the first stage to compare against.
- :func:`document_scores`: a model's score of every candidate document, each read up to ``max_pieces`` tokens,
  computed once per build (the score cache, :mod:`lib.experiments.score_cache`, keyed by the weights, the
  documents and ``method`` — FirstP and MaxP share BERT-cat's weights, so the method tells them apart) — and
  :func:`documents_per_ms`, the same scoring timed; :func:`cascade_scores`, IDCM's scores at every ``k`` of a
  sweep from one pass (:meth:`lib.models.idcm.IDCM.sweep`), each kept in the cache as :func:`document_scores` at
  that ``k`` would keep it; :func:`document_costs`, chapter 3's cost table (:mod:`lib.evaluation.regimes`) on TIME's
  documents — per query, each model run whole and, where its document side is query-independent (TKL), stored —,
  with each row's documents per ms.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from lib.core.atomic import write_text
from lib.core.device import amp_enabled
from lib.core.profiles import LongSettings, Profile, limit_queries
from lib.core.types import JudgedSet, Run, query_order, ranking_from_run
from lib.data.assembled_documents import AssembledSet, assemble
from lib.data.time_collection import load_time
from lib.evaluation.measures import relevance_level
from lib.evaluation.regimes import TimedQueries, Timing, cost_rows, query_cost
from lib.experiments import score_cache
from lib.experiments.model_runs import score_cache_folder
from lib.first_stage import lucene
from lib.models.idcm import IDCM, IDCMSweep
from lib.representations.text import QUERY_MAX_LENGTH
from lib.reranking.scoring import ScoringOptions, score_candidate_columns, score_candidates


def _bm25(documents: dict[str, str], queries: dict[str, str], folder: Path, depth: int) -> Run:
    """BM25's top ``depth`` of ``documents`` for each query, from a Lucene index built (once) in ``folder``."""
    collection = "".join(f"{docid}\t{' '.join(text.split())}\n" for docid, text in documents.items())
    write_text(folder / "collection.tsv", collection)
    index = lucene.build_index(folder / "collection.tsv", folder / "index", progress=False)
    return lucene.retrieve(index, queries, "bm25", k=depth)


def time_set(profile: Profile, folder: Path, depth: int) -> tuple[JudgedSet, dict[str, str]]:
    """TIME as a judged set re-ranking BM25's top ``depth`` (the profile's slice of its queries), and its documents'
    texts; the index lives in ``folder``."""
    collection = load_time()
    qids = limit_queries(list(collection.queries), profile)
    queries = {qid: collection.queries[qid] for qid in qids}
    run = _bm25(collection.documents, queries, folder, depth)
    qrels = {qid: collection.qrels[qid] for qid in qids if qid in collection.qrels}
    return JudgedSet("time", queries, qrels, run), collection.documents


def assembled_set(
    judged: JudgedSet,
    texts: dict[str, str],
    lengths: list[int],
    counts: tuple[int, int],
    seed: int,
    folder: Path,
) -> tuple[AssembledSet, JudgedSet, Run]:
    """``judged``'s documents assembled from its passages (module docstring; ``counts``: relevant and non-relevant
    documents per query), as a judged set whose run is the documents in a seeded random order, and BM25's ranking of
    the same documents (its index in ``folder``)."""
    level = relevance_level(judged.qrels)
    relevant, negatives = {}, {}
    for qid in sorted(judged.queries, key=query_order):
        grades = {pid: grade for pid, grade in judged.qrels.get(qid, {}).items() if pid in texts}
        relevant[qid] = {pid: grade for pid, grade in grades.items() if grade >= level}
        negatives[qid] = sorted(pid for pid, grade in grades.items() if grade == 0)
    pool = sorted({pid for run in judged.run.values() for pid in run if pid in texts})
    assembled = assemble(relevant, negatives, pool, texts, lengths, seed, *counts)
    queries = {qid: judged.queries[qid] for qid in assembled.qrels}
    as_judged = JudgedSet(f"{judged.name}-assembled", queries, assembled.qrels, assembled.run)
    ranked = _bm25(assembled.documents, queries, folder, len(assembled.documents))
    bm25 = {}
    for qid, candidates in assembled.run.items():  # BM25's order of the query's own documents, unmatched ones last
        order = [doc for doc in ranking_from_run(ranked[qid]) if doc in candidates]
        order += [doc for doc in ranking_from_run(candidates) if doc not in order]
        bm25[qid] = {doc: float(len(order) - rank) for rank, doc in enumerate(order)}
    return assembled, as_judged, bm25


def time_lengths() -> list[int]:
    """The word counts of TIME's documents: the lengths assembled documents are drawn from."""
    return [len(text.split()) for text in load_time().documents.values()]


def _key(model: torch.nn.Module, tokenizer: Any, judged: JudgedSet, documents: dict[str, str], method: str,
         max_pieces: int) -> dict[str, Any]:  # fmt: skip
    device = next(model.parameters()).device
    return score_cache.scoring_key(
        model, tokenizer, judged.queries, documents, judged.run, method=method,
        max_lengths=[QUERY_MAX_LENGTH, max_pieces], device=device.type, bf16=amp_enabled(device),
    )  # fmt: skip


def document_scores(
    model: torch.nn.Module,
    tokenizer: Any,
    judged: JudgedSet,
    documents: dict[str, str],
    profile: Profile,
    method: str,
    max_pieces: int,
    batch_size: int = 8,
) -> Run:
    """Every candidate document of ``judged`` scored by ``model`` (each read up to ``max_pieces`` tokens), computed
    once per build and kept in the profile's score cache under ``method`` (module docstring)."""
    key = _key(model, tokenizer, judged, documents, method, max_pieces)
    options = ScoringOptions(batch_size, QUERY_MAX_LENGTH, max_pieces, progress=True)

    def compute() -> Run:
        return score_candidates(model, tokenizer, judged.queries, documents, judged.run, depth=None, options=options)

    return score_cache.cached_scores(score_cache_folder(profile), key, judged.run, compute)


def cascade_scores(
    model: IDCM,
    tokenizer: Any,
    judged: JudgedSet,
    documents: dict[str, str],
    profile: Profile,
    ks: Sequence[int | None],
    max_pieces: int,
    batch_size: int = 8,
) -> dict[int | None, Run]:
    """IDCM's scores of every candidate of ``judged`` at each ``k`` of ``ks`` (``None``: every window), from one pass
    when any is missing from the cache, each kept under ``idcm-<k>`` (module docstring)."""
    computed: list[Run] = []

    def column(index: int) -> Callable[[], Run]:
        def compute() -> Run:
            if not computed:
                options = ScoringOptions(batch_size, QUERY_MAX_LENGTH, max_pieces, progress=True)
                computed.extend(score_candidate_columns(IDCMSweep(model, ks), tokenizer, judged.queries, documents,
                                                        judged.run, None, options, columns=len(ks)))  # fmt: skip
            return computed[index]

        return compute

    folder = score_cache_folder(profile)
    return {
        k: score_cache.cached_scores(
            folder, _key(model, tokenizer, judged, documents, f"idcm-{k}", max_pieces), judged.run, column(index)
        )  # fmt: skip
        for index, k in enumerate(ks)
    }


def document_costs(
    models: Mapping[str, tuple[torch.nn.Module, Any]],
    judged: JudgedSet,
    documents: dict[str, str],
    long: LongSettings,
    folder: Path,
) -> pd.DataFrame:
    """The cost table of ``models`` (name → model and tokenizer) re-ranking ``judged``'s candidates (module
    docstring; ``long``'s ``regime_*`` settings, documents read to ``max_pieces``), each index built in ``folder``: the
    rows of :func:`lib.evaluation.regimes.cost_rows` and ``documents_per_ms``, the slope of
    :func:`lib.evaluation.regimes.query_cost` (what one more document costs)."""
    qids = sorted(judged.run, key=query_order)[: long.regime_queries]
    timed = TimedQueries(judged.run, judged.queries, documents, qids)
    timing = Timing(long.regime_counts, batch_size=8, repetitions=long.regime_repetitions,
                    max_doc_length=long.max_pieces)  # fmt: skip
    rows = [row for name, (model, tokenizer) in models.items()
            for row in cost_rows(name, model, tokenizer, timed, timing, folder)]  # fmt: skip
    for row in rows:
        row["documents_per_ms"] = query_cost(row, long.regime_counts)[1]
    return pd.DataFrame(rows)


def documents_per_ms(
    model: torch.nn.Module,
    tokenizer: Any,
    judged: JudgedSet,
    documents: dict[str, str],
    count: int,
    max_pieces: int,
    batch_size: int = 8,
) -> float:
    """Documents scored per millisecond: the first ``count`` candidates (in query order, then the run's order) scored
    once untimed and once timed, as :func:`document_scores` scores them (tokenising included)."""
    chosen: Run = {}
    for qid in sorted(judged.run, key=query_order):
        room = count - sum(map(len, chosen.values()))
        if room <= 0:
            break
        chosen[qid] = dict(list(judged.run[qid].items())[:room])
    options = ScoringOptions(batch_size, QUERY_MAX_LENGTH, max_pieces)
    scored = sum(map(len, chosen.values()))
    score_candidates(model, tokenizer, judged.queries, documents, chosen, depth=None, options=options)
    start = time.perf_counter()
    score_candidates(model, tokenizer, judged.queries, documents, chosen, depth=None, options=options)
    return scored / ((time.perf_counter() - start) * 1000)


__all__ = [
    "assembled_set",
    "cascade_scores",
    "document_costs",
    "document_scores",
    "documents_per_ms",
    "time_lengths",
    "time_set",
]
