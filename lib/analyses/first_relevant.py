"""Rank of the first relevant passage, and its median per query cluster (TK paper §5.3, Table 3).

Table 3 of the paper compares BM25, TK and BERT by the **median rank of the first relevant
passage** of the queries of each cluster ("a robust measure inspired by MRR"), with the number of
queries per cluster and a last row over all queries with at least one relevant passage.

- Rankings follow trec_eval (:func:`lib.core.types.ranking_from_run`), cut at ``depth``.
- Relevant means grade ≥ ``rel`` (2 by default, the TREC DL passage convention of the book).
- Queries without any relevant judgment are left out (the paper's "with ≥ 1 relevant").
- **No relevant passage retrieved**: when none of a run's top ``depth`` passages is relevant, the
  rank is **``depth + 1``** ("beyond the depth"), so that the query still counts, as a miss that is
  worse than every retrieved rank (:data:`NOT_FOUND_RULE`). All systems are cut at the same depth,
  so their medians compare.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from lib.core.types import Qrels, Run, ranking_from_run

#: What a query whose run retrieves no relevant passage in its top ``depth`` counts as.
NOT_FOUND_RULE = "depth + 1"
#: The index label of the table's last row, over all queries.
ALL = "all"


def first_relevant_rank(ranking: Sequence[str], judged: Mapping[str, int], depth: int, rel: int = 2) -> int:
    """1-based rank of the first passage of ``ranking[:depth]`` with grade ≥ ``rel``; ``depth + 1`` if none."""
    if depth < 1:
        raise ValueError(f"parameter 'depth' must be >= 1, got {depth}")
    for position, pid in enumerate(ranking[:depth], start=1):
        if judged.get(pid, 0) >= rel:
            return position
    return depth + 1


def first_relevant_ranks(
    runs: Mapping[str, Run], qrels: Qrels, qids: Iterable[str] | None = None, depth: int = 100, rel: int = 2
) -> pd.DataFrame:
    """The first-relevant rank of every query (rows, index ``qid``) under every system (columns, ``runs``' order).

    ``qids`` (default: every judged query) is narrowed to the queries with at least one passage of
    grade ≥ ``rel``. A kept query missing from a run is a ``KeyError`` naming the system and query:
    restrict ``qids`` to the queries the runs cover.
    """
    if not runs:
        raise ValueError("parameter 'runs' is empty: no system to rank")
    qids = list(qrels) if qids is None else list(qids)
    kept = [qid for qid in qids if any(grade >= rel for grade in qrels.get(qid, {}).values())]
    table = {}
    for system, run in runs.items():
        missing = [qid for qid in kept if qid not in run]
        if missing:
            raise KeyError(f"system {system!r} has no ranking for query {missing[0]!r} ({len(missing)} missing)")
        table[system] = [first_relevant_rank(ranking_from_run(run[qid]), qrels[qid], depth, rel) for qid in kept]
    return pd.DataFrame(table, index=pd.Index(kept, name="qid"), columns=list(runs))


def median_rank_table(ranks: pd.DataFrame, clusters: Mapping[str, int]) -> pd.DataFrame:
    """Table 3: per cluster, the number of queries (``queries``) and each system's median first-relevant rank.

    ``ranks`` is :func:`first_relevant_ranks`' frame; ``clusters`` maps query ids to cluster ids. Rows
    are the clusters that have at least one query of ``ranks`` (ascending id), then the row
    :data:`ALL` over every query. A query of ``ranks`` without a cluster is a ``KeyError``.
    """
    if ranks.empty:
        raise ValueError("parameter 'ranks' has no query: nothing to tabulate")
    missing = [qid for qid in ranks.index if qid not in clusters]
    if missing:
        raise KeyError(f"query {missing[0]!r} of 'ranks' has no cluster in 'clusters' ({len(missing)} missing)")
    cluster = pd.Series([int(clusters[qid]) for qid in ranks.index], index=ranks.index, name="cluster")
    grouped = ranks.groupby(cluster)
    table = grouped.median().astype(float)
    table.insert(0, "queries", grouped.size())
    overall = pd.DataFrame([[len(ranks), *ranks.median().astype(float)]], columns=table.columns, index=[ALL])
    table = pd.concat([table.set_axis(table.index.astype(object)), overall])
    table["queries"] = table["queries"].astype(int)
    table.index.name = "cluster"
    return table


def count_not_found(ranks: pd.DataFrame, depth: int) -> pd.Series:
    """Per system, the number of queries whose rank is ``depth + 1`` (no relevant passage in the top ``depth``)."""
    return pd.Series(np.sum(ranks.to_numpy() == depth + 1, axis=0), index=ranks.columns, name="not found")
