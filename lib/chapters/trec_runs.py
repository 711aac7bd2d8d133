"""Chapter 7: the TU Wien TREC Deep Learning 2019 passage runs re-created at book scale.

Source: Hofstätter, Zlabinger, Hanbury, *TU Wien @ TREC Deep Learning '19 – Simple Contextualization
for Re-ranking* (the TREC notebook): §3.2 and Table 1 (the runs), §3.3 and Table 2 (their results),
Table 3 (the best and worst queries of TUW19-p3).

- **TUW19-p1**: TK on GloVe, "best validation run of multiple inits" — :func:`lib.experiments.init_selection.best_init`
  picks, among models trained from several seeds, the one with the best value of the measure early stopping
  watches (the profile's ``validation_metric``; MRR@10 in the notebook). The book's p1 is the TK chapter 2
  chose on validation (GloVe TK at book scale stays level with BM25; a deviation the book states).
- **TUW19-p2**: TK on fastText vectors instead of GloVe (vectors trained on the book corpus; fastText's
  character n-grams give every word of the corpus a vector, so nothing is out of vocabulary). Its
  claim is about the vectors, so the book compares it with TK-2 on GloVe (:data:`GLOVE_RUN`, chapter 2's
  TK-2: the same schedule and triples) whenever p1 is another TK.
- **TUW19-p3**: "ensemble of multiple TUW19-p1 configurations". The notebook does not say how scores
  are combined; :func:`lib.reranking.fusion.ensemble` standardises each model's scores within a query
  (z-scores: TK's scores live on an arbitrary scale that differs between inits) and averages them.

Runs are written in TREC format with the tags of :data:`RUN_TAGS`. :func:`run_table` is the analogue of
the notebook's Table 2 with the notebook's own numbers beside it (:data:`PAPER_RESULTS`),
:func:`lib.evaluation.comparison.pairwise_tests` the paired t-tests between the runs, :func:`best_and_worst`
Table 3 (:mod:`lib.analyses.query_types`), and :func:`verdicts` the measured verdict on each of the
notebook's three claims.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from lib.analyses import query_types
from lib.core.types import Qrels, Run
from lib.evaluation.comparison import compare

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
        means = compare({name: by_set[query_set] for name, by_set in runs.items()}, qrels[query_set], TABLE_MEASURES)
        for name in runs:
            row: dict[str, object] = {"set": query_set, "run": name, **means.loc[name].to_dict()}
            for measure in TABLE_MEASURES:
                known = query_set == "dl19" and name in rerank.index
                row[f"paper {measure}"] = float(rerank.loc[name, measure]) if known else math.nan
            rows.append(row)
    return pd.DataFrame(rows)


def best_and_worst(ap: pd.Series, bm25_ap: pd.Series, queries: Mapping[str, str], count: int = 5) -> pd.DataFrame:
    """Table 3: :func:`lib.analyses.query_types.best_and_worst`, and ``in notebook``: the list (best / worst)
    of the notebook's Table 3 that names the same query."""
    paper = {**{qid: "best" for qid in PAPER_BEST}, **{qid: "worst" for qid in PAPER_WORST}}
    table = query_types.best_and_worst(ap, bm25_ap, queries, count)
    return table.assign(**{"in notebook": [paper.get(qid, "") for qid in table["qid"]]})


def verdicts(
    table: pd.DataFrame, tests: pd.DataFrame, type_tests: Mapping[str, Mapping[str, float]], glove_run: str = "p1"
) -> list[str]:
    """One generated sentence per claim of the notebook (§3.3.1), each with its measured verdict.

    ``table`` is :func:`run_table`'s frame, ``tests`` :func:`lib.evaluation.comparison.pairwise_tests` on
    nDCG@10 with a ``set`` column, ``type_tests`` :func:`lib.analyses.query_types.type_test` per test set,
    ``glove_run`` the TK-2-on-GloVe run that p2's fastText is compared with (p1 when p1 is that model, else
    :data:`GLOVE_RUN`).
    """

    def mean(query_set: str, run: str, measure: str = "nDCG@10") -> float:
        return float(table[(table["set"] == query_set) & (table["run"] == run)][measure].iloc[0])

    def test(query_set: str, first: str, second: str) -> pd.Series:
        """The test of the pair, in whichever order the pairwise tests put it."""
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
    "GLOVE_RUN",
    "PAPER_BEST",
    "PAPER_RESULTS",
    "PAPER_WORST",
    "RUN_TAGS",
    "TABLE_MEASURES",
    "best_and_worst",
    "run_descriptions",
    "run_table",
    "verdicts",
]
