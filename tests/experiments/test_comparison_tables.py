"""Chapter 2's comparisons (``lib.experiments.comparison_tables``): Table 2's first-stage rows, t-tests, variants."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from scipy import stats

from lib.core import paths
from lib.core.profiles import get_profile
from lib.core.types import JudgedSet
from lib.data import load_run
from lib.evaluation import measures as evaluation
from lib.experiments import comparison_tables, model_runs
from tests.data.test_loaders import data_folders  # noqa: F401  (fixture: a tiny book subset and MS MARCO export)
from tests.experiments.test_distillation_protocol import paper_export  # noqa: F401  (fixture)

pytestmark = pytest.mark.usefixtures("converted", "one_torch_thread")


@pytest.mark.usefixtures("paper_export")
def test_table_2_compares_against_chapter_1s_scored_bm25_on_the_msmarco_export() -> None:
    with pytest.raises(FileNotFoundError, match="CH=01_data_and_first_stage PROFILE=paper"):
        # the export's run is unscored: never compared against
        comparison_tables.first_stage_baselines(get_profile("paper"), "dl19")
    scored = {"19335": {"1": 9.5, "0": 2.0}}  # what chapter 1 retrieves in its place
    evaluation.write_trec_run(scored, paths.run_path("paper", "dl19", "bm25"), tag="bm25")
    baselines = comparison_tables.first_stage_baselines(get_profile("paper"), "dl19")
    assert baselines == {"BM25": scored}, "no BM25+RM3 in the export"


def test_table_2_compares_against_the_book_subsets_shipped_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path))
    monkeypatch.setenv(paths.CONVERTED_VARIABLE, "converted")
    runs = comparison_tables.first_stage_baselines(get_profile("book"), "dl19")
    assert list(runs) == ["BM25", "BM25+RM3"]
    assert runs["BM25"] == load_run("dl19", "bm25") and runs["BM25+RM3"] == load_run("dl19", "bm25-rm3")
    assert not paths.run_path("book", "dl19", "bm25").exists(), "the shipped run is read where it is"


def _result(
    model: str, query_set: str, tuned: float, depth: int, everything: float, validation: tuple[float, ...] = ()
) -> model_runs.ModelResult:
    empty = pd.DataFrame()
    history = pd.DataFrame({"nDCG@10": list(validation), "MRR@10": [0.9] * len(validation)}) if validation else empty
    return model_runs.ModelResult(
        model=model, query_set=query_set, tuned_depth=depth, metrics_at_tuned_depth={"nDCG@10": tuned},
        metrics_at_full_depth={"nDCG@10": everything}, per_query=empty, per_query_all=empty, weight=0.0,
        metrics_interpolated={}, per_query_interpolated=empty, docs_per_ms=1.0, history=history, best_step=0,
        training=None,
    )  # fmt: skip


def test_variant_comparison_has_one_row_per_year_and_variant_in_order() -> None:
    runs = {
        "a": {"dl19": _result("tk2", "dl19", 0.5, 12, 0.4), "dl20": _result("tk2", "dl20", 0.45, 12, 0.35)},
        "b": {
            "dl19": _result("tk2-b", "dl19", 0.3, 5, 0.2, (0.4, 0.6, 0.5)),
            "dl20": _result("tk2-b", "dl20", 0.25, 5, 0.15),
        },
    }
    table = comparison_tables.variant_comparison("source", runs, "nDCG@10")
    assert table.columns.tolist() == ["set", "source", "nDCG@10", "depth", "nDCG@10 (all)", "validation nDCG@10"]
    assert table["validation nDCG@10"].iloc[1] == 0.6, "the best validation, of the measure named"
    assert table["validation nDCG@10"].iloc[[0, 2, 3]].isna().all(), "no history, no validation number"
    assert table[["set", "source"]].values.tolist() == [["dl19", "a"], ["dl19", "b"], ["dl20", "a"], ["dl20", "b"]]
    assert table["nDCG@10 (all)"].tolist() == [0.4, 0.2, 0.35, 0.15]
    assert table["depth"].tolist() == [12, 5, 12, 5]
    assert comparison_tables.variant_comparison("source", {}, "nDCG@10").empty


def test_significance_against_bm25_tests_every_model_at_every_depth(monkeypatch: pytest.MonkeyPatch) -> None:
    qrels = {f"q{i}": {"good": 2} for i in range(4)}
    bm25 = {f"q{i}": {"bad": 2.0, "good": 1.0} for i in range(5)}  # q4 is not a test query: left out
    monkeypatch.setattr(comparison_tables, "bm25_run", lambda profile, fold: bm25)
    protocol = SimpleNamespace(tests={"dl19": JudgedSet("dl19", {qid: "text" for qid in qrels}, qrels, bm25)})
    values = pd.DataFrame({"nDCG@10": [1.0, 1.0, 1.0, 0.63]}, index=list(qrels))
    mixed = pd.DataFrame({"nDCG@10": [0.5, 0.7, 0.6, 0.9]}, index=list(qrels))
    result = SimpleNamespace(per_query=values, per_query_all=values, per_query_interpolated=mixed)
    table = comparison_tables.significance_against_bm25(
        get_profile("smoke"), protocol, {("dl19", "tk2"): result}, ["tk2"]
    )
    assert table.columns.tolist() == [
        "set", "depth", "system", "mean", "baseline_mean", "delta", "t", "p", "p_bonferroni", "significant", "queries"
    ]  # fmt: skip
    assert table["depth"].tolist() == list(comparison_tables.SIGNIFICANCE_DEPTHS) and set(table["queries"]) == {4}
    bm25_ndcg = evaluation.per_query(bm25, qrels, ["nDCG@10"])["nDCG@10"]
    assert table["baseline_mean"].tolist() == pytest.approx([bm25_ndcg.mean()] * 3)
    p = stats.ttest_rel(values["nDCG@10"], bm25_ndcg).pvalue
    assert table.loc[0, "p_bonferroni"] == pytest.approx(p)
