"""Chapter 7's TREC runs (``lib.experiments.tuw19_runs``): the run table, Table 3, the run files."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

from lib.core.types import ranking_from_run
from lib.data import load_queries, read_qrels, read_run
from lib.evaluation import measures as evaluation
from lib.experiments.tuw19_runs import PAPER_BEST, PAPER_RESULTS, PAPER_WORST, RUN_TAGS, best_and_worst, run_table

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
