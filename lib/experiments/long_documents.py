"""Chapter 9's data: TIME with its BM25 candidates, and documents assembled from the test years' passages.

- :func:`time_set`: the TIME collection (:mod:`lib.data.time_collection`; evaluation only, never trained or tuned
  on) as a judged set: its queries (the profile's slice), binary judgments and BM25's top ``depth`` documents from a
  Lucene index of its 423 documents (:mod:`lib.first_stage.lucene`, the book's BM25), with the documents' texts.
- :func:`assembled_set`: one judged year's documents assembled from its real passages
  (:mod:`lib.data.assembled_documents`): relevant documents around each query's passages judged relevant (grade ≥
  the year's relevance level) and non-relevant ones, all filled from one mixture — the same number of its passages
  judged 0 in each, the rest from the other queries' BM25 candidates (never one of the query's own candidates or
  judged passages: :func:`own_passages`); lengths drawn from TIME's documents. The candidates are the query's
  documents in a seeded random order, and BM25's order of the same documents (from an index of all the year's
  assembled documents; a document that shares no term with the query last) is returned beside them as the first
  stage to compare against.
- :func:`sweep_set`: the controlled position sweep on a year's assembled documents
  (:func:`lib.data.assembled_documents.position_sweep`), offsets in the word pieces of BERT's tokenizer, with
  BM25's scores of the sweep's documents and the year's non-relevant ones from one index;
  :func:`sweep_ranks_by_model`, every model's ranks on it (each sweep document against the same non-relevant
  documents), :func:`cascade_sweep_ranks` IDCM's at every ``k`` from one pass; :func:`relevant_offsets`, where the
  relevant passages of a year's assembled documents start, in word pieces.
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
from lib.data.assembled_documents import AssembledSet, SweepVariant, assemble, position_sweep
from lib.data.time_collection import load_time
from lib.evaluation.measures import relevance_level
from lib.evaluation.position_effect import sweep_ranks
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


def own_passages(judged: JudgedSet) -> dict[str, set[str]]:
    """Each query's own passages: its first-stage candidates and its judged passages (on its topic)."""
    return {qid: set(judged.run.get(qid, {})) | set(judged.qrels.get(qid, {})) for qid in judged.queries}


def _pool(judged: JudgedSet, texts: dict[str, str]) -> list[str]:
    return sorted({pid for run in judged.run.values() for pid in run if pid in texts})


def assembled_set(
    judged: JudgedSet,
    texts: dict[str, str],
    lengths: list[int],
    counts: tuple[int, int, int],
    seed: int,
    folder: Path,
) -> tuple[AssembledSet, JudgedSet, Run]:
    """``judged``'s documents assembled from its passages (module docstring; ``counts``: relevant and non-relevant
    documents per query and the query's own passages in each), as a judged set whose run is the documents in a
    seeded random order, and BM25's ranking of the same documents (its index in ``folder``)."""
    level = relevance_level(judged.qrels)
    relevant, negatives = {}, {}
    for qid in sorted(judged.queries, key=query_order):
        grades = {pid: grade for pid, grade in judged.qrels.get(qid, {}).items() if pid in texts}
        relevant[qid] = {pid: grade for pid, grade in grades.items() if grade >= level}
        negatives[qid] = sorted(pid for pid, grade in grades.items() if grade == 0)
    assembled = assemble(relevant, negatives, _pool(judged, texts), texts, lengths, seed, counts, own_passages(judged))
    queries = {qid: judged.queries[qid] for qid in assembled.qrels}
    as_judged = JudgedSet(f"{judged.name}-assembled", queries, assembled.qrels, assembled.run)
    ranked = _bm25(assembled.documents, queries, folder, len(assembled.documents))
    bm25 = {}
    for qid, candidates in assembled.run.items():  # BM25's order of the query's own documents, unmatched ones last
        order = [doc for doc in ranking_from_run(ranked[qid]) if doc in candidates]
        order += [doc for doc in ranking_from_run(candidates) if doc not in order]
        bm25[qid] = {doc: float(len(order) - rank) for rank, doc in enumerate(order)}
    return assembled, as_judged, bm25


def sweep_set(
    judged: JudgedSet,
    assembled: AssembledSet,
    texts: dict[str, str],
    tokenizer: Any,
    long: LongSettings,
    seed: int,
    folder: Path,
) -> tuple[dict[str, str], dict[str, SweepVariant], JudgedSet, Run]:
    """The position sweep of ``judged``'s assembled documents (module docstring): the sweep's texts and variants, a
    judged set whose run holds each query's variants, and BM25's scores of the variants and of the query's
    non-relevant assembled documents (one Lucene index of both in ``folder``; a document sharing no term with the
    query scores below every matched one; Anserini's 4 decimals, without its tie-breaking by document id, so that the
    sweep's documents — one bag of words — score alike). Offsets count ``tokenizer``'s word pieces (BERT's)."""
    sizes: dict[str, int] = {}

    def pieces(pid: str) -> int:
        if pid not in sizes:
            sizes[pid] = len(tokenizer.pieces([texts[pid]])[0])
        return sizes[pid]

    settings = (long.sweep_offsets, 2 * long.max_pieces)
    documents, variants = position_sweep(assembled, _pool(judged, texts), texts, pieces, settings, seed,
                                         own_passages(judged))  # fmt: skip
    run: Run = {}
    for docid, variant in variants.items():  # each query's variants in the sweep's order
        scores = run.setdefault(variant.layout.qid, {})
        scores[docid] = float(-len(scores))
    qrels = {qid: {docid: variants[docid].layout.grade for docid in docs} for qid, docs in run.items()}
    queries = {qid: judged.queries[qid] for qid in run}
    others = {doc: text for doc, text in assembled.documents.items() if assembled.layouts[doc].relevant_at is None}
    ranked = _bm25({**others, **documents}, queries, folder, len(others) + len(documents))
    bm25 = {}
    for qid in run:
        mine = [*run[qid], *(doc for doc in assembled.run[qid] if doc in others)]
        floor = min(ranked[qid].values(), default=0.0) - 1.0
        bm25[qid] = {doc: round(ranked[qid].get(doc, floor), 4) for doc in mine}  # Anserini's ties made ties again
    return documents, variants, JudgedSet(f"{judged.name}-sweep", queries, qrels, run), bm25


def sweep_ranks_by_model(
    scorers: Mapping[str, tuple[torch.nn.Module, Any, str]],
    sweep: tuple[dict[str, str], dict[str, SweepVariant], JudgedSet, Run],
    assembled: AssembledSet,
    runs: Mapping[str, Run],
    profile: Profile,
    max_pieces: int,
) -> dict[str, pd.DataFrame]:
    """Each model's ranks on a year's position sweep (:func:`lib.evaluation.position_effect.sweep_ranks`), BM25's
    first: ``scorers`` maps a model's name to its model, tokenizer and score-cache ``method`` (each sweep document
    read to ``max_pieces``, scored once per build as :func:`document_scores`), ``sweep`` is :func:`sweep_set`'s and
    ``runs[name]`` the model's scores of ``assembled``'s documents, the competitors."""
    documents, variants, judged, bm25 = sweep
    swept = {qid: {doc: score for doc, score in scores.items() if doc in variants} for qid, scores in bm25.items()}
    ranks = {"bm25": sweep_ranks(swept, bm25, assembled.layouts, variants)}
    for name, (model, tokenizer, method) in scorers.items():
        scores = document_scores(model, tokenizer, judged, documents, profile, method, max_pieces)
        ranks[name] = sweep_ranks(scores, runs[name], assembled.layouts, variants)
    return ranks


def cascade_sweep_ranks(
    model: IDCM,
    tokenizer: Any,
    sweep: tuple[dict[str, str], dict[str, SweepVariant], JudgedSet, Run],
    assembled: AssembledSet,
    competitors: Mapping[int | None, Run],
    profile: Profile,
    max_pieces: int,
) -> dict[int | None, pd.DataFrame]:
    """IDCM's ranks on a year's position sweep at every ``k`` of ``competitors`` (its scores of ``assembled``'s
    documents at that ``k``), the sweep's documents scored at every ``k`` in one pass (:func:`cascade_scores`)."""
    documents, variants, judged, _ = sweep
    scores = cascade_scores(model, tokenizer, judged, documents, profile, list(competitors), max_pieces)
    return {k: sweep_ranks(scores[k], competitors[k], assembled.layouts, variants) for k in competitors}


def relevant_offsets(assembled: AssembledSet, texts: dict[str, str], tokenizer: Any) -> list[int]:
    """Where each relevant assembled document's relevant passage starts, in ``tokenizer``'s word pieces (the pieces
    of the passages before it; a document's pieces are its passages' in order)."""
    offsets = []
    for layout in assembled.layouts.values():
        if layout.relevant_at is not None:
            before = [texts[pid] for pid in layout.passages[: layout.relevant_at]]
            offsets.append(sum(map(len, tokenizer.pieces(before))) if before else 0)
    return offsets


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
    docstring; ``long``'s ``regime_*`` settings, documents read to ``time_max_pieces``), each index built in
    ``folder``: the rows of :func:`lib.evaluation.regimes.cost_rows` and ``documents_per_ms``, the slope of
    :func:`lib.evaluation.regimes.query_cost` (what one more document costs)."""
    qids = sorted(judged.run, key=query_order)[: long.regime_queries]
    timed = TimedQueries(judged.run, judged.queries, documents, qids)
    timing = Timing(long.regime_counts, batch_size=8, repetitions=long.regime_repetitions,
                    max_doc_length=long.time_max_pieces)  # fmt: skip
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
    "cascade_sweep_ranks",
    "own_passages",
    "relevant_offsets",
    "sweep_ranks_by_model",
    "sweep_set",
    "cascade_scores",
    "document_costs",
    "document_scores",
    "documents_per_ms",
    "time_lengths",
    "time_set",
]
