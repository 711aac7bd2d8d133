"""TILDE's comparisons (TILDE paper §4.4: paired t-tests, Bonferroni-corrected, :mod:`lib.evaluation.comparison`).

- :func:`effectiveness_table` — Table 2: each system's mean measures and whether it differs significantly from
  the first stage it re-ranks (Bonferroni over that first stage's rows).
- :func:`versus_random` — TILDE's re-rankings of BM25 against BM25's candidates in random order (the bar:
  better than chance).
- :func:`ablation` — Table 3: every variant of :mod:`lib.training.tilde_variants` under TILDE-QL, TILDE-DL and
  TILDE-QDL (α = 0.5, :mod:`lib.experiments.tilde_scorings`), plus the paper's row that mixes QL of the L_QL
  model with DL of the L_DL model, each tested against the paper's model (BiQDL, TILDE-QDL).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from lib.core.types import Qrels, Run
from lib.evaluation import measures as evaluation
from lib.evaluation.comparison import compare, compare_per_query, significance_table
from lib.experiments.tilde_scorings import SCORINGS, scoring_runs
from lib.reranking.tilde_scoring import TildeScores
from lib.training.tilde_variants import MAIN_VARIANT, VARIANTS

#: The random order every TILDE re-ranking of BM25 is tested against.
RANDOM_ROW = "BM25 in random order"
#: The ablation row that mixes two models, as the paper's "L_QL, L_DL" row.
SEPARATE_LOSSES = "L_QL + L_DL (two models)"


def ablation(
    scores: Mapping[str, TildeScores],
    first_stage: Run,
    qrels: Qrels,
    measures: Sequence[str] = ("nDCG@10", "MAP"),
) -> pd.DataFrame:
    """Table 3: one row per (loss, scoring), the measures' means and Bonferroni-corrected p-values.

    ``scores`` maps variant names (:data:`lib.training.tilde_variants.VARIANTS`) to their TILDE scores of
    ``first_stage``'s candidates; it must hold the main variant, the baseline of every test. The
    "two models" row appears when both ``ql`` and ``dl`` are present. Columns: ``loss``,
    ``scoring``, each measure, ``p <measure>`` (paired t-test against BiQDL/TILDE-QDL, Bonferroni
    over the table's other rows) and ``significant <measure>`` (p < 0.05 after correction).
    """
    if MAIN_VARIANT not in scores:
        raise KeyError(f"the ablation needs the paper's model {MAIN_VARIANT!r}; got {sorted(scores)}")
    runs: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
    for name, variant_scores in scores.items():
        for scoring, run in scoring_runs(variant_scores, first_stage).items():
            runs[(VARIANTS[name].label, scoring)] = run
    if "ql" in scores and "dl" in scores:
        mixed = TildeScores(scores["ql"].ql, scores["dl"].dl)
        runs[(SEPARATE_LOSSES, "TILDE-QDL")] = mixed.rerank(first_stage, SCORINGS["TILDE-QDL"])
    baseline = " | ".join((VARIANTS[MAIN_VARIANT].label, "TILDE-QDL"))
    per_query = {" | ".join(key): evaluation.per_query(run, qrels, list(measures)) for key, run in runs.items()}
    compared = compare_per_query(per_query, baseline)
    table = pd.DataFrame([{"loss": loss, "scoring": scoring} for loss, scoring in runs])
    table[list(measures)] = compared[list(measures)].to_numpy()
    for measure in measures:
        table[f"p {measure}"] = compared[f"{measure} p_bonferroni"].to_numpy()
        table[f"significant {measure}"] = compared[f"{measure} significant"].to_numpy()
    return table


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
