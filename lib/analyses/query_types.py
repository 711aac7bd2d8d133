"""Query types and the queries a system does best and worst on.

The TU Wien TREC 2019 notebook (Hofstätter, Zlabinger, Hanbury, §3.3.1 and Table 3) lists the best and
worst DL19 queries of its ensemble and finds "no clear query type" that separates them. A query's type
here is read from its first words (:data:`QUERY_TYPES`); :func:`type_test` asks whether a per-query
measure differs between the types (Kruskal–Wallis), :func:`best_and_worst` lists the extremes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

import pandas as pd
from scipy import stats

from lib.core.types import query_order

#: Query types: the first matching pattern names the type.
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


def query_type(text: str) -> str:
    """The query's type by :data:`QUERY_TYPES` (lower-cased text; :data:`OTHER_TYPE` when nothing matches)."""
    lowered = text.lower().strip()
    for name, pattern in QUERY_TYPES:
        if re.search(pattern, lowered):
            return name
    return OTHER_TYPE


def best_and_worst(ap: pd.Series, bm25_ap: pd.Series, queries: Mapping[str, str], count: int = 5) -> pd.DataFrame:
    """The ``count`` best and worst queries by AP (ties by query order), with text, type and BM25's AP.

    With fewer than ``2 · count`` queries, each list holds half of them (the lists never overlap).
    Columns: ``group`` (best / worst), ``qid``, ``AP``, ``BM25 AP``, ``query``, ``type``.
    """
    if count < 1:
        raise ValueError(f"parameter 'count' must be >= 1, got {count}")
    count = min(count, max(1, len(ap) // 2))
    ordered = sorted(ap.index, key=lambda qid: (-ap[qid], query_order(qid)))
    groups = [("best", ordered[:count]), ("worst", list(reversed(ordered[-count:])))]
    rows = [
        {
            "group": group, "qid": qid, "AP": float(ap[qid]), "BM25 AP": float(bm25_ap.get(qid, math.nan)),
            "query": queries[qid], "type": query_type(queries[qid]),
        }
        for group, qids in groups
        for qid in qids
    ]  # fmt: skip
    return pd.DataFrame(rows)


def type_test(values: pd.Series, queries: Mapping[str, str]) -> dict[str, float]:
    """Whether a query's type (:func:`query_type`) goes with its per-query ``values`` (AP in the notebook):
    Kruskal–Wallis over the types.

    Types with fewer than two queries are left out; fewer than two types left gives p = 1.
    Returns ``statistic``, ``p`` and ``types`` (the number tested).
    """
    by_type: dict[str, list[float]] = {}
    for qid, value in values.items():
        by_type.setdefault(query_type(queries[str(qid)]), []).append(float(value))
    groups = [group for group in by_type.values() if len(group) >= 2]
    if len(groups) < 2 or len({value for group in groups for value in group}) < 2:
        return {"statistic": 0.0, "p": 1.0, "types": float(len(groups))}
    result = stats.kruskal(*groups)
    return {"statistic": float(result.statistic), "p": float(result.pvalue), "types": float(len(groups))}
