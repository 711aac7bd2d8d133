"""Chapter 4's reading: what the book's query clusters say about where TK finds the first relevant passage.

The sentences follow the paper's Table 3 analogue (median rank of the first relevant passage per
system, over all queries and per cluster): how many clusters the TK improves over BM25, and the two
clusters the paper singles out, found here by their queries' words ("what is / what are" openings,
definition words: :func:`lib.analyses.query_clusters.cluster_most`).
"""

from __future__ import annotations

import pandas as pd

from lib.analyses.query_clusters import DEFINITION_WORDS


def example_query_reading(example: pd.DataFrame, described: pd.DataFrame) -> str:
    """Where the paper's example query (``example``: its row of the clustered queries, or none) falls: its
    cluster's most frequent opening and most characteristic terms (``described``: columns "opening", "terms")."""
    if not len(example):
        return "The paper's example query (dev-small id 2) is not among the clustered queries of this profile."
    cluster = int(example["cluster"].iloc[0])
    return (
        f"The paper's example query {example['text'].iloc[0]!r} (dev-small id 2, explained in chapter 5) "
        f"falls in cluster {cluster}, whose queries most often open with "
        f"{described.loc[cluster, 'opening']} and whose most characteristic terms are "
        f"{described.loc[cluster, 'terms']}."
    )


def cluster_ranks(per_cluster: pd.DataFrame, cluster: int, tk_label: str, bert_label: str) -> str:
    """One cluster's median first-relevant ranks by system, in words."""
    if cluster not in per_cluster.index:
        return f"cluster {cluster} has no judged TREC DL query"
    row = per_cluster.loc[cluster]
    return (
        f"cluster {cluster} ({int(row['queries'])} TREC DL queries): BM25 {row['BM25']:g}, "
        f"{tk_label} {row[tk_label]:g}, {bert_label} {row[bert_label]:g}"
    )


def table3_reading(
    table3: pd.DataFrame, tk_label: str, bert_label: str, definition_cluster: int, what_is_cluster: int
) -> str:
    """The Table 3 analogue in words (``table3``: median first-relevant rank per system and "queries", by
    cluster, and over "all"): the overall medians, in how many clusters the TK beats, loses to or ties BM25,
    the definition-like and "what is" clusters, and the clusters' sizes."""
    overall = table3.loc["all"]
    per_cluster = table3.drop(index="all")
    gain = per_cluster["BM25"] - per_cluster[tk_label]  # > 0: the TK finds the first relevant passage earlier
    better = gain[gain > 0].index.tolist()
    worse = gain[gain < 0].index.tolist()
    lines = [
        f"Over all {int(overall['queries'])} TREC DL queries with a relevant passage, the median rank of "
        f"the first relevant passage is {overall['BM25']:g} for BM25, {overall[tk_label]:g} for {tk_label} and "
        f"{overall[bert_label]:g} for {bert_label}.",
        f"{tk_label} finds the first relevant passage earlier than BM25 (lower median) in {len(better)} of "
        f"{len(per_cluster)} clusters"
        + (f" ({', '.join(map(str, better))})" if better else "")
        + f", later in {len(worse)}"
        + (f" ({', '.join(map(str, worse))})" if worse else "")
        + f", and ties it in {len(per_cluster) - len(better) - len(worse)}.",
        f"The definition-like cluster (the most queries with {', '.join(sorted(DEFINITION_WORDS))}) is "
        f'{cluster_ranks(per_cluster, definition_cluster, tk_label, bert_label)}; the "what is / what are" '
        f"cluster is {cluster_ranks(per_cluster, what_is_cluster, tk_label, bert_label)}.",
        f"Clusters hold {int(per_cluster['queries'].min())} to {int(per_cluster['queries'].max())} TREC DL queries "
        f"(median {per_cluster['queries'].median():g}).",
    ]
    return " ".join(lines)
