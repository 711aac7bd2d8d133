"""Chapter 6's result tables: Table 2 and the ablation (TILDE paper Table 3), the α sweep (Figure 2), index size (§3.2).

- :func:`training_data_table` and :func:`loss_curves` — what the models learn from, and how.
- :func:`effectiveness_table` — Table 2: each system's mean measures and whether it differs significantly
  from the first stage it re-ranks (paired t-test, Bonferroni over that first stage's rows);
  :func:`marked_table2` and :func:`marked_ablation` show the values with a † where significant.
- :func:`storage_precision` — what float16 storage does: tied candidates and TILDE-QL's nDCG@10.
- :func:`ablation` — every variant of :mod:`lib.training.tilde_variants` scored by TILDE-QL, TILDE-DL and
  TILDE-QDL (α = 0.5), plus the paper's row that mixes QL of the L_QL model with DL of the L_DL
  model; paired t-tests against the paper's model (BiQDL, TILDE-QDL), Bonferroni-corrected as the
  paper's significance tests (:func:`lib.evaluation.comparison.compare_per_query`).
- :func:`alpha_sweep` and :func:`best_alpha` — eq. 6 for every α of a grid, from one scoring pass, and the
  best α per test set and first stage.
- :func:`index_size` — bytes per passage (TILDE's and TILDEv2's) and what they make for a whole collection.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd

from lib.core.types import Qrels, Run
from lib.evaluation import measures as evaluation
from lib.evaluation.comparison import compare_per_query, significance_table
from lib.experiments.tilde_scorings import SCORINGS, scoring_runs
from lib.reranking.tilde_runs import tied_share
from lib.reranking.tilde_scoring import TildeScores, check_alpha
from lib.training.tilde import TildeTrainingData, TildeTrainingResult
from lib.training.tilde_variants import MAIN_VARIANT, VARIANTS

#: The ablation row that mixes two models, as the paper's "L_QL, L_DL" row.
SEPARATE_LOSSES = "L_QL + L_DL (two models)"
#: MS MARCO passage v1's size: what the index would hold for the full collection.
MS_MARCO_PASSAGES = 8_841_823


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


def alpha_sweep(
    scores: TildeScores,
    first_stage: Run,
    qrels: Qrels,
    alphas: Sequence[float],
    measures: Sequence[str] = ("nDCG@10", "MAP"),
) -> pd.DataFrame:
    """Figure 2: each measure of TILDE-QDL at every α (eq. 6); long format ``alpha, measure, value``."""
    if not alphas:
        raise ValueError("parameter 'alphas' is empty")
    rows = []
    for alpha in alphas:
        metrics = evaluation.evaluate(scores.rerank(first_stage, check_alpha(float(alpha))), qrels, list(measures))
        rows += [{"alpha": float(alpha), "measure": measure, "value": metrics[measure]} for measure in measures]
    return pd.DataFrame(rows)


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
    ``measure``, Bonferroni over the tested systems (:func:`lib.evaluation.comparison.compare_per_query`).

    Returns one row per (set, system): the system's mean, the random order's, ``p`` and ``significant``.
    """
    rows = []
    for test_set, runs in systems.items():
        names = [name for name in (RANDOM_ROW, *tested) if name in runs]
        if RANDOM_ROW not in runs or len(names) < 2:
            continue
        per_query = {name: evaluation.per_query(runs[name], qrels[test_set], [measure]) for name in names}
        for _, test in significance_table(compare_per_query(per_query, RANDOM_ROW), measure).iterrows():
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


def storage_precision(
    scores: Mapping[str, Mapping[str, TildeScores]], first_stages: Mapping[str, Run], qrels: Mapping[str, Qrels]
) -> pd.DataFrame:
    """Per test set and index precision (``scores[set][precision]``, of ``first_stages[set]``'s candidates):
    the share of candidates tied with another of the same query, and nDCG@10 of TILDE-QL."""
    rows = []
    for test_set, by_precision in scores.items():
        for dtype, precision_scores in by_precision.items():
            reranked = precision_scores.rerank(first_stages[test_set], 1.0)
            rows.append(
                {
                    "test set": test_set.upper(),
                    "index": dtype,
                    "tied candidates": tied_share(precision_scores.ql),
                    "TILDE-QL nDCG@10": evaluation.evaluate(reranked, qrels[test_set], ["nDCG@10"])["nDCG@10"],
                }
            )
    return pd.DataFrame(rows)


def marked_ablation(table: pd.DataFrame, measures: Sequence[str]) -> pd.DataFrame:
    """:func:`ablation` as shown: loss, scoring, each measure with a † where significant, and the p-values."""
    marked = {m: [mark(v, s) for v, s in zip(table[m], table[f"significant {m}"], strict=True)] for m in measures}
    return table.assign(**marked)[["loss", "scoring", *measures, *[f"p {m}" for m in measures]]]


def best_alpha(sweeps: pd.DataFrame, measure: str = "nDCG@10") -> pd.DataFrame:
    """Per ``set`` and ``first_stage`` of an :func:`alpha_sweep` frame: the α with the highest ``measure``
    (the smallest α among equals)."""
    best = (
        sweeps[sweeps["measure"] == measure]
        .sort_values(["set", "first_stage", "value", "alpha"], ascending=[True, True, False, True])
        .groupby(["set", "first_stage"], sort=False)
        .head(1)
    )
    return (
        best.rename(columns={"alpha": "best α", "value": f"{measure} at best α"})
        .drop(columns="measure")
        .set_index(["set", "first_stage"])
    )


__all__ = [
    "MS_MARCO_PASSAGES",
    "SEPARATE_LOSSES",
    "ablation",
    "alpha_sweep",
    "best_alpha",
    "effectiveness_table",
    "index_size",
    "loss_curves",
    "mark",
    "marked_ablation",
    "marked_table2",
    "storage_precision",
    "table2_value",
    "training_data_table",
]
