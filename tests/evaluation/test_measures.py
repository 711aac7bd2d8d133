"""Evaluation with trec_eval semantics, the depth sweep and run files."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lib.core.types import ranking_from_run, run_from_rankings
from lib.data import read_qrels, read_run
from lib.evaluation import measures as evaluation
from lib.evaluation.depths import depth_sweep
from lib.evaluation.measures import cutoff_curve, evaluate, per_query, relevance_level, write_trec_run
from lib.reranking.scoring import rerank_at_depth

# --- the published first-stage numbers ---------------------------------------------------------


@pytest.mark.parametrize(
    ("query_set", "system", "ndcg10"),
    [("dl19", "bm25", 0.5058), ("dl20", "bm25", 0.4796), ("dl19", "bm25-rm3", 0.5216), ("dl20", "bm25-rm3", 0.4896)],
)
def test_published_first_stage_ndcg(converted: Path, query_set: str, system: str, ndcg10: float) -> None:
    run = read_run(converted / "runs" / f"{query_set}__{system}.trec")
    qrels = read_qrels(converted / f"qrels.{query_set}.txt")
    assert round(evaluate(run, qrels, ["nDCG@10"])["nDCG@10"], 4) == ndcg10


# --- a hand-computed case ----------------------------------------------------------------------

# q1: three passages are relevant at rel >= 2 (d1, d3, d5); d2 has grade 1, which nDCG counts but
#     the binary measures do not; d5 is never retrieved; d6 is unjudged.
# q2: its one relevant passage is ranked first.
# q3 is in the run but not judged, q4 judged but not in the run: neither enters the means.
QRELS = {
    "q1": {"d1": 3, "d2": 1, "d3": 2, "d4": 0, "d5": 2},
    "q2": {"e1": 2, "e2": 0},
    "q4": {"f1": 3},
}
RUN = {
    "q1": {"d2": 5.0, "d1": 4.0, "d4": 3.0, "d3": 2.0, "d6": 1.0},  # d2 d1 d4 d3 d6
    "q2": {"e1": 2.0, "e2": 1.0},
    "q3": {"x": 1.0},
}


def log2(x: float) -> float:
    return math.log(x, 2)


# q1 by hand:
#   MRR@10: the first rel>=2 passage (d1) is at rank 2                  -> 1/2
#   P@10:   d1, d3 are rel>=2 in the top 10                             -> 2/10
#   R@10:   2 of the 3 rel>=2 passages (d5 is missing)                  -> 2/3
#   MAP:    precision 1/2 at d1 (rank 2), 2/4 at d3 (rank 4), d5 never  -> (1/2 + 2/4) / 3
#   nDCG@10 (linear gains, as trec_eval): DCG = 1/log2(2) + 3/log2(3) + 0/log2(4) + 2/log2(5)
#           ideal order 3, 2, 2, 1:  IDCG = 3/log2(2) + 2/log2(3) + 2/log2(4) + 1/log2(5)
Q1 = {
    "MRR@10": 1 / 2,
    "P@10": 2 / 10,
    "R@10": 2 / 3,
    "R@100": 2 / 3,
    "MAP": (1 / 2 + 2 / 4) / 3,
    "nDCG@10": (1 / log2(2) + 3 / log2(3) + 2 / log2(5)) / (3 / log2(2) + 2 / log2(3) + 2 / log2(4) + 1 / log2(5)),
}
# q2 by hand: the relevant e1 first -> MRR 1, P@10 1/10, R@10 1, MAP 1, nDCG (2/log2(2)) / (2/log2(2)) = 1
Q2 = {"MRR@10": 1.0, "P@10": 1 / 10, "R@10": 1.0, "R@100": 1.0, "MAP": 1.0, "nDCG@10": 1.0}


def test_hand_computed_per_query_values() -> None:
    frame = per_query(RUN, QRELS)
    assert list(frame.index) == ["q1", "q2"]
    assert list(frame.columns) == list(evaluation.MEASURES)
    for name, value in Q1.items():
        assert frame.loc["q1", name] == pytest.approx(value, abs=1e-12), name
    for name, value in Q2.items():
        assert frame.loc["q2", name] == pytest.approx(value, abs=1e-12), name


def test_hand_computed_means() -> None:
    means = evaluate(RUN, QRELS)
    assert means == pytest.approx({name: (Q1[name] + Q2[name]) / 2 for name in Q1}, abs=1e-12)


def test_grade_one_is_not_relevant_for_binary_measures_but_counts_for_ndcg() -> None:
    """Only d2 (grade 1) retrieved: no binary measure sees a relevant passage, nDCG does."""
    qrels = {"q": {"d1": 3, "d2": 1}}
    run = {"q": {"d2": 1.0}}
    values = evaluate(run, qrels)
    assert values["MRR@10"] == 0.0
    assert values["P@10"] == 0.0
    assert values["R@10"] == 0.0
    assert values["MAP"] == 0.0
    assert values["nDCG@10"] == pytest.approx((1 / log2(2)) / (3 / log2(2) + 1 / log2(3)), abs=1e-12)


def test_measure_subset_and_unknown_measure() -> None:
    assert list(evaluate(RUN, QRELS, ["MAP", "P@10"])) == ["MAP", "P@10"]
    with pytest.raises(ValueError, match="unknown measure"):
        evaluate(RUN, QRELS, ["nDCG@10", "MRR@100"])
    with pytest.raises(ValueError, match="unknown measure"):
        per_query(RUN, QRELS, ["ndcg_cut_10"])


def test_nothing_judged_is_an_error() -> None:
    with pytest.raises(ValueError, match="nothing to evaluate"):
        evaluate({"q3": {"x": 1.0}}, QRELS)
    with pytest.raises(ValueError, match="nothing to evaluate"):
        evaluate({"q1": {}, "q3": {"x": 1.0}}, QRELS)  # an empty ranking is no ranking


# --- ties: trec_eval order (score descending, then passage id descending) ----------------------


def test_ranking_from_run_breaks_ties_by_descending_id() -> None:
    assert ranking_from_run({"a": 1.0, "c": 2.0, "b": 1.0, "d": 0.5}) == ["c", "b", "a", "d"]
    # ids compare as strings, as trec_eval's strcmp does: "9" > "10"
    assert ranking_from_run({"10": 1.0, "9": 1.0, "11": 3.0}) == ["11", "9", "10"]


@pytest.mark.parametrize("relevant_first", [True, False])
def test_every_measure_breaks_ties_as_trec_eval(relevant_first: bool) -> None:
    """A tie between a relevant and a non-relevant passage: the larger id ranks first, for every measure."""
    relevant, other = ("b", "a") if relevant_first else ("a", "b")
    qrels = {"q": {relevant: 2, other: 0}}
    for run in ({"q": {"a": 1.0, "b": 1.0}}, {"q": {"b": 1.0, "a": 1.0}}):
        values = evaluate(run, qrels)
        at_rank = 1 if relevant_first else 2
        assert values["MRR@10"] == 1 / at_rank
        assert values["MAP"] == 1 / at_rank
        assert values["nDCG@10"] == pytest.approx(1 / log2(at_rank + 1), abs=1e-12)
        assert values["P@10"] == 1 / 10
        assert values["R@10"] == 1.0


def test_run_from_rankings_reproduces_the_order() -> None:
    rankings = {"q1": ["z", "a", "m"], "q2": ["1"]}
    run = run_from_rankings(rankings)
    assert run == {"q1": {"z": 3.0, "a": 2.0, "m": 1.0}, "q2": {"1": 1.0}}
    assert {qid: ranking_from_run(scores) for qid, scores in run.items()} == rankings
    with pytest.raises(ValueError, match="twice"):
        run_from_rankings({"q": ["a", "b", "a"]})


# --- re-ranking depth --------------------------------------------------------------------------


def test_rerank_at_depth_by_hand() -> None:
    first = ["p1", "p2", "p3", "p4", "p5"]
    scores = {"p1": 0.1, "p2": 0.9, "p3": 0.5, "p4": 2.0, "p5": 3.0}
    assert rerank_at_depth(first, scores, 0) == first
    assert rerank_at_depth(first, scores, 1) == first
    assert rerank_at_depth(first, scores, 3) == ["p2", "p3", "p1", "p4", "p5"]
    assert rerank_at_depth(first, scores, 5) == ["p5", "p4", "p2", "p3", "p1"]
    assert rerank_at_depth(first, scores, 50) == ["p5", "p4", "p2", "p3", "p1"]
    # ties among model scores keep the first stage's order
    assert rerank_at_depth(first, {pid: 1.0 for pid in first}, 5) == first
    assert rerank_at_depth(first, {"p1": 0.0, "p2": 1.0, "p3": 1.0}, 3) == ["p2", "p3", "p1", "p4", "p5"]
    # only the top-depth passages need a score
    assert rerank_at_depth(first, {"p1": 0.0, "p2": 1.0}, 2) == ["p2", "p1", "p3", "p4", "p5"]
    with pytest.raises(KeyError, match="p3"):
        rerank_at_depth(first, {"p1": 0.0, "p2": 1.0}, 3)
    with pytest.raises(ValueError, match="'depth'"):
        rerank_at_depth(first, scores, -1)


SWEEP_QRELS = {
    "1": {"a": 0, "b": 2, "c": 3, "d": 1, "e": 2},
    "2": {"v": 3, "w": 0, "x": 0, "y": 2},
}
SWEEP_FIRST = {
    "1": {"a": 10.0, "b": 9.0, "c": 8.0, "d": 7.0, "e": 6.0},  # a b c d e
    "2": {"v": 1.0, "w": 5.0, "x": 5.0, "y": 3.0},  # x w y v (tie: x before w)
}
SWEEP_MODEL = {
    "1": {"a": 0.0, "b": 0.5, "c": 0.9, "d": 0.1, "e": 1.0},
    "2": {"v": 2.0, "w": 0.0, "x": -1.0, "y": 1.0},
}


def test_depth_sweep_at_depth_zero_is_the_first_stage() -> None:
    sweep = depth_sweep(SWEEP_FIRST, SWEEP_MODEL, SWEEP_QRELS, depths=[0])
    expected = per_query(SWEEP_FIRST, SWEEP_QRELS).reset_index()
    expected.insert(0, "depth", 0)
    pd.testing.assert_frame_equal(sweep, expected)


def test_depth_sweep_equals_reranking_by_hand() -> None:
    by_hand = {
        2: {"1": ["b", "a", "c", "d", "e"], "2": ["w", "x", "y", "v"]},
        3: {"1": ["c", "b", "a", "d", "e"], "2": ["y", "w", "x", "v"]},
        5: {"1": ["e", "c", "b", "d", "a"], "2": ["v", "y", "w", "x"]},
    }
    sweep = depth_sweep(SWEEP_FIRST, SWEEP_MODEL, SWEEP_QRELS, depths=list(by_hand))
    assert list(sweep.columns) == ["depth", "qid", *evaluation.MEASURES]
    for depth, rankings in by_hand.items():
        for qid, ranking in rankings.items():
            order = ranking_from_run(SWEEP_FIRST[qid])
            assert rerank_at_depth(order, SWEEP_MODEL[qid], depth) == ranking
        expected = per_query(run_from_rankings(rankings), SWEEP_QRELS).reset_index()
        got = sweep[sweep["depth"] == depth].drop(columns="depth").reset_index(drop=True)
        pd.testing.assert_frame_equal(got, expected)
    # at full depth the model's own order decides: query 1 puts e (2) c (3) first
    full = sweep[(sweep["depth"] == 5) & (sweep["qid"] == "1")].iloc[0]
    assert full["MRR@10"] == 1.0
    assert full["P@10"] == 3 / 10


def test_depth_sweep_default_depths_cover_zero_to_the_deepest() -> None:
    sweep = depth_sweep(SWEEP_FIRST, SWEEP_MODEL, SWEEP_QRELS, measures=["nDCG@10"])
    assert sorted(set(sweep["depth"])) == [0, 1, 2, 3, 4, 5]
    assert len(sweep) == 6 * 2
    assert list(sweep.columns) == ["depth", "qid", "nDCG@10"]


# --- run files ---------------------------------------------------------------------------------


def test_write_trec_run_round_trips(tmp_path: Path) -> None:
    run = {
        "10": {"a": 0.1, "b": 1 / 3, "c": 1 / 3, "d": -2.5e-7},
        "9": {"x": 12.0, "y": np.float64(0.2), "z": np.float32(0.75)},
    }
    path = tmp_path / "runs" / "dl19__model.trec"
    write_trec_run(run, path, "model")
    assert read_run(path) == {qid: {pid: float(score) for pid, score in scores.items()} for qid, scores in run.items()}
    lines = [line.split() for line in path.read_text(encoding="utf-8").splitlines()]
    # queries in numeric order, passages in trec_eval order with ranks 1..n, the tag on every line
    assert [(qid, pid, rank) for qid, _, pid, rank, _, _ in lines] == [
        ("9", "x", "1"),
        ("9", "z", "2"),
        ("9", "y", "3"),
        ("10", "c", "1"),
        ("10", "b", "2"),
        ("10", "a", "3"),
        ("10", "d", "4"),
    ]
    assert {line[1] for line in lines} == {"Q0"} and {line[5] for line in lines} == {"model"}
    assert [path.name for path in path.parent.iterdir()] == ["dl19__model.trec"]


def test_write_trec_run_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "run.trec"
    path.write_text("old run\n", encoding="utf-8")
    real_ranking = evaluation.ranking_from_run
    calls = []

    def failing_ranking(scores):
        calls.append(scores)
        if len(calls) == 2:
            raise RuntimeError("model crashed")
        return real_ranking(scores)

    monkeypatch.setattr(evaluation, "ranking_from_run", failing_ranking)
    with pytest.raises(RuntimeError, match="model crashed"):
        write_trec_run({"1": {"a": 1.0}, "2": {"b": 1.0}}, path, "tag")
    assert len(calls) == 2  # the first query was already written when it failed
    assert path.read_text(encoding="utf-8") == "old run\n"
    assert [p.name for p in tmp_path.iterdir()] == ["run.trec"]


@pytest.mark.parametrize("tag", ["", "two words", "tab\tbed"])
def test_write_trec_run_rejects_a_bad_tag(tag: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="'tag'"):
        write_trec_run({"1": {"a": 1.0}}, tmp_path / "run.trec", tag)
    assert not (tmp_path / "run.trec").exists()


def test_binary_judgments_count_grade_one_as_relevant_graded_ones_from_two() -> None:
    run = {"q1": {"a": 3.0, "b": 2.0, "c": 1.0}}
    binary = {"q1": {"b": 1, "c": 0}}  # MS MARCO's dev-small: grade 1 is the only relevant grade
    graded = {"q1": {"a": 1, "b": 2, "c": 3}}  # TREC DL's: rel >= 2 (trec_eval -l 2)
    assert relevance_level(binary) == 1 and relevance_level(graded) == 2
    assert evaluate(run, binary, ["MRR@10", "R@10"]) == {"MRR@10": 0.5, "R@10": 1.0}
    assert evaluate(run, graded, ["MRR@10", "P@10"]) == pytest.approx({"MRR@10": 0.5, "P@10": 0.2})
    assert cutoff_curve(run, binary, [1, 2]).tolist() == [0.0, 1.0]
