"""Chapter 7: the TU Wien TREC Deep Learning 2019 passage runs re-created at book scale.

Source: Hofstätter, Zlabinger, Hanbury, *TU Wien @ TREC Deep Learning '19 – Simple Contextualization
for Re-ranking* (the TREC notebook): §3.2 and Table 1 (the runs), §3.3 and Table 2 (their results),
Table 3 (the best and worst queries of TUW19-p3).

- **TUW19-p1**: TK on GloVe, "best validation run of multiple inits" — :func:`best_init` picks, among
  models trained from several seeds, the one with the best value of the measure early stopping
  watches (the profile's ``validation_metric``; MRR@10 in the notebook). The book's p1 is the TK chapter 2
  chose on validation (GloVe TK at book scale stays level with BM25; a deviation the book states).
- **TUW19-p2**: TK on fastText vectors instead of GloVe (vectors trained on the book corpus; fastText's
  character n-grams give every word of the corpus a vector, so nothing is out of vocabulary). Its
  claim is about the vectors, so the book compares it with TK-2 on GloVe (:data:`GLOVE_RUN`, chapter 2's
  TK-2: the same schedule and triples) whenever p1 is another TK.
- **TUW19-p3**: "ensemble of multiple TUW19-p1 configurations". The notebook does not say how scores
  are combined; :func:`ensemble` standardises each model's scores within a query (z-scores: TK's
  scores live on an arbitrary scale that differs between inits) and averages them.

Runs are written in TREC format with the tags of :data:`RUN_TAGS`. :func:`run_table` is the analogue of
the notebook's Table 2 with the notebook's own numbers beside it (:data:`PAPER_RESULTS`),
:func:`pairwise_tests` the paired t-tests between the runs, :func:`best_and_worst` Table 3, and
:func:`verdicts` the measured verdict on each of the notebook's three claims.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from lib.core.types import Qrels, Run, query_order
from lib.evaluation import measures as evaluation

#: The book's run tags, one per submitted passage run of the notebook (Table 1).
RUN_TAGS: dict[str, str] = {"p1": "TUW19-p1-book", "p2": "TUW19-p2-book", "p3": "TUW19-p3-book"}
#: The run that TUW19-p2 (fastText) is compared with when p1 is not TK-2 on GloVe: chapter 2's TK-2.
GLOVE_RUN = "TK-2 (GloVe)"


def run_descriptions(tk_label: str) -> dict[str, str]:
    """What each run is (the notebook's Table 1, and how the book builds it), p1 and p3 being ``tk_label``."""
    return {
        "p1": f"{tk_label}, the best of several inits on validation",
        "p2": "TK-2 on fastText vectors trained on the book corpus (no out-of-vocabulary word)",
        "p3": f"ensemble of the p1 inits of {tk_label} (mean of per-query z-scored scores)",
    }


#: The measures of the notebook's Table 2 (MAP and P@10 count rel >= 2 as relevant, ``trec_eval -l 2``).
TABLE_MEASURES: tuple[str, ...] = ("MAP", "nDCG@10", "P@10")
#: The notebook's Table 2, passage runs on TREC 2019: the "ReRank" task (the official top-1000
#: re-ranked) and the "Full" task (their own BM25 top-1000, re-ranking depth tuned on MS MARCO dev).
PAPER_RESULTS: pd.DataFrame = pd.DataFrame(
    [
        ("p1", "ReRank", 0.407, 0.640, 0.570),
        ("p2", "ReRank", 0.396, 0.636, 0.565),
        ("p3", "ReRank", 0.411, 0.641, 0.577),
        ("p1", "Full", 0.413, 0.667, 0.574),
        ("p2", "Full", 0.416, 0.671, 0.577),
        ("p3", "Full", 0.420, 0.671, 0.598),
    ],
    columns=["run", "task", *TABLE_MEASURES],
)
#: The notebook's Table 3: the best and worst DL19 queries of TUW19-p3 (full task), id → AP.
PAPER_BEST: dict[str, float] = {"146187": 0.851, "156493": 0.8225, "168216": 0.9495, "359349": 0.788, "855410": 1.0}
PAPER_WORST: dict[str, float] = {
    "1063750": 0.015,
    "1110199": 0.0911,
    "1112341": 0.1056,
    "1113437": 0.095,
    "19335": 0.0,
    "207786": 0.0919,
    "489204": 0.0583,
}
#: Query types for the "no clear query type" claim: the first matching pattern names the type.
QUERY_TYPES: tuple[tuple[str, str], ...] = (
    ("definition", r"\b(define|definition|meaning)\b"),
    ("what", r"^what\b"),
    ("how", r"^how\b"),
    ("why", r"^why\b"),
    ("who / when / where / which", r"^(who|when|where|which)\b"),
    ("yes / no", r"^(is|are|does|do|can|did|was|were|should)\b"),
)
#: The type of a query that matches none of :data:`QUERY_TYPES` (mostly keyword queries).
OTHER_TYPE = "keywords"


def best_init(validation: Mapping[str, float]) -> str:
    """The init with the best validation value (the first on ties, in the mapping's order): TUW19-p1."""
    if not validation:
        raise ValueError("no init to choose from: parameter 'validation' is empty")
    return max(validation, key=lambda name: (validation[name], -list(validation).index(name)))


def standardised(scores: Mapping[str, float]) -> dict[str, float]:
    """One query's scores as z-scores (mean 0, standard deviation 1); equal scores all become 0."""
    values = np.array(list(scores.values()), dtype=np.float64)
    spread = values.std()
    centred = values - values.mean()
    z = centred / spread if spread > 0 else np.zeros_like(values)
    return dict(zip(scores, z.tolist(), strict=True))


def ensemble(runs: Sequence[Run]) -> dict[str, dict[str, float]]:
    """TUW19-p3's combination: per query, the mean of each model's z-scored scores (module docstring).

    Every run must score the same candidates of the same queries; a difference is a ``ValueError``
    naming the query.
    """
    if not runs:
        raise ValueError("an ensemble needs at least one run")
    queries = set(runs[0])
    for index, run in enumerate(runs[1:], start=2):
        if set(run) != queries:
            raise ValueError(f"run {index} scores other queries than run 1: {sorted(set(run) ^ queries)[:5]}")
    combined: dict[str, dict[str, float]] = {}
    for qid in sorted(queries, key=query_order):
        candidates = set(runs[0][qid])
        for index, run in enumerate(runs[1:], start=2):
            if set(run[qid]) != candidates:
                raise ValueError(f"query {qid!r}: run {index} scores other candidates than run 1")
        parts = [standardised(run[qid]) for run in runs]
        combined[qid] = {pid: float(np.mean([part[pid] for part in parts])) for pid in runs[0][qid]}
    return combined


def run_table(
    runs: Mapping[str, Mapping[str, Run]], qrels: Mapping[str, Qrels], paper: pd.DataFrame = PAPER_RESULTS
) -> pd.DataFrame:
    """The notebook's Table 2 at book scale: one row per (test set, run), :data:`TABLE_MEASURES`.

    ``runs`` maps a run name (``"BM25"``, ``"p1"``, …) to its run per test set. DL19 rows get the
    notebook's ReRank numbers as ``paper …`` columns (the notebook has no DL20; BM25 has no paper row).
    """
    rows = []
    rerank = paper[paper["task"] == "ReRank"].set_index("run")
    for query_set in qrels:
        for name, by_set in runs.items():
            values = evaluation.evaluate(by_set[query_set], qrels[query_set], list(TABLE_MEASURES))
            row: dict[str, object] = {"set": query_set, "run": name, **values}
            for measure in TABLE_MEASURES:
                known = query_set == "dl19" and name in rerank.index
                row[f"paper {measure}"] = float(rerank.loc[name, measure]) if known else math.nan
            rows.append(row)
    return pd.DataFrame(rows)


def pairwise_tests(per_query: Mapping[str, pd.Series], alpha: float = 0.05) -> pd.DataFrame:
    """Paired two-tailed t-tests between every two runs on one measure, Bonferroni over all pairs.

    ``per_query`` maps a run name to its per-query values (indexed by qid); the tests use the queries
    every run shares. One row per pair (in the mapping's order): means, difference, p, corrected p.
    """
    names = list(per_query)
    if len(names) < 2:
        raise ValueError("pairwise tests need at least two runs")
    shared = sorted(set.intersection(*(set(values.index) for values in per_query.values())), key=query_order)
    if len(shared) < 2:
        raise ValueError("a paired t-test needs at least two queries shared by all runs")
    pairs = list(itertools.combinations(names, 2))
    rows = []
    for first, second in pairs:
        pair = {first: per_query[first].loc[shared], second: per_query[second].loc[shared]}
        test = evaluation.significance(pair, baseline=second, alpha=alpha).iloc[0]
        corrected = min(1.0, float(test["p"]) * len(pairs))
        rows.append({
            "run": first, "against": second, "mean": test["mean"], "mean against": test["baseline_mean"],
            "delta": test["delta"], "p": float(test["p"]), "p_bonferroni": corrected,
            "significant": bool(corrected < alpha), "queries": len(shared),
        })  # fmt: skip
    return pd.DataFrame(rows)


def query_type(text: str) -> str:
    """The query's type by :data:`QUERY_TYPES` (lower-cased text; :data:`OTHER_TYPE` when nothing matches)."""
    lowered = text.lower().strip()
    for name, pattern in QUERY_TYPES:
        if re.search(pattern, lowered):
            return name
    return OTHER_TYPE


def best_and_worst(ap: pd.Series, baseline_ap: pd.Series, queries: Mapping[str, str], count: int = 5) -> pd.DataFrame:
    """Table 3: the ``count`` best and worst queries by AP (ties by query order), with text, type and BM25's AP.

    With fewer than ``2 · count`` queries, each list holds half of them (the lists never overlap).

    Columns: ``group`` (best / worst), ``qid``, ``AP``, ``BM25 AP``, ``query``, ``type``, ``in notebook``
    (the same query is in the notebook's best or worst list).
    """
    if count < 1:
        raise ValueError(f"parameter 'count' must be >= 1, got {count}")
    count = min(count, max(1, len(ap) // 2))
    ordered = sorted(ap.index, key=lambda qid: (-ap[qid], query_order(qid)))
    groups = [("best", ordered[:count]), ("worst", list(reversed(ordered[-count:])))]
    paper = {**{qid: "best" for qid in PAPER_BEST}, **{qid: "worst" for qid in PAPER_WORST}}
    rows = [
        {
            "group": group, "qid": qid, "AP": float(ap[qid]), "BM25 AP": float(baseline_ap.get(qid, math.nan)),
            "query": queries[qid], "type": query_type(queries[qid]), "in notebook": paper.get(qid, ""),
        }
        for group, qids in groups
        for qid in qids
    ]  # fmt: skip
    return pd.DataFrame(rows)


def type_test(ap: pd.Series, queries: Mapping[str, str]) -> dict[str, float]:
    """Whether a query's type (:func:`query_type`) goes with its AP: Kruskal–Wallis over the types.

    Types with fewer than two queries are left out; fewer than two types left gives p = 1.
    Returns ``statistic``, ``p`` and ``types`` (the number tested).
    """
    by_type: dict[str, list[float]] = {}
    for qid, value in ap.items():
        by_type.setdefault(query_type(queries[str(qid)]), []).append(float(value))
    groups = [values for values in by_type.values() if len(values) >= 2]
    if len(groups) < 2 or len({value for values in groups for value in values}) < 2:
        return {"statistic": 0.0, "p": 1.0, "types": float(len(groups))}
    result = stats.kruskal(*groups)
    return {"statistic": float(result.statistic), "p": float(result.pvalue), "types": float(len(groups))}


def verdicts(
    table: pd.DataFrame, tests: pd.DataFrame, type_tests: Mapping[str, Mapping[str, float]], glove_run: str = "p1"
) -> list[str]:
    """One generated sentence per claim of the notebook (§3.3.1), each with its measured verdict.

    ``table`` is :func:`run_table`'s frame, ``tests`` :func:`pairwise_tests` on nDCG@10 with a ``set``
    column, ``type_tests`` :func:`type_test` per test set, ``glove_run`` the TK-2-on-GloVe run that p2's
    fastText is compared with (p1 when p1 is that model, else :data:`GLOVE_RUN`).
    """

    def mean(query_set: str, run: str, measure: str = "nDCG@10") -> float:
        return float(table[(table["set"] == query_set) & (table["run"] == run)][measure].iloc[0])

    def test(query_set: str, first: str, second: str) -> pd.Series:
        """The test of the pair, in whichever order :func:`pairwise_tests` put it."""
        pair = {first, second}
        rows = tests[(tests["set"] == query_set) & tests["run"].isin(pair) & tests["against"].isin(pair)]
        return rows.iloc[0]

    sets = list(dict.fromkeys(table["set"]))
    lines = []
    glove = [test(s, glove_run, "p2") for s in sets]
    glove_label = glove_run if glove_run == GLOVE_RUN else f"{glove_run} (GloVe)"
    same = not any(row["significant"] for row in glove)
    details = "; ".join(
        f"{s.upper()} {mean(s, glove_run):.3f} vs {mean(s, 'p2'):.3f}, p = {row['p_bonferroni']:.2g}"
        for s, row in zip(sets, glove, strict=True)
    )
    lines.append(
        f"**GloVe ≈ fastText: {'holds' if same else 'does not hold'}.** nDCG@10 of {glove_label} against p2 "
        f"(fastText): {details} (Bonferroni-corrected); "
        + ("no difference is significant." if same else "the difference is significant.")
    )
    gains = {s: mean(s, "p3") - mean(s, "p1") for s in sets}
    significant = [s for s in sets if test(s, "p1", "p3")["significant"]]
    helps = all(gain >= 0 for gain in gains.values())
    # round first, so that a change of less than 0.0005 reads +0.000, not -0.000
    changes = ", ".join(f"{round(gain, 3) + 0.0:+.3f} on {s.upper()}" for s, gain in gains.items())
    if helps and not significant:
        verdict = "holds"
    elif helps:
        verdict = "holds, and by more than a little"
    else:
        verdict = "does not hold"
    lines.append(
        f"**The ensemble helps a little: {verdict}.** p3 against p1, nDCG@10: {changes}"
        + (f" (significant on {', '.join(s.upper() for s in significant)})." if significant else " (not significant).")
    )
    separated = [s for s in sets if type_tests[s]["p"] < 0.05]
    pieces = "; ".join(f"{s.upper()} p = {type_tests[s]['p']:.2g}" for s in sets)
    lines.append(
        f"**No clear query type separates best from worst: {'does not hold' if separated else 'holds'}.** "
        f"A Kruskal–Wallis test of p3's AP across query types ({pieces}) "
        + (f"finds a difference on {', '.join(s.upper() for s in separated)}." if separated else "finds none.")
    )
    return lines


__all__ = [
    "OTHER_TYPE",
    "PAPER_BEST",
    "PAPER_RESULTS",
    "PAPER_WORST",
    "GLOVE_RUN",
    "QUERY_TYPES",
    "RUN_TAGS",
    "TABLE_MEASURES",
    "best_and_worst",
    "best_init",
    "ensemble",
    "pairwise_tests",
    "query_type",
    "run_descriptions",
    "run_table",
    "standardised",
    "type_test",
    "verdicts",
]
