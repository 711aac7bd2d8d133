"""Where relevance sits in a document, and what that does to a ranking (chapter 9; lecture 8, slides 13 and 37).

The controlled position sweep (:func:`lib.data.assembled_documents.position_sweep`) rebuilds one document per
query with its relevant passage at several offsets in word pieces. :func:`sweep_ranks` reads a model's scores of
those documents: each variant ranked among the query's **non-relevant** assembled documents alone (1: above all of
them), so each offset is measured on the same competitors. :func:`sweep_tests` tests the lecture's expectation —
a model that reads only the start of a document (FirstP) ranks it lower once its relevance sits beyond what it
reads, a model that reads all of it (MaxP, TKL, IDCM) does not — within each query: the reciprocal rank at each
offset against the same query's at offset 0, a paired two-tailed t-test, Bonferroni over every test of the year
(models × offsets). The document's end lies beyond what every model reads: there every model must fall (the
design's positive control). :func:`window_split_table` asks whether a reader of windows (MaxP) ranks a document
lower when its windows split the relevant passage between two of them (:func:`split_by_windows`).

:func:`coverage_table` asks the same of a model that *points* at a region (TKL, slide 37): does its best region
overlap the relevant passage more often than a region of the same width placed uniformly at random would? Each
document ``i`` has its own chance ``p_i`` (its length and the passage's), so the number of documents covered by
chance follows a Poisson-binomial distribution; :func:`chance_p_value` is its exact upper tail
``P(X ≥ observed)`` (one-sided), computed by convolving the documents' Bernoulli distributions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from lib.core.types import Run
from lib.data.assembled_documents import END, Layout, SweepVariant


def sweep_ranks(
    variant_scores: Run, scores: Run, layouts: Mapping[str, Layout], variants: Mapping[str, SweepVariant]
) -> pd.DataFrame:
    """One row per sweep document of ``variant_scores``: ``qid``, ``docid``, the ``target`` and actual ``offset``
    (word pieces) of its relevant passage and that passage's ``length``, its ``rank`` among the query's non-relevant
    documents in ``scores`` (by ``layouts``; a tie counts against it) and ``reciprocal`` (1 / rank)."""
    rows = []
    for qid, by_variant in variant_scores.items():
        others = [score for doc, score in scores.get(qid, {}).items() if doc in layouts and
                  layouts[doc].relevant_at is None]  # fmt: skip
        for docid, score in by_variant.items():
            rank = 1 + sum(other >= score for other in others)
            variant = variants[docid]
            rows.append({"qid": qid, "docid": docid, "target": variant.target, "offset": variant.offset,
                         "length": variant.length, "rank": rank, "reciprocal": 1.0 / rank})  # fmt: skip
    return pd.DataFrame(rows, columns=["qid", "docid", "target", "offset", "length", "rank", "reciprocal"])


def sweep_tests(ranks: Mapping[str, pd.DataFrame], alpha: float = 0.05) -> pd.DataFrame:
    """Per model (``ranks``: :func:`sweep_ranks`' frames by model) and target offset: the queries, the mean
    reciprocal rank there and at offset 0, their mean difference, the paired two-tailed t-test's p against offset 0
    (queries with both), Bonferroni over every test of the frame, whether significant at ``alpha`` and the reading
    (``below``, ``above`` or ``holds``). Offset 0 itself is a row of its own, the ``reference`` (no test)."""
    rows = []
    for model, frame in ranks.items():
        by_target = frame.pivot_table(index="qid", columns="target", values="reciprocal")
        if 0 not in by_target.columns:
            raise ValueError(f"model {model!r}: the sweep has no target offset 0 to compare against")
        for target in by_target.columns:
            both = by_target[target].notna() & by_target[0].notna()
            here, base = by_target.loc[both, target], by_target.loc[both, 0]
            if target == 0:
                p = float("nan")
            else:  # no difference at all (BM25, which reads every word wherever it sits): nothing to reject
                p = float(stats.ttest_rel(here, base).pvalue) if (here != base).any() else 1.0
            rows.append({"model": model, "target": int(target), "queries": int(both.sum()),
                         "mean offset": float(frame.loc[frame["target"] == target, "offset"].mean()),
                         "reciprocal rank": float(here.mean()), "at 0": float(base.mean()),
                         "delta": float((here - base).mean()), "p": p})  # fmt: skip
    table = pd.DataFrame(rows)
    tests = int(table["p"].notna().sum())
    table["p_bonferroni"] = (table["p"].fillna(1.0) * tests).clip(upper=1.0).where(table["p"].notna())
    table["significant"] = table["p_bonferroni"] < alpha
    table["reading"] = ["reference" if target == 0 else ("below" if delta < 0 else "above") if significant else "holds"
                        for target, delta, significant in zip(table["target"], table["delta"], table["significant"],
                                                              strict=True)]  # fmt: skip
    return table


def split_by_windows(offset: int, length: int, size: int, stride: int) -> bool:
    """Whether a passage of ``length`` pieces starting at ``offset`` lies in no single window of ``size`` pieces
    started every ``stride`` pieces (MaxP's windows, :func:`lib.models.long_bert.document_windows`): the last window
    starting at or before it is the only one that can hold it whole."""
    start = offset // stride * stride
    return offset + length > start + size


def window_split_table(ranks: pd.DataFrame, size: int, stride: int) -> pd.DataFrame:
    """A reader of windows on the sweep (``ranks``: :func:`sweep_ranks`' frame of one model), inside the document
    and past its start (targets other than 0 and the end): the documents whose relevant passage lies whole in one
    window against those whose passage its windows split, each with its count and mean reciprocal rank, and the
    two-sided Mann–Whitney p between them."""
    inside = ranks[(ranks["target"] != 0) & (ranks["target"] != END)]
    split = [split_by_windows(offset, length, size, stride)
             for offset, length in zip(inside["offset"], inside["length"], strict=True)]  # fmt: skip
    groups = {"whole in one window": inside[[not value for value in split]], "split by a boundary": inside[split]}
    p = (float(stats.mannwhitneyu(*(frame["reciprocal"] for frame in groups.values())).pvalue)
         if all(len(frame) for frame in groups.values()) else float("nan"))  # fmt: skip
    return pd.DataFrame([{"relevant passage": name, "documents": len(frame),
                          "reciprocal rank": float(frame["reciprocal"].mean()) if len(frame) else float("nan"),
                          "p (Mann–Whitney)": p} for name, frame in groups.items()])  # fmt: skip


def chance_p_value(hits: Sequence[bool], chance: Sequence[float]) -> float:
    """``P(X ≥ sum(hits))`` for ``X`` the number of hits of independent Bernoulli trials with probabilities ``chance``
    (the Poisson-binomial upper tail, exact; module docstring). 1.0 for no trials."""
    if len(hits) != len(chance):
        raise ValueError(f"'hits' and 'chance' differ in length: {len(hits)} and {len(chance)}")
    probabilities = np.asarray(chance, dtype=float)
    if ((probabilities < 0) | (probabilities > 1)).any():
        raise ValueError("every 'chance' must lie in [0, 1]")
    distribution = np.ones(1)  # P(X = j) after the trials so far
    for p in probabilities:
        distribution = np.convolve(distribution, [1.0 - p, p])
    return float(min(1.0, distribution[int(np.sum(hits)) :].sum()))


def coverage_table(regions: pd.DataFrame, group: str, alpha: float = 0.05) -> pd.DataFrame:
    """Per value of ``group`` in ``regions`` (one row per document with boolean ``covers`` and its ``chance``): the
    documents, the share covered, the mean chance, the one-sided :func:`chance_p_value` and whether it is
    significant at ``alpha`` (Bonferroni over the groups)."""
    rows = []
    groups = list(regions.groupby(group, sort=True))
    for name, frame in groups:
        p = chance_p_value(frame["covers"].astype(bool).tolist(), frame["chance"].tolist())
        corrected = min(1.0, p * len(groups))
        rows.append({group: name, "documents": len(frame), "covers": float(frame["covers"].mean()),
                     "chance": float(frame["chance"].mean()), "p_bonferroni": corrected,
                     "above chance": corrected < alpha})  # fmt: skip
    return pd.DataFrame(rows)


__all__ = [
    "chance_p_value", "coverage_table", "split_by_windows", "sweep_ranks", "sweep_tests", "window_split_table",
]  # fmt: skip
