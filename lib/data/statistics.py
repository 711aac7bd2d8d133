"""Descriptive statistics of the converted book data (chapter 1's data tables)."""

from __future__ import annotations

import pandas as pd

from lib.data import load_collection, load_qrels, load_queries
from lib.data.convert import QUERY_SETS

#: TREC DL passage convention: binary measures count grade >= 2 as relevant.
RELEVANT_GRADE = 2


def query_set_statistics(query_sets: tuple[str, ...] = ("dl19", "dl20", "dl21")) -> pd.DataFrame:
    """One row per judged query set: queries, judgments, how many have passage text, grade counts."""
    corpora = {corpus: load_collection(corpus) for corpus in {QUERY_SETS[s][2] for s in query_sets}}
    rows = []
    for query_set in query_sets:
        corpus = QUERY_SETS[query_set][2]
        texts = corpora[corpus]
        qrels = load_qrels(query_set)
        pairs = [(pid, grade) for judged in qrels.values() for pid, grade in judged.items()]
        rows.append(
            {
                "set": query_set,
                "corpus": corpus,
                "queries": len(load_queries(query_set)),
                "judgments": len(pairs),
                "judgments with text": sum(pid in texts for pid, _ in pairs),
                "grade >= 1": sum(grade >= 1 for _, grade in pairs),
                "grade >= 1 with text": sum(grade >= 1 and pid in texts for pid, grade in pairs),
                f"relevant (grade >= {RELEVANT_GRADE})": sum(grade >= RELEVANT_GRADE for _, grade in pairs),
                "judgments per query": len(pairs) / max(len(qrels), 1),
            }
        )
    return pd.DataFrame(rows).set_index("set")
