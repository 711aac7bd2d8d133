"""Chapter 2's teacher-labelled training set: MS MARCO dev-small queries, book-corpus candidates, the teacher's margins.

The protocol of the distillation section (Hofstätter et al. 2020, Margin-MSE; :mod:`lib.training.distillation`):

1. **Queries**: the MS MARCO queries of the profile's ``distill_query_set`` (dev-small's 6,980; the
   ``paper`` profile's train queries, since it validates on dev-small; the profile's ``distill_queries``
   first in query order) and ``distill_pseudo_queries`` pseudo-queries cut from book passages
   (:mod:`lib.data.pseudo_queries`: on-topic for the book corpus, which most dev-small queries are
   not), refused if any shares an id or a text with a test year
   (:func:`lib.data.splits.check_disjoint_from_tests`; a pseudo-query whose words are a test query's is
   dropped before that check). MS MARCO's judgments are not used: the teacher labels.
2. **Candidates** per query from the book corpus: BM25's top ``distill_bm25_depth`` from chapter 1's
   index, and the teacher's own top ``distill_teacher_depth`` (exact dense search over every book
   passage; 0 skips it and encodes only the BM25 candidates, as the smoke profile does). The book
   corpus is the pool of the DL19/DL20 candidates and judged passages: the test years' passages
   (never their queries or labels) are training text — transductive use of an unlabelled corpus.
3. **Teacher**: the zero-shot MiniLM bi-encoder; every passage and query is encoded once and cached
   in the chapter's artifacts (:func:`lib.reranking.dense.cached_encodings`).
4. **Triples**: :func:`lib.training.distillation.teacher_triples` on the teacher's scores; a
   ``distill_random_negatives`` fraction of them take a random passage of the encoded corpus as the
   negative (:func:`random_passages`, scored by the teacher from its cached vectors).

The paper's path (a profile whose ``teacher_scores`` names a file) skips all four: the students learn the
triples of a teacher-scores file and its margins (:func:`file_distillation_set`), as the paper trains on MS
MARCO's ``triples.train.small`` labelled by the BERT-cat ensemble (Hofstätter et al. 2020, §4).
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from lib.core import paths
from lib.core.profiles import PUBLISHED_TEACHER, Profile, TrainingSettings, limit_queries
from lib.core.types import Run
from lib.data import book_texts, iter_teacher_scores, load_collection, load_queries
from lib.data.pseudo_queries import PSEUDO_PREFIX, pseudo_queries
from lib.data.registry import TEACHER_SCORES, fetch_paper
from lib.data.splits import TEST_SETS, check_disjoint_from_tests, without_test_queries
from lib.first_stage import lucene
from lib.models.bi_encoder import BiEncoder
from lib.representations.text import DOC_MAX_LENGTH, QUERY_MAX_LENGTH
from lib.reranking.dense import Encodings, cached_encodings, dense_scores, dense_top_k
from lib.training.distillation import Triple, TripleSampling, teacher_triples


@dataclass
class DistillationSet:
    """Training queries, the teacher's score of each candidate, the sampled triples with their margins.

    ``passages`` are the teacher's cached passage vectors (reused to score other candidates); ``random`` the
    teacher's scores of the random passages drawn as negatives (``None`` without random negatives). A set read
    from a teacher-scores file (:func:`file_distillation_set`) has no cached vectors: ``passages`` is empty.
    """

    queries: dict[str, str]
    teacher: Run
    triples: list[Triple]
    margins: list[float]
    seconds: dict[str, float]
    passages: Encodings
    random: Run | None = None

    def summary(self) -> dict[str, Any]:
        """Counts and timings for the chapter's table."""
        return {
            "training queries": len(self.queries),
            "candidates per query": sum(len(c) for c in self.teacher.values()) / max(1, len(self.teacher)),
            "triples": len(self.triples),
            **{f"{step} (s)": round(value, 1) for step, value in self.seconds.items()},
        }


def training_queries(
    profile: Profile, settings: TrainingSettings, corpus: Mapping[str, str], seed: int
) -> dict[str, str]:
    """The queries the students learn from: ``distill_query_set``'s and pseudo-queries cut from ``corpus``.

    See the module docstring. The pseudo-queries' count is ``distill_pseudo_queries`` (the smoke
    profile's query limit caps it too); the whole set is checked to share nothing with the test years.
    """
    tests = {name: load_queries(name) for name in TEST_SETS}
    queries = load_queries(settings.distill_query_set)
    chosen = limit_queries(list(queries), profile)
    if settings.distill_queries is not None:
        chosen = chosen[: settings.distill_queries]
    selected = {qid: queries[qid] for qid in chosen}
    pseudo_count = settings.distill_pseudo_queries
    if profile.query_limit is not None:
        pseudo_count = min(pseudo_count, profile.query_limit)
    shortest, longest = settings.distill_pseudo_span
    selected.update(without_test_queries(pseudo_queries(corpus, pseudo_count, seed, shortest, longest), tests))
    if not selected:
        raise ValueError("no training queries: parameters 'distill_queries' and 'distill_pseudo_queries' are both 0")
    check_disjoint_from_tests(selected, tests)
    return selected


def triple_sampling(settings: TrainingSettings, negatives: int | None = None) -> TripleSampling:
    """How the profile's settings sample triples (``negatives=1``) or groups (default: ``distill_negatives``)."""
    return TripleSampling(
        per_query=settings.distill_triples_per_query,
        random_negatives=settings.distill_random_negatives,
        negatives=settings.distill_negatives if negatives is None else negatives,
    )


def random_passages(candidates: Run, passage_ids: list[str], per_query: int, seed: int) -> dict[str, list[str]]:
    """``per_query`` passages drawn uniformly from ``passage_ids`` for each query, none of its candidates.

    The generator is seeded by ``(seed, qid)``: a query's draw does not depend on the other queries.
    """
    drawn = {}
    for qid, known in candidates.items():
        generator = random.Random(f"random-negatives:{seed}:{qid}")
        pool = generator.sample(passage_ids, min(len(passage_ids), per_query + len(known)))
        drawn[qid] = [pid for pid in pool if pid not in known][:per_query]
    return drawn


def build_distillation_set(
    profile: Profile,
    settings: TrainingSettings,
    teacher: BiEncoder,
    tokenizer: Any,
    index_dir: Path,
    folder: Path,
    seed: int,
    progress: bool = True,
    corpus: Mapping[str, str] | None = None,
) -> DistillationSet:
    """Queries, candidates, teacher scores and triples (module docstring); encodings cached in ``folder``.

    The teacher's vectors of the MS MARCO queries and of the pseudo-queries are cached apart, so that
    sets with and without either source reuse them.

    ``corpus`` is what ``index_dir`` indexes and the teacher searches (default: the v1 book passages).
    """
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    corpus = load_collection("v1") if corpus is None else corpus
    queries = training_queries(profile, settings, corpus, seed)
    bm25 = lucene.retrieve(index_dir, queries, "bm25", k=settings.distill_bm25_depth)
    seconds["BM25"] = time.perf_counter() - start
    start = time.perf_counter()
    texts = {**book_texts(), **corpus}
    if settings.distill_teacher_depth > 0:
        passage_ids = sorted(corpus)
    else:
        passage_ids = sorted({pid for candidates in bm25.values() for pid in candidates})
    passages = cached_encodings(
        folder / "teacher-passages.npy", teacher, tokenizer, texts, passage_ids, DOC_MAX_LENGTH, progress=progress
    )
    query_ids = sorted(queries)
    parts = []
    for cache, chosen in (
        ("teacher-queries.npy", [qid for qid in query_ids if not qid.startswith(PSEUDO_PREFIX)]),
        ("teacher-pseudo-queries.npy", [qid for qid in query_ids if qid.startswith(PSEUDO_PREFIX)]),
    ):
        if chosen:
            encoded = cached_encodings(
                folder / cache, teacher, tokenizer, queries, chosen, QUERY_MAX_LENGTH, progress=progress
            )
            parts.append(encoded)
    encoded_queries = Encodings(
        [qid for part in parts for qid in part.ids], torch.cat([part.vectors for part in parts])
    )
    seconds["teacher encoding"] = time.perf_counter() - start
    candidates = {qid: dict(bm25[qid]) for qid in query_ids}
    if settings.distill_teacher_depth > 0:
        for qid, nearest in dense_top_k(encoded_queries, passages, settings.distill_teacher_depth).items():
            candidates[qid].update({pid: 0.0 for pid in nearest if pid not in candidates[qid]})
    scores = dense_scores(encoded_queries, passages, candidates)
    sampling = triple_sampling(settings, negatives=1)
    random_scores = None
    if sampling.random_negatives > 0:
        drawn = random_passages(candidates, passages.ids, sampling.per_query, seed)
        unscored = {qid: dict.fromkeys(pids, 0.0) for qid, pids in drawn.items()}
        random_scores = dense_scores(encoded_queries, passages, unscored)
    triples, margins = teacher_triples(scores, sampling, seed, random_scores)
    return DistillationSet(queries, scores, triples, margins, seconds, passages, random_scores)


def teacher_scores_file(settings: TrainingSettings) -> Path:
    """The teacher-scores file ``settings.teacher_scores`` names: the published one (:data:`PUBLISHED_TEACHER`,
    Hofstätter et al. 2020's BERT-cat ensemble, fetched and checked by :func:`lib.data.registry.fetch_paper`) or a
    file of the data folder the chapter reads (:func:`lib.core.paths.converted_dir`)."""
    if settings.teacher_scores is None:
        raise ValueError("parameter 'teacher_scores' is None: this profile's teacher is the book's MiniLM")
    if settings.teacher_scores == PUBLISHED_TEACHER:
        return fetch_paper(TEACHER_SCORES)
    path = paths.converted_dir() / settings.teacher_scores
    if not path.is_file():
        raise FileNotFoundError(f"{path}: the teacher-scores file the profile's 'teacher_scores' names is missing")
    return path


def file_distillation_set(profile: Profile, settings: TrainingSettings) -> DistillationSet:
    """The paper's training set: the triples of a teacher-scores file (:func:`teacher_scores_file`) and their margins.

    Only triples of ``distill_query_set`` queries are kept, the profile's slice of those queries (its
    ``query_limit``, then ``distill_queries``, in query order), none that shares an id or a text with a test year
    (:func:`lib.data.splits.without_test_queries`). No pseudo-query, no candidates of the book's own: the file's
    triples are the candidates, and ``teacher`` holds the file's score of each of them (a passage in several
    triples of a query keeps its first score). The file is read once, line by line.
    """
    start = time.perf_counter()
    path = teacher_scores_file(settings)
    tests = {name: load_queries(name) for name in TEST_SETS}
    allowed = without_test_queries(load_queries(settings.distill_query_set), tests)
    rows = [row for row in iter_teacher_scores(path) if row[0] in allowed]
    chosen = limit_queries(sorted({row[0] for row in rows}), profile)
    chosen = chosen if settings.distill_queries is None else chosen[: settings.distill_queries]
    kept = set(chosen)
    rows = [row for row in rows if row[0] in kept]
    if not rows:
        raise ValueError(f"{path}: no triple of a {settings.distill_query_set} query outside the test years")
    queries = {qid: allowed[qid] for qid in chosen}
    check_disjoint_from_tests(queries, tests)
    teacher: Run = {}
    for qid, positive, negative, positive_score, negative_score in rows:
        scores = teacher.setdefault(qid, {})
        scores.setdefault(positive, positive_score)
        scores.setdefault(negative, negative_score)
    triples = [(qid, positive, negative) for qid, positive, negative, _, _ in rows]
    margins = [positive_score - negative_score for _, _, _, positive_score, negative_score in rows]
    seconds = {"reading the teacher's scores": time.perf_counter() - start}
    return DistillationSet(queries, teacher, triples, margins, seconds, Encodings([], torch.empty(0, 0)))
