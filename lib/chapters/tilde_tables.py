"""Chapter 6's result tables: Table 2 (TILDE paper), the ablation as shown (Table 3), index size (§3.2).

- :func:`training_data_table` and :func:`loss_curves` — what the models learn from, and how.
- :func:`effectiveness_table` — Table 2: each system's mean measures and whether it differs significantly
  from the first stage it re-ranks (paired t-test, Bonferroni over that first stage's rows,
  :func:`lib.evaluation.comparison.compare_per_query`); :func:`versus_random` tests TILDE against BM25's
  candidates in random order.
- :func:`marked_table2` and :func:`marked_ablation` (of :func:`lib.experiments.tilde_ablation.ablation`) show
  the values with a † where significant.
- :func:`index_size` — bytes per passage (TILDE's and TILDEv2's) and what they make for a whole collection.

The α sweep (Figure 2) and storage precision are computed in :mod:`lib.experiments.tilde_scorings`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd

from lib.core.types import Qrels, Run
from lib.evaluation import measures as evaluation
from lib.evaluation.comparison import compare, compare_per_query, significance_table
from lib.training.tilde import TildeTrainingData, TildeTrainingResult
from lib.training.tilde_variants import VARIANTS

#: MS MARCO passage v1's size: what the index would hold for the full collection.
MS_MARCO_PASSAGES = 8_841_823


def index_size(bytes_per_passage: Mapping[str, float], passages: int) -> pd.DataFrame:
    """Per model (``{label: bytes per passage}``): bytes per passage, and gigabytes for the book's indexed
    ``passages`` and for all of MS MARCO passage (8.8M)."""
    if passages < 0 or any(value < 0 for value in bytes_per_passage.values()):
        raise ValueError("the passage count and bytes per passage must not be negative")
    return pd.DataFrame(
        [
            {
                "model": label,
                "bytes per passage": value,
                "GB, the book's index": passages * value / 1e9,
                "GB, MS MARCO passage (8.8M)": MS_MARCO_PASSAGES * value / 1e9,
            }
            for label, value in bytes_per_passage.items()
        ]
    ).set_index("model")


def training_data_table(data: TildeTrainingData, steps: int, batch_size: int) -> pd.DataFrame:
    """Per source of training examples (``data.sources``): its examples, and the epochs that ``steps``
    batches of ``batch_size`` examples make over all of them (the pairs and the reconstruction passages)."""
    examples = len(data.pairs) + len(data.reconstruction)
    rows = [{"source": source, "examples": count} for source, count in data.sources.items()]
    rows.append({"source": "all", "examples": examples})
    table = pd.DataFrame(rows).set_index("source")
    table["epochs"] = [math.nan] * (len(rows) - 1) + [steps * batch_size / max(1, examples)]
    return table


def loss_curves(trained: Mapping[str, TildeTrainingResult]) -> pd.DataFrame:
    """Every variant's loss per step, long format: ``variant`` (its label), ``step`` (from 1), ``loss``."""
    return pd.DataFrame(
        [
            {"variant": VARIANTS[name].label, "step": step + 1, "loss": loss}
            for name, result in trained.items()
            for step, loss in enumerate(result.losses)
        ]
    )


def effectiveness_table(
    systems: Mapping[str, Mapping[str, Run]],
    baseline_of: Mapping[str, Mapping[str, str]],
    qrels: Mapping[str, Qrels],
    measures: Sequence[str] = ("nDCG@10", "MAP"),
) -> pd.DataFrame:
    """Table 2: one row per system, columns ``(SET, measure)`` with the mean and ``(SET, "measure †")`` with
    whether it differs significantly from its baseline (``baseline_of[set][system]``, the first stage it
    re-ranks; paired t-test, Bonferroni over the systems of that baseline,
    :func:`lib.evaluation.comparison.compare_per_query`).

    ``systems`` maps test sets to ``{system: run}``; a baseline with no other system has no test.
    """
    rows: dict[str, dict[tuple[str, str], float | bool]] = {}
    for test_set, runs in systems.items():
        per_query = {name: evaluation.per_query(run, qrels[test_set], list(measures)) for name, run in runs.items()}
        for name, means in compare_per_query(per_query).iterrows():
            rows.setdefault(str(name), {}).update({(test_set.upper(), m): means[m] for m in measures})
        for baseline in set(baseline_of[test_set].values()):
            group = [name for name in runs if baseline_of[test_set][name] == baseline]
            if len(group) < 2:
                continue
            compared = compare_per_query({name: per_query[name] for name in group}, baseline).drop(index=baseline)
            for measure in measures:
                for name, significant in compared[f"{measure} significant"].items():
                    rows[str(name)][(test_set.upper(), f"{measure} †")] = bool(significant)
    table = pd.DataFrame(rows).T
    table.columns = pd.MultiIndex.from_tuples(table.columns)
    return table


#: The random order every TILDE re-ranking of BM25 is tested against (the issue's bar: better than chance).
RANDOM_ROW = "BM25 in random order"


def versus_random(
    systems: Mapping[str, Mapping[str, Run]],
    qrels: Mapping[str, Qrels],
    tested: Sequence[str] = ("BM25 + TILDE-QL", "BM25 + TILDE-QDL"),
    measure: str = "nDCG@10",
) -> pd.DataFrame:
    """Each ``tested`` system against BM25's candidates in random order, per test set: paired t-test on
    ``measure``, Bonferroni over the tested systems (:func:`lib.evaluation.comparison.compare`).

    Returns one row per (set, system): the system's mean, the random order's, ``p`` and ``significant``.
    """
    rows = []
    for test_set, runs in systems.items():
        names = [name for name in (RANDOM_ROW, *tested) if name in runs]
        if RANDOM_ROW not in runs or len(names) < 2:
            continue
        compared = compare({name: runs[name] for name in names}, qrels[test_set], [measure], RANDOM_ROW)
        for _, test in significance_table(compared, measure).iterrows():
            rows.append(
                {
                    "set": test_set.upper(),
                    "system": test["system"],
                    measure: test["mean"],
                    "random order": test["baseline_mean"],
                    "p (Bonferroni)": test["p_bonferroni"],
                    "significant": bool(test["significant"]),
                }
            )
    return pd.DataFrame(rows)


def mark(value: float, significant: object) -> str:
    """``value`` with three decimals, and " †" when ``significant`` is ``True``."""
    return f"{value:.3f}" + (" †" if significant is True else "")


def marked_table2(table: pd.DataFrame, test_sets: Sequence[str], measures: Sequence[str]) -> pd.DataFrame:
    """:func:`effectiveness_table` as shown: each measure's mean with a † where significant."""
    return pd.DataFrame(
        {
            (test_set.upper(), measure): [
                mark(
                    table.loc[name, (test_set.upper(), measure)],
                    table.loc[name].get((test_set.upper(), f"{measure} †")),
                )
                for name in table.index
            ]
            for test_set in test_sets
            for measure in measures
        },
        index=table.index,
    )


def table2_value(table: pd.DataFrame, system: str, test_set: str, measure: str = "nDCG@10") -> float:
    """One mean of :func:`effectiveness_table`."""
    return float(table.loc[system, (test_set.upper(), measure)])


def marked_ablation(table: pd.DataFrame, measures: Sequence[str]) -> pd.DataFrame:
    """:func:`ablation` as shown: loss, scoring, each measure with a † where significant, and the p-values."""
    marked = {m: [mark(v, s) for v, s in zip(table[m], table[f"significant {m}"], strict=True)] for m in measures}
    return table.assign(**marked)[["loss", "scoring", *measures, *[f"p {m}" for m in measures]]]


__all__ = [
    "MS_MARCO_PASSAGES",
    "RANDOM_ROW",
    "effectiveness_table",
    "index_size",
    "loss_curves",
    "mark",
    "marked_ablation",
    "marked_table2",
    "table2_value",
    "training_data_table",
    "versus_random",
]
