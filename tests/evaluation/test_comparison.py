"""Comparing systems (``lib.evaluation.comparison``): means, paired t-tests against scipy, Bonferroni by hand."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from lib.core.types import JudgedSet
from lib.data import read_qrels, read_run
from lib.evaluation.comparison import compare, compare_per_query, main, order_steps, pairwise_tests, significance_table
from lib.evaluation.measures import evaluate, per_query

QIDS = ["1", "2", "3", "4", "5", "6"]
BASE = pd.Series([0.10, 0.20, 0.30, 0.40, 0.50, 0.60], index=QIDS, name="nDCG@10")
BETTER = BASE + pd.Series([0.30, 0.25, 0.35, 0.28, 0.32, 0.30], index=QIDS)
NOISE = BASE + pd.Series([0.01, -0.02, 0.015, -0.01, 0.005, -0.005], index=QIDS)


def frames(**series: pd.Series) -> dict[str, pd.DataFrame]:
    return {name: values.rename("nDCG@10").to_frame() for name, values in series.items()}


def test_paired_t_tests_against_scipy_with_bonferroni() -> None:
    extra = pd.concat([NOISE, pd.Series([0.99], index=["7"])])  # query 7 is not shared: not tested
    compared = compare_per_query(frames(base=BASE, better=BETTER, noise=extra, same=BASE.copy()), "base")
    assert compared.attrs == {"baseline": "base", "correction": "bonferroni", "alpha": 0.05}
    assert compared.loc["noise", "nDCG@10"] == pytest.approx(extra.mean()), "the mean over the system's queries"
    table = significance_table(compared, "nDCG@10")
    assert list(table["system"]) == ["better", "noise", "same"]
    comparisons = 3
    for row, values in zip(table.itertuples(), [BETTER, NOISE, BASE], strict=True):
        assert row.queries == 6
        assert row.mean == pytest.approx(values.mean())
        assert row.baseline_mean == pytest.approx(BASE.mean())
        assert row.delta == pytest.approx((values - BASE).mean())
    t_better, p_better = stats.ttest_rel(BETTER.to_numpy(), BASE.to_numpy())
    t_noise, p_noise = stats.ttest_rel(NOISE.to_numpy(), BASE.to_numpy())
    better, noise, same = table.to_dict("records")
    assert better["t"] == pytest.approx(t_better) and better["p"] == pytest.approx(p_better)
    assert better["p_bonferroni"] == pytest.approx(p_better * comparisons)
    assert better["significant"] is True
    assert noise["t"] == pytest.approx(t_noise) and noise["p"] == pytest.approx(p_noise)
    assert p_noise * comparisons > 1  # so the corrected value is capped
    assert noise["p_bonferroni"] == 1.0
    assert noise["significant"] is False
    assert (same["t"], same["p"], same["p_bonferroni"], same["significant"]) == (0.0, 1.0, 1.0, False)
    assert math.isnan(compared.loc["base", "nDCG@10 p_bonferroni"]) and not compared.loc["base", "nDCG@10 significant"]


def test_a_p_value_near_the_threshold_depends_on_the_correction() -> None:
    """A p-value under alpha alone but over it once multiplied by the number of comparisons."""
    rng = np.random.default_rng(0)
    qids = [str(i) for i in range(30)]
    base = pd.Series(rng.normal(0.5, 0.1, 30), index=qids)
    for shift in np.linspace(0.0, 0.05, 501):
        candidate = base + shift + pd.Series(rng.normal(0, 0.05, 30), index=qids)
        p = stats.ttest_rel(candidate, base).pvalue
        if 0.02 < p < 0.04:
            break
    else:
        pytest.fail("no candidate p-value in (0.02, 0.04)")
    single = significance_table(compare_per_query(frames(base=base, candidate=candidate), "base"), "nDCG@10").iloc[0]
    assert single["p_bonferroni"] == pytest.approx(p) and bool(single["significant"])
    double = compare_per_query(frames(base=base, candidate=candidate, other=base * 0.5), "base")
    assert double.loc["candidate", "nDCG@10 p_bonferroni"] == pytest.approx(2 * p)
    assert not double.loc["candidate", "nDCG@10 significant"]
    family = compare_per_query(frames(base=base, candidate=candidate), "base", comparisons=3)
    assert family.loc["candidate", "nDCG@10 p_bonferroni"] == pytest.approx(min(1.0, 3 * p))


def test_errors_name_what_is_wrong() -> None:
    with pytest.raises(KeyError, match="baseline"):
        compare_per_query(frames(a=BASE, b=BETTER), "c")
    with pytest.raises(ValueError, match="two queries"):
        compare_per_query(frames(a=BASE.iloc[:1], b=BETTER.iloc[:1]), "a")
    with pytest.raises(ValueError, match="correction"):
        compare_per_query(frames(a=BASE, b=BETTER), "a", correction="holm")


def test_compare_evaluates_runs_on_a_judged_set_and_tests_every_measure() -> None:
    qrels = {f"q{i}": {"good": 2, "fair": 1} for i in range(4)}
    first = {f"q{i}": {"bad": 3.0, "fair": 2.0, "good": 1.0} for i in range(4)}
    second = {f"q{i}": {"good": 3.0, "fair": 2.0, "bad": 1.0} for i in range(4)}
    second["q3"] = first["q3"]
    second["q9"] = {"good": 1.0}  # not a query of the judged set
    judged = JudgedSet("toy", {qid: "text" for qid in qrels}, qrels, first)
    compared = compare({"first": first, "second": second}, judged, ["nDCG@10", "MRR@10"], baseline="first")
    assert list(compared.index) == ["first", "second"]
    for name, run in (("first", first), ("second", second)):
        expected = evaluate({qid: run[qid] for qid in qrels}, qrels, ["nDCG@10", "MRR@10"])
        assert compared.loc[name, ["nDCG@10", "MRR@10"]].to_dict() == pytest.approx(expected)
    # MRR@10 from 1/3 to 1 on three of the four queries
    assert compared.loc["second", "MRR@10 delta"] == pytest.approx(3 / 4 * (1 - 1 / 3))
    p = stats.ttest_rel([1, 1, 1, 1 / 3], [1 / 3] * 4).pvalue
    assert compared.loc["second", "MRR@10 p_bonferroni"] == pytest.approx(p) and compared.loc["second", "queries"] == 4
    plain = compare({"first": first}, qrels, ["nDCG@10"])
    assert list(plain.columns) == ["nDCG@10"] and plain.attrs["baseline"] is None


def test_pairwise_tests_are_paired_t_tests_corrected_over_every_pair() -> None:
    index = pd.Index(["1", "2", "3", "4"])
    values = {
        "a": pd.Series([0.1, 0.4, 0.3, 0.9], index=index),
        "b": pd.Series([0.2, 0.6, 0.35, 0.95], index=index),
        "c": pd.Series([0.1, 0.4, 0.3, 0.9], index=index),
    }
    tests = pairwise_tests(values).set_index(["run", "against"])
    assert len(tests) == 3
    assert list(tests.columns) == ["mean", "mean against", "delta", "p", "p_bonferroni", "significant", "queries"]
    p = stats.ttest_rel(values["a"], values["b"]).pvalue
    assert tests.loc[("a", "b"), "p"] == pytest.approx(p)
    assert tests.loc[("a", "b"), "p_bonferroni"] == pytest.approx(min(1.0, 3 * p))
    assert tests.loc[("a", "c"), "p"] == 1.0 and not tests.loc[("a", "c"), "significant"]
    assert tests.loc[("a", "b"), "delta"] == pytest.approx(-0.1)
    with pytest.raises(ValueError, match="two runs"):
        pairwise_tests({"a": values["a"]})


def test_compare_on_real_dl19_first_stages_keeps_trec_eval_means(converted: Path) -> None:
    qrels = read_qrels(converted / "qrels.dl19.txt")
    runs = {system: read_run(converted / "runs" / f"dl19__{system}.trec") for system in ("bm25", "bm25-rm3")}
    compared = compare(runs, qrels, ["nDCG@10", "MAP"], baseline="bm25")
    assert round(compared.loc["bm25", "nDCG@10"], 4) == 0.5058  # the published pyserini number
    assert round(compared.loc["bm25-rm3", "nDCG@10"], 4) == 0.5216
    rm3, bm25 = (per_query(runs[s], qrels)["MAP"] for s in ("bm25-rm3", "bm25"))
    shared = sorted(set(rm3.index) & set(bm25.index))
    p = stats.ttest_rel(rm3.loc[shared], bm25.loc[shared]).pvalue
    assert compared.loc["bm25-rm3", "MAP p"] == pytest.approx(p) and compared.loc["bm25-rm3", "MAP p_bonferroni"] == p


def test_the_command_line_compares_run_files(converted: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = [converted / "runs" / f"dl19__{system}.trec" for system in ("bm25", "bm25-rm3")]
    main([str(converted / "qrels.dl19.txt"), *map(str, runs), "--measures", "nDCG@10", "--baseline", "bm25"])
    printed = capsys.readouterr().out.splitlines()
    assert "nDCG@10 p_bonferroni" in printed[0]
    rows = {line.split()[0]: line.split()[1] for line in printed[2:]}
    # printed at pandas' display precision (a chapter's prologue may have lowered it)
    assert list(rows) == ["bm25", "bm25-rm3"] and float(rows["bm25-rm3"]) == pytest.approx(0.5216, abs=1e-3)


def test_the_command_line_refuses_a_baseline_that_names_no_run(
    converted: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = converted / "runs" / "dl19__bm25.trec"
    with pytest.raises(SystemExit):
        main([str(converted / "qrels.dl19.txt"), str(run), "--baseline", "dl19__bm25"])
    assert "--baseline 'dl19__bm25' names none of the runs' systems: bm25" in capsys.readouterr().err


def test_order_steps_test_each_step_of_a_proposed_order() -> None:
    low = pd.Series([0.1, 0.2, 0.15, 0.1, 0.2, 0.1, 0.15, 0.2], index=[f"q{i}" for i in range(8)])
    high, close = low + 0.5, low + 0.5 + pd.Series([0.01, -0.01] * 4, index=low.index)
    steps = order_steps({"weak": low, "strong": high, "near": close})
    assert list(zip(steps["weaker"], steps["stronger"], strict=True)) == [("weak", "strong"), ("strong", "near")]
    assert steps.loc[0, "higher"] and steps.loc[0, "significant"] and steps.loc[0, "p_bonferroni"] < 0.05
    assert not steps.loc[1, "higher"] and not steps.loc[1, "significant"]  # equal means: not higher
