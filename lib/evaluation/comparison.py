"""Comparing systems: runs × a judged set × measures → one table with the baseline, paired tests and correction named.

PyTerrier's ``Experiment`` in spirit, with the TILDE paper's protocol (§4.4): paired two-tailed t-tests
against a baseline, Bonferroni-corrected. PyTerrier itself fetches Terrier's jars at run time, which this
offline book cannot; ``ranx`` (``compare``, ``fuse``) works offline but brings numba and its own evaluation
code instead of trec_eval's. So the book keeps ir-measures (trec_eval semantics,
:mod:`lib.evaluation.measures`) and scipy's ``ttest_rel``.

- :func:`compare` evaluates every run on the judged queries (:func:`lib.evaluation.measures.per_query`: a
  judged query the run does not retrieve is left out, as trec_eval does) and hands the per-query values to
  :func:`compare_per_query`, the one code path: a row per system with each measure's mean over the system's
  judged queries and, against a baseline, each measure's paired test over the queries every system shares.
- :func:`significance_table` is one measure's tests, a row per compared system; :func:`pairwise_tests` tests every
  two systems, corrected over all pairs.
- ``python -m lib.evaluation.comparison QRELS RUN… [--baseline SYSTEM]`` compares TREC run files (the
  chapters' ``artifacts/<profile>/runs/<set>__<system>.trec``) the same way.
"""

from __future__ import annotations

import argparse
import itertools
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd
from scipy import stats

from lib.core.types import JudgedSet, Qrels, Run
from lib.data import read_qrels, read_run
from lib.evaluation.measures import MEASURES, per_query

#: The corrections for multiple comparisons, by name: the corrected p-value of ``p`` in a family of ``n`` tests.
CORRECTIONS = {"bonferroni": lambda p, n: min(1.0, p * n)}


def compare(
    runs: Mapping[str, Run],
    judged: JudgedSet | Qrels,
    measures: Sequence[str],
    baseline: str | None = None,
    correction: str = "bonferroni",
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Each run of ``runs`` (by system name) evaluated on ``judged`` by ``measures``, and tested against
    ``baseline`` when one is named (:func:`compare_per_query`'s frame).

    ``judged`` is a :class:`~lib.core.types.JudgedSet` (each run is restricted to its queries and judged by its
    qrels) or qrels alone.
    """
    if isinstance(judged, JudgedSet):
        qrels: Qrels = judged.qrels
        runs = {name: {qid: run[qid] for qid in judged.queries if qid in run} for name, run in runs.items()}
    else:
        qrels = judged
    values = {name: per_query(run, qrels, measures) for name, run in runs.items()}
    return compare_per_query(values, baseline, correction, alpha)


def compare_per_query(
    values: Mapping[str, pd.DataFrame],
    baseline: str | None = None,
    correction: str = "bonferroni",
    alpha: float = 0.05,
    comparisons: int | None = None,
) -> pd.DataFrame:
    """The systems' per-query values (by system name, frames indexed by qid with a column per measure, as
    :func:`lib.evaluation.measures.per_query`'s) compared: one row per system, in ``values``' order.

    Columns: each measure's mean over the system's queries; with a ``baseline``, for each measure ``m``
    the paired two-tailed t-test of the system against the baseline over the queries every system shares:
    ``m tested mean`` (the system's mean over those queries), ``m delta`` (the mean difference), ``m t``,
    ``m p``, ``m p_<correction>`` (corrected over ``comparisons`` tests, by default the systems other than
    the baseline) and ``m significant`` (corrected p < ``alpha``), then ``queries`` (those tested). The
    baseline's row has no test (NaN, not significant). ``attrs`` names the baseline, the correction and alpha.
    """
    if correction not in CORRECTIONS:
        raise ValueError(f"unknown correction {correction!r}; known: {list(CORRECTIONS)}")
    if not values:
        raise ValueError("nothing to compare: parameter 'values' is empty")
    measures = list(next(iter(values.values())).columns)
    table = pd.DataFrame(
        [values[name][measures].mean() for name in values], index=pd.Index(list(values), name="system")
    )
    table.attrs.update(baseline=baseline, correction=correction, alpha=alpha)
    if baseline is None:
        return table
    if baseline not in values:
        raise KeyError(f"baseline {baseline!r} is not among the systems {list(values)}")
    shared = sorted(set.intersection(*(set(frame.index) for frame in values.values())))
    if len(shared) < 2:
        raise ValueError("a paired t-test needs at least two queries shared by all systems")
    family = comparisons if comparisons is not None else len(values) - 1
    for measure in measures:
        rows = [
            _paired_test(values[name][measure].loc[shared], values[baseline][measure].loc[shared]) for name in values
        ]
        for name, row in zip(values, rows, strict=True):
            row["p_" + correction] = CORRECTIONS[correction](row["p"], family) if name != baseline else math.nan
            if name == baseline:
                row.update(delta=math.nan, t=math.nan, p=math.nan)
            row["significant"] = bool(row["p_" + correction] < alpha)
        for statistic in rows[0]:
            table[f"{measure} {statistic}"] = [row[statistic] for row in rows]
    table["queries"] = len(shared)
    return table


def _paired_test(values: pd.Series, base: pd.Series) -> dict[str, float]:
    """The paired two-tailed t-test of ``values`` against ``base`` (the same queries, in the same order); two
    identical series give t = 0, p = 1."""
    difference = values - base
    if difference.abs().max() == 0:
        t_value, p_value = 0.0, 1.0
    else:
        t_value, p_value = stats.ttest_rel(values, base)
    return {
        "tested mean": float(values.mean()),
        "delta": float(difference.mean()),
        "t": float(t_value),
        "p": float(p_value),
    }


def significance_table(compared: pd.DataFrame, measure: str) -> pd.DataFrame:
    """One measure's tests of a :func:`compare_per_query` frame with a baseline, a row per compared system:
    ``system``, ``mean`` and ``baseline_mean`` (over the tested queries), ``delta``, ``t``, ``p``,
    ``p_<correction>``, ``significant``, ``queries``."""
    baseline, corrected = compared.attrs["baseline"], "p_" + compared.attrs["correction"]
    tests = compared.drop(index=baseline)
    return pd.DataFrame(
        {
            "system": tests.index,
            "mean": tests[f"{measure} tested mean"],
            "baseline_mean": compared.loc[baseline, f"{measure} tested mean"],
            **{name: tests[f"{measure} {name}"] for name in ("delta", "t", "p", corrected, "significant")},
            "queries": tests["queries"],
        }
    ).reset_index(drop=True)


def pairwise_tests(values: Mapping[str, pd.Series], alpha: float = 0.05) -> pd.DataFrame:
    """Paired two-tailed t-tests between every two systems on one measure, Bonferroni over all pairs.

    ``values`` maps a system name to its per-query values (indexed by qid); the tests use the queries every
    system shares. One row per pair (in the mapping's order): ``run``, ``against``, their means (``mean``,
    ``mean against``), ``delta``, ``p``, ``p_bonferroni``, ``significant``, ``queries``.
    """
    names = list(values)
    if len(names) < 2:
        raise ValueError("pairwise tests need at least two runs")
    shared = sorted(set.intersection(*(set(series.index) for series in values.values())))
    pairs = list(itertools.combinations(names, 2))
    rows = []
    for first, second in pairs:
        pair = {name: values[name].loc[shared].to_frame("value") for name in (first, second)}
        test = significance_table(compare_per_query(pair, second, alpha=alpha, comparisons=len(pairs)), "value")
        rows.append({"run": first, "against": second, **test.iloc[0].drop(["system", "t"]).to_dict()})
    return pd.DataFrame(rows).rename(columns={"baseline_mean": "mean against"})


def order_steps(values: Mapping[str, pd.Series]) -> pd.DataFrame:
    """Whether a proposed order holds, step by step: ``values`` maps each system (weakest first) to its per-query
    values; one row per consecutive pair — ``weaker``, ``stronger``, ``higher`` (the stronger's mean above the
    weaker's), ``significant`` and ``p_bonferroni`` from :func:`pairwise_tests` (Bonferroni over every pair)."""
    tests = pairwise_tests(values).set_index(["run", "against"])
    rows = []
    for weaker, stronger in itertools.pairwise(values):
        test = tests.loc[(weaker, stronger)]
        higher = float(test["mean against"]) > float(test["mean"])
        rows.append({"weaker": weaker, "stronger": stronger, "higher": higher, "significant": bool(test["significant"]),
                     "p_bonferroni": float(test["p_bonferroni"])})  # fmt: skip
    return pd.DataFrame(rows)


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: ``python -m lib.evaluation.comparison QRELS RUN… [--measures M…] [--baseline SYSTEM]``.

    Prints :func:`compare`'s table of the run files, each named by its system (``<set>__<system>.trec``
    names ``<system>``; another file its name without the suffix).
    """
    parser = argparse.ArgumentParser(description="Compare TREC run files: means, paired t-tests, Bonferroni.")
    parser.add_argument("qrels", type=Path, help="TREC qrels file")
    parser.add_argument("runs", type=Path, nargs="+", help="TREC run files")
    parser.add_argument("--measures", nargs="+", default=list(MEASURES), help=f"default: {' '.join(MEASURES)}")
    parser.add_argument("--baseline", help="the system the others are tested against (default: no tests)")
    args = parser.parse_args(argv)
    runs = {path.stem.split("__")[-1]: read_run(path) for path in args.runs}
    if args.baseline is not None and args.baseline not in runs:
        parser.error(f"--baseline {args.baseline!r} names none of the runs' systems: {', '.join(runs)}")
    print(compare(runs, read_qrels(args.qrels), args.measures, args.baseline).to_string())


if __name__ == "__main__":
    main()
