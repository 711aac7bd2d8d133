"""Chapter 2's book-scale protocol (ARCHITECTURE.md, "Conventions"), which chapters 3, 7 and 8 re-use.

:func:`prepare_protocol` — the distillation protocol (Hofstätter et al. 2020, Margin-MSE): training
triples labelled by the teacher on pseudo-queries cut from book passages and/or MS MARCO dev-small
queries over the book corpus (:mod:`lib.experiments.distillation_set`), a held-out slice of those
queries whose triples are never trained on (student-vs-teacher margins), validation on the
profile's validation set (:func:`validation_set`: DL21's graded judgments, MS MARCO dev-small for
the ``paper`` profile; its BM25 top candidates), and the two test years DL19 and DL20 (their
official BM25 top-100). No DL19/DL20 query or judgment enters training or validation
(:func:`lib.data.splits.check_disjoint_from_tests`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lib.core.profiles import Profile, TrainingSettings, limit_queries
from lib.core.types import JudgedSet, ranking_from_run, top_of_run
from lib.data import book_texts, load_qrels, load_queries
from lib.data.pseudo_queries import PSEUDO_PREFIX
from lib.data.splits import TEST_SETS, check_disjoint_from_tests, train_validation_split
from lib.experiments.distillation_set import DistillationSet, build_distillation_set, file_distillation_set
from lib.experiments.first_stage_runs import bm25_run
from lib.models.bi_encoder import BiEncoder
from lib.representations.bert import load_tokenizer
from lib.representations.pretrained import minilm_folder
from lib.training.distillation import Triple

#: The share of the teacher-labelled queries held out: their triples are never trained on.
HELD_OUT_FRACTION = 0.05


@dataclass
class Protocol:
    """Everything chapter 2 trains, validates and tests on (see :func:`prepare_protocol`).

    ``triples`` / ``margins`` are the teacher-labelled training triples and the teacher's margins;
    ``held_out`` / ``held_out_margins`` the triples of the held-out queries, never trained on;
    ``queries`` the texts of every teacher-labelled query; ``distillation`` the full set (its teacher
    scores and timings); ``validation`` the profile's validation set (:func:`validation_set`) and ``tests`` the
    test years, each a judged set with its BM25 candidates.
    """

    distillation: DistillationSet
    triples: list[Triple]
    margins: list[float]
    held_out: list[Triple]
    held_out_margins: list[float]
    queries: dict[str, str]
    texts: dict[str, str]
    validation: JudgedSet
    tests: dict[str, JudgedSet]

    def summary(self) -> dict[str, Any]:
        """Counts for the chapter's table: training, held-out, validation and test queries."""
        return {
            **self.distillation.summary(),
            "training triples": len(self.triples),
            "held-out queries": len({qid for qid, _, _ in self.held_out}),
            "held-out triples": len(self.held_out),
            f"validation queries ({self.validation.name})": len(self.validation.queries),
            **{f"test queries ({name})": len(test.queries) for name, test in self.tests.items()},
        }


def query_set(name: str, profile: Profile, depth: int) -> JudgedSet:
    """The profile's slice of judged year ``name`` (its queries), every judgment, and its scored BM25 top ``depth``.

    The BM25 run is the data folder's, or chapter 1's retrieval where that folder's is unscored
    (:func:`lib.experiments.first_stage_runs.bm25_run`).
    """
    queries = load_queries(name)
    chosen = limit_queries(list(queries), profile)
    return JudgedSet(
        name=name,
        queries={q: queries[q] for q in chosen},
        qrels=load_qrels(name),
        run=top_of_run(bm25_run(profile, name), depth, chosen),
    )


def validation_set(settings: TrainingSettings) -> str:
    """The query set that validates (``settings.validation_set``): never a test year, never the training queries.

    A test year (:data:`lib.data.splits.TEST_SETS`) or the set the teacher labels
    (``distill_query_set``) is a ``ValueError`` naming the setting.
    """
    name = settings.validation_set
    if name in TEST_SETS:
        raise ValueError(
            f"training setting 'validation_set' is {name!r}, a test year {TEST_SETS}: no test query validates "
            "(use dl21, or dev-small as the paper profile does)"
        )
    if name == settings.distill_query_set:
        raise ValueError(f"training setting 'validation_set' is {name!r}, the set 'distill_query_set' trains on")
    return name


def query_set_label(name: str) -> str:
    """How prose names query set ``name``: ``DL21`` for a TREC DL year, ``MS MARCO dev-small`` otherwise."""
    return name.upper() if name.startswith("dl") else f"MS MARCO {name}"


def query_source_settings(settings: TrainingSettings) -> dict[str, TrainingSettings]:
    """``settings`` with each source of training queries alone (chapter 2's comparison), by label.

    ``"<distill_query_set> only"`` (``"dev-small only"``): the profile's dev-small queries and no
    pseudo-query; ``"pseudo-queries only"``: the profile's pseudo-queries and no dev-small query. A
    source the profile does not use is left out (its "alone" would be no training query at all, or the
    profile itself); a teacher-scores file (``teacher_scores``, the paper's path) fixes the queries: none.
    """
    variants = {}
    if settings.teacher_scores is None and settings.distill_queries != 0 and settings.distill_pseudo_queries > 0:
        variants[f"{settings.distill_query_set} only"] = dataclasses.replace(settings, distill_pseudo_queries=0)
        variants["pseudo-queries only"] = dataclasses.replace(settings, distill_queries=0)
    return variants


def prepare_protocol(
    profile: Profile, settings: TrainingSettings, seed: int, index_dir: Path, folder: Path, progress: bool = True
) -> Protocol:
    """The distillation protocol (module docstring); the teacher's encodings are cached in ``folder``.

    The teacher is the zero-shot all-MiniLM-L6-v2 bi-encoder; ``index_dir`` is chapter 1's BM25 index of the book
    corpus. On the paper's path (``settings.teacher_scores``) the triples and margins of the teacher-scores file
    replace both (:func:`lib.experiments.distillation_set.file_distillation_set`). :data:`HELD_OUT_FRACTION` of the
    teacher-labelled queries (a seeded hash split, :func:`lib.data.splits.train_validation_split`) are held out: their
    triples measure how well a student learned the teacher's margins on queries it never saw. Validation re-ranks the
    BM25 top ``candidate_depth`` of :func:`validation_set` with its judgments; the check that no training or
    validation query is a DL19/DL20 query runs here too, whatever the data.
    """
    validation_name = validation_set(settings)
    if settings.teacher_scores is not None:
        distillation = file_distillation_set(profile, settings)
    else:
        teacher = BiEncoder(minilm_folder())
        distillation = build_distillation_set(
            profile, settings, teacher, load_tokenizer(minilm_folder()), index_dir, folder, seed, progress
        )
    _, held_out_qids = train_validation_split(list(distillation.queries), HELD_OUT_FRACTION, seed)
    held = set(held_out_qids)
    kept = [i for i, (qid, _, _) in enumerate(distillation.triples) if qid not in held]
    out = [i for i, (qid, _, _) in enumerate(distillation.triples) if qid in held]
    validation = query_set(validation_name, profile, settings.candidate_depth)
    tests = {name: query_set(name, profile, settings.candidate_depth) for name in TEST_SETS}
    judged = {q: validation.qrels[q] for q in validation.queries if q in validation.qrels}
    check_disjoint_from_tests({**distillation.queries, **validation.queries}, {n: load_queries(n) for n in TEST_SETS})
    return Protocol(
        distillation=distillation,
        triples=[distillation.triples[i] for i in kept],
        margins=[distillation.margins[i] for i in kept],
        held_out=[distillation.triples[i] for i in out],
        held_out_margins=[distillation.margins[i] for i in out],
        queries=distillation.queries,
        texts=book_texts(),
        validation=JudgedSet(name=validation_name, queries=validation.queries, qrels=judged, run=validation.run),
        tests=tests,
    )


def pseudo_query_examples(protocol: Protocol, count: int = 5, width: int = 160) -> list[dict[str, str]]:
    """The first ``count`` pseudo-queries (by id): each with its source passage and the teacher's first candidate.

    Passages are cut at ``width`` characters (an ellipsis marks the cut).
    """

    def cut(text: str) -> str:
        return text if len(text) <= width else text[:width].rstrip() + " …"

    rows = []
    for qid in sorted(q for q in protocol.queries if q.startswith(PSEUDO_PREFIX))[:count]:
        top = ranking_from_run(protocol.distillation.teacher[qid])[0]
        rows.append({
            "pseudo-query": protocol.queries[qid],
            "cut from": cut(protocol.texts[qid.removeprefix(PSEUDO_PREFIX)]),
            "teacher's first candidate": "the same passage" if top == qid.removeprefix(PSEUDO_PREFIX)
            else cut(protocol.texts[top]),
        })  # fmt: skip
    return rows
