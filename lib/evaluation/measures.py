"""Evaluation with trec_eval semantics (through ir-measures and its pytrec_eval backend).

- The book's measures: nDCG@10 (graded), and the binary measures MRR@10, R@10, R@100, MAP and P@10
  with **rel ≥ 2 counting as relevant** on graded judgments, the TREC DL passage convention (``trec_eval -l 2``),
  and rel ≥ 1 on MS MARCO's binary ones (every grade 0 or 1: dev-small, train), where grade 1 is the only
  relevant grade (:func:`relevance_level`; MS MARCO's official MRR@10 counts it).
- Rankings follow trec_eval: by score, descending, ties broken by passage id, descending.
- Means are taken over the queries that are both judged and in the run (trec_eval's default).
- :func:`depth_sweep` gives every re-ranking depth N from one scoring pass: the model re-orders the
  first stage's top-N and the first stage's order is kept below N (TK paper §5.2, "re-ranking depth").
- Systems are compared (paired t-tests, Bonferroni) in :mod:`lib.evaluation.comparison`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

import ir_measures
import pandas as pd
from ir_measures import AP, RR, P, R, nDCG

from lib.core.atomic import atomic_write
from lib.core.types import Qrels, Run, query_order, ranking_from_run, run_from_rankings

#: The binary measures' threshold on graded judgments (TREC DL's 0–3): ``trec_eval -l 2``.
GRADED_RELEVANT = 2


def _measures_at(level: int) -> dict[str, ir_measures.Measure]:
    return {
        "nDCG@10": nDCG @ 10,
        "MRR@10": RR(rel=level) @ 10,
        "R@10": R(rel=level) @ 10,
        "R@100": R(rel=level) @ 100,
        "MAP": AP(rel=level),
        "P@10": P(rel=level) @ 10,
    }


#: The book's measures on graded judgments, by the names its tables use.
MEASURES: dict[str, ir_measures.Measure] = _measures_at(GRADED_RELEVANT)


def relevance_level(qrels: Qrels) -> int:
    """The grade from which a judgment counts as relevant for the binary measures: 1 when every grade is 0 or 1
    (MS MARCO's binary judgments), else :data:`GRADED_RELEVANT` (TREC DL's graded ones, ``trec_eval -l 2``)."""
    top = max((grade for grades in qrels.values() for grade in grades.values()), default=0)
    return 1 if top <= 1 else GRADED_RELEVANT


def _measures(names: Sequence[str] | None, level: int = GRADED_RELEVANT) -> dict[str, ir_measures.Measure]:
    names = list(MEASURES) if names is None else list(names)
    unknown = [name for name in names if name not in MEASURES]
    if unknown:
        raise ValueError(f"unknown measure(s) {unknown}; known: {list(MEASURES)}")
    measures = _measures_at(level)
    return {name: measures[name] for name in names}


def per_query(run: Run, qrels: Qrels, measures: Sequence[str] | None = None) -> pd.DataFrame:
    """Per-query values: a frame indexed by ``qid`` with one column per measure (binary ones at
    :func:`relevance_level` of ``qrels``)."""
    chosen = _measures(measures, relevance_level(qrels))
    by_measure = {measure: name for name, measure in chosen.items()}
    # Only queries both judged and retrieved (ir_measures would score a judged query missing from the
    # run as 0), with tie-free scores in trec_eval order (MRR@10 comes from ir_measures' msmarco
    # provider, which breaks ties by ascending id).
    judged = {qid: dict(grades) for qid, grades in qrels.items() if run.get(qid)}
    ordered = run_from_rankings({qid: ranking_from_run(run[qid]) for qid in judged})
    rows: dict[str, dict[str, float]] = {}
    for metric in ir_measures.iter_calc(list(chosen.values()), judged, ordered):
        rows.setdefault(metric.query_id, {})[by_measure[metric.measure]] = metric.value
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=list(chosen))
    frame.index.name = "qid"
    return frame.sort_index(key=lambda index: index.map(query_order))


def evaluate(run: Run, qrels: Qrels, measures: Sequence[str] | None = None) -> dict[str, float]:
    """Mean of each measure over the judged queries in the run."""
    frame = per_query(run, qrels, measures)
    if frame.empty:
        raise ValueError("no query of the run is judged in the qrels: nothing to evaluate")
    return {name: float(frame[name].mean()) for name in frame.columns}


def cutoff_curve(run: Run, qrels: Qrels, cutoffs: Iterable[int], measure: str = "R") -> pd.Series:
    """Mean recall (``"R"``, rel ≥ :func:`relevance_level`) or nDCG (``"nDCG"``) at every cut-off, by cut-off."""
    level = relevance_level(qrels)
    builders = {"R": lambda k: R(rel=level) @ k, "nDCG": lambda k: nDCG @ k}
    if measure not in builders:
        raise ValueError(f"parameter 'measure' must be one of {list(builders)}, got {measure!r}")
    cutoffs = list(cutoffs)
    values = ir_measures.calc_aggregate([builders[measure](k) for k in cutoffs], dict(qrels), dict(run))
    return pd.Series([values[builders[measure](k)] for k in cutoffs], index=pd.Index(cutoffs, name="cutoff"))


def write_trec_run(run: Run, path: str | os.PathLike, tag: str) -> None:
    """Write ``run`` as a TREC run file, atomically, ranks in trec_eval order (``qid Q0 pid rank score tag``)."""
    if not tag or any(character.isspace() for character in tag):
        raise ValueError(f"parameter 'tag' must be one word, got {tag!r}")
    with atomic_write(path) as handle:
        for qid in sorted(run, key=query_order):
            for rank, pid in enumerate(ranking_from_run(run[qid]), start=1):
                handle.write(f"{qid} Q0 {pid} {rank} {float(run[qid][pid])!r} {tag}\n")
