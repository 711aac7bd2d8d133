"""Chapter 7: the TU Wien TREC Deep Learning 2019 passage runs re-created at book scale, and their results.

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

Runs are written in TREC format with the tags of :data:`RUN_TAGS`. :func:`run_table` evaluates them,
the analogue of the notebook's Table 2 with the notebook's own numbers beside it (:data:`PAPER_RESULTS`),
and :func:`best_and_worst` is Table 3 (:mod:`lib.analyses.query_types`) beside the notebook's lists.
The chapter's run descriptions and its verdicts on the notebook's claims are :mod:`lib.chapters.trec_runs`'s.
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
