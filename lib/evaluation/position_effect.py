"""Where relevance sits in a document, and what that does to a ranking (chapter 9; lecture 8, slides 13 and 37).

On assembled documents (:mod:`lib.data.assembled_documents`) the position of each relevant document's relevant
passage is known. :func:`relevant_ranks` reads a run per relevant document: the document's rank among the
query's **non-relevant** documents only (1: above all of them), its reciprocal and the relative position of its
relevant passage (0: first, 1: last), so that every relevant document is measured alone, whatever its query's
other relevant documents do. :func:`by_position` averages the reciprocal ranks per position bin, and
:func:`position_trend` tests the lecture's expectation — a model that reads only the start of a document (FirstP)
ranks a document lower the later its relevance sits, a model that reads all of it (MaxP, TKL, IDCM) does not —
with Spearman's rank correlation between position and reciprocal rank (two-tailed), per model.

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

from lib.core.types import Run, ranking_from_run
from lib.data.assembled_documents import Layout


def relevant_ranks(run: Run, layouts: Mapping[str, Layout]) -> pd.DataFrame:
    """One row per relevant document of ``run`` (its ``layouts`` say which): ``qid``, ``docid``, ``position``
    (relative, 0–1), ``rank`` among the query's non-relevant documents and ``reciprocal`` (1 / rank)."""
    rows = []
    for qid, scores in run.items():
        ranking = ranking_from_run(scores)
        relevant = [doc for doc in ranking if layouts[doc].relevant_at is not None]
        for doc in relevant:
            above = sum(1 for other in ranking[: ranking.index(doc)] if layouts[other].relevant_at is None)
            rows.append({"qid": qid, "docid": doc, "position": layouts[doc].relative_position, "rank": above + 1,
                         "reciprocal": 1.0 / (above + 1)})  # fmt: skip
    return pd.DataFrame(rows, columns=["qid", "docid", "position", "rank", "reciprocal"])


def by_position(ranks: Mapping[str, pd.DataFrame], bins: int) -> pd.DataFrame:
    """Mean reciprocal rank per model (columns, in ``ranks``' order) and per bin of the relative position (rows:
    ``bins`` equal bins of [0, 1], labelled by their range), with the number of documents per bin."""
    edges = [i / bins for i in range(bins + 1)]
    labels = [f"{low:.0%}–{high:.0%}" for low, high in zip(edges, edges[1:], strict=False)]
    table = {}
    for name, frame in ranks.items():
        binned = pd.cut(frame["position"], edges, labels=labels, include_lowest=True)
        table[name] = frame.groupby(binned, observed=False)["reciprocal"].mean()
        table["documents"] = frame.groupby(binned, observed=False)["reciprocal"].size()
    result = pd.DataFrame(table)
    return result[[*ranks, "documents"]].rename_axis("relevant passage at")


def position_trend(ranks: Mapping[str, pd.DataFrame], alpha: float = 0.05) -> pd.DataFrame:
    """Per model: Spearman's ρ between the relevant passage's position and the reciprocal rank, its two-tailed p,
    whether it is significant at ``alpha`` (Bonferroni over the models) and the reading: ``falls`` (ρ < 0,
    significant), ``rises`` or ``no significant trend``."""
    rows = []
    for name, frame in ranks.items():
        rho, p = stats.spearmanr(frame["position"], frame["reciprocal"])
        corrected = min(1.0, float(p) * len(ranks))
        significant = corrected < alpha
        trend = ("falls" if rho < 0 else "rises") if significant else "no significant trend"
        rows.append({"model": name, "documents": len(frame), "rho": float(rho), "p": float(p),
                     "p_bonferroni": corrected, "significant": significant, "trend": trend})  # fmt: skip
    return pd.DataFrame(rows)


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


__all__ = ["by_position", "chance_p_value", "coverage_table", "position_trend", "relevant_ranks"]
