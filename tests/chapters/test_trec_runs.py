"""Chapter 7's TREC runs (``lib.chapters.trec_runs``): the tables, the run files, the verdicts."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import pytrec_eval

from lib.chapters.trec_runs import (
    GLOVE_RUN,
    PAPER_BEST,
    PAPER_RESULTS,
    PAPER_WORST,
    RUN_TAGS,
    best_and_worst,
    run_descriptions,
    run_table,
    verdicts,
)
from lib.core.types import ranking_from_run
from lib.data import load_queries, read_qrels, read_run
from lib.evaluation import measures as evaluation

QRELS = {"q1": {"a": 2, "b": 0}, "q2": {"c": 3, "a": 1}}


def test_run_table_evaluates_each_run_and_puts_the_notebook_beside_dl19() -> None:
    runs = {
        "BM25": {"dl19": {"q1": {"a": 2.0, "b": 1.0}, "q2": {"a": 2.0, "c": 1.0}}},
        "p1": {"dl19": {"q1": {"a": 1.0, "b": 2.0}, "q2": {"a": 1.0, "c": 2.0}}},
    }
    table = run_table(runs, {"dl19": QRELS}).set_index("run")
    for name, by_set in runs.items():
        expected = evaluation.evaluate(by_set["dl19"], QRELS, ["MAP", "nDCG@10", "P@10"])
        for measure, value in expected.items():
            assert table.loc[name, measure] == pytest.approx(value)
    paper = PAPER_RESULTS.set_index(["run", "task"])
    assert table.loc["p1", "paper nDCG@10"] == paper.loc[("p1", "ReRank"), "nDCG@10"] == 0.640
    assert math.isnan(table.loc["BM25", "paper MAP"])


def test_verdicts_follow_the_numbers() -> None:
    table = pd.DataFrame(
        [{"set": "dl19", "run": run, "nDCG@10": value} for run, value in (("p1", 0.50), ("p2", 0.49), ("p3", 0.52))]
    )
    tests = pd.DataFrame(
        [
            {"set": "dl19", "run": "p1", "against": "p2", "p_bonferroni": 0.8, "significant": False},
            {"set": "dl19", "run": "p1", "against": "p3", "p_bonferroni": 0.4, "significant": False},
        ]
    )
    lines = verdicts(table, tests, {"dl19": {"p": 0.6}})
    assert lines[0].startswith("**GloVe ≈ fastText: holds.**")
    assert lines[1].startswith("**The ensemble helps a little: holds.**") and "+0.020 on DL19" in lines[1]
    assert lines[2].startswith("**No clear query type separates best from worst: holds.**")
    table.loc[2, "nDCG@10"] = 0.4998  # a change below 0.0005 shows no sign
    assert "-0.000" not in verdicts(table, tests, {"dl19": {"p": 0.6}})[1]
    tests.loc[0, ["p_bonferroni", "significant"]] = [0.01, True]
    table.loc[2, "nDCG@10"] = 0.45
    lines = verdicts(table, tests, {"dl19": {"p": 0.001}})
    assert "does not hold" in lines[0] and "does not hold" in lines[1] and "does not hold" in lines[2]


def test_the_glove_claim_compares_p2_with_the_glove_run_when_p1_is_another_tk() -> None:
    table = pd.DataFrame(
        [
            {"set": "dl19", "run": run, "nDCG@10": value}
            for run, value in (("p1", 0.60), (GLOVE_RUN, 0.48), ("p2", 0.47), ("p3", 0.61))
        ]
    )
    tests = pd.DataFrame(
        [
            {"set": "dl19", "run": "p1", "against": "p2", "p_bonferroni": 0.001, "significant": True},
            {"set": "dl19", "run": "p1", "against": "p3", "p_bonferroni": 0.9, "significant": False},
            {"set": "dl19", "run": "p2", "against": GLOVE_RUN, "p_bonferroni": 0.9, "significant": False},
        ]
    )
    lines = verdicts(table, tests, {"dl19": {"p": 0.6}}, glove_run=GLOVE_RUN)
    assert lines[0].startswith("**GloVe ≈ fastText: holds.**") and "0.480 vs 0.470" in lines[0]
    assert f"of {GLOVE_RUN} against p2" in lines[0]
    assert "does not hold" in verdicts(table, tests, {"dl19": {"p": 0.6}})[0]  # p1 against p2 differs


def test_run_descriptions_name_the_tk_of_p1_and_p3() -> None:
    described = run_descriptions("TK-2 (pieces)")
    assert set(described) == set(RUN_TAGS)
    assert "TK-2 (pieces)" in described["p1"] and "TK-2 (pieces)" in described["p3"]
    assert "fastText" in described["p2"] and "pieces" not in described["p2"]


def test_best_and_worst_names_the_notebooks_list_of_each_query(converted: Path) -> None:
    run = read_run(converted / "runs" / "dl19__bm25.trec")
    qrels = read_qrels(converted / "qrels.dl19.txt")
    ap = evaluation.per_query(run, qrels, ["MAP"])["MAP"]
    table = best_and_worst(ap, ap, load_queries("dl19"), count=5)
    assert table.columns[-1] == "in notebook" and len(table) == 10
    for _, row in table.iterrows():
        noted = "best" if row["qid"] in PAPER_BEST else "worst" if row["qid"] in PAPER_WORST else ""
        assert row["in notebook"] == noted
    # every query of the notebook's lists is a judged DL19 query: the comparison is possible
    assert set(PAPER_BEST) <= set(ap.index)


def test_a_written_run_file_evaluates_as_trec_eval_l2(converted: Path, tmp_path: Path) -> None:
    """A TUW19 run file, read back, gives trec_eval's own numbers (pytrec_eval, relevance level 2)."""
    bm25 = read_run(converted / "runs" / "dl19__bm25.trec")
    qrels = read_qrels(converted / "qrels.dl19.txt")
    # a stand-in model: BM25's first 100 candidates in reverse order (no ties)
    reranked = {qid: {pid: float(rank) for rank, pid in enumerate(ranking_from_run(bm25[qid])[:100])} for qid in bm25}
    path = tmp_path / f"dl19__{RUN_TAGS['p1']}.trec"
    evaluation.write_trec_run(reranked, path, tag=RUN_TAGS["p1"])
    assert path.read_text(encoding="utf-8").split("\n", 1)[0].endswith(" TUW19-p1-book")
    book = evaluation.evaluate(read_run(path), qrels, ["MAP", "P@10", "nDCG@10"])
    judged = {qid: grades for qid, grades in qrels.items() if qid in reranked}
    measured = pytrec_eval.RelevanceEvaluator(judged, {"map", "P_10", "ndcg_cut_10"}, relevance_level=2).evaluate(
        read_run(path)
    )
    for book_name, trec_name in (("MAP", "map"), ("P@10", "P_10"), ("nDCG@10", "ndcg_cut_10")):
        expected = np.mean([values[trec_name] for values in measured.values()])
        assert book[book_name] == pytest.approx(expected, abs=1e-4), book_name
