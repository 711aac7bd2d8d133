"""Re-ranking: one scoring pass over the first stage's top candidates, re-ordering, depth tuning."""

from __future__ import annotations

import pytest
import torch

from lib import data
from lib.core.types import query_order, ranking_from_run
from lib.evaluation.depths import depth_sweep, tune_depth
from lib.evaluation.measures import evaluate
from lib.reranking.scoring import (
    ScoringOptions,
    rerank,
    rerank_at_depth,
    score_candidate_columns,
    score_candidates,
    scored_depth,
)
from tests.training.test_pairwise import BagModel, HashTokenizer


@pytest.fixture(scope="module")
def dl19() -> dict:
    """Eight DL19 queries with their BM25 top-100, judgments and v1 passages."""
    try:
        queries, qrels, run = data.load_queries("dl19"), data.load_qrels("dl19"), data.load_run("dl19", "bm25")
        texts = data.load_collection("v1")
    except FileNotFoundError as error:
        pytest.skip(f"converted data missing: {error}")
    qids = sorted(qrels, key=query_order)[:8]
    return {
        "queries": {q: queries[q] for q in qids},
        "qrels": {q: qrels[q] for q in qids},
        "run": {q: run[q] for q in qids},
        "texts": texts,
    }


@pytest.fixture(scope="module")
def model() -> BagModel:
    torch.manual_seed(0)
    return BagModel(dropout=0.5)  # dropout: scoring must happen in eval mode to be repeatable


def score(dl19: dict, model: BagModel, depth: int | None, device: str | None = None, **options) -> dict:
    """The model's scores of DL19's top ``depth``, ``options`` those of :class:`ScoringOptions`."""
    return score_candidates(
        model, HashTokenizer(), dl19["queries"], dl19["texts"], dl19["run"], depth, ScoringOptions(**options), device
    )


# --- scoring -----------------------------------------------------------------------------------------


def test_scores_do_not_depend_on_the_batch_size(dl19: dict, model: BagModel) -> None:
    one = score(dl19, model, depth=15, batch_size=1)
    seven = score(dl19, model, depth=15, batch_size=7)
    assert one.keys() == seven.keys() == dl19["run"].keys()
    for qid in one:
        assert one[qid].keys() == seven[qid].keys()
        for pid, value in one[qid].items():
            assert value == pytest.approx(seven[qid][pid], rel=1e-5, abs=1e-6)


class TwoScores(torch.nn.Module):
    """The bag model's score and its double: a model with two scores per pair."""

    def __init__(self, model: BagModel, width: int = 2) -> None:
        super().__init__()
        self.model, self.width = model, width

    def forward(self, *batch: torch.Tensor) -> torch.Tensor:
        score = self.model(*batch)
        return torch.stack([score, 2 * score, -score][: self.width], dim=1)


def test_a_model_with_several_scores_gives_one_run_per_column(dl19: dict, model: BagModel) -> None:
    one = score(dl19, model, depth=10, batch_size=7)
    args = (HashTokenizer(), dl19["queries"], dl19["texts"], dl19["run"], 10, ScoringOptions(batch_size=7))
    first, double = score_candidate_columns(TwoScores(model), *args, columns=2)
    assert first.keys() == double.keys() == one.keys()
    for qid in one:
        assert list(first[qid]) == list(one[qid])
        for pid, value in one[qid].items():
            assert first[qid][pid] == pytest.approx(value, rel=1e-5, abs=1e-6)
            assert double[qid][pid] == pytest.approx(2 * value, rel=1e-5, abs=1e-6)
    with pytest.raises(ValueError, match=r"shape \(7, 3\), expected \(7, 2\)"):
        score_candidate_columns(TwoScores(model, width=3), *args, columns=2)
    with pytest.raises(ValueError, match="expected \\(7,\\)"):
        score_candidates(TwoScores(model), *args)


def test_only_the_top_depth_is_scored_in_eval_mode(dl19: dict, model: BagModel) -> None:
    model.train()
    scores = score(dl19, model, depth=12, batch_size=50)
    assert model.training  # the mode is restored
    for qid, candidates in dl19["run"].items():
        assert list(scores[qid]) == ranking_from_run(candidates)[:12]
    assert score(dl19, model, depth=12, batch_size=50) == scores  # no dropout: repeatable
    assert all(not scored for scored in score(dl19, model, depth=0).values())
    everything = score(dl19, model, depth=None, batch_size=256)
    assert all(len(everything[qid]) == len(dl19["run"][qid]) for qid in dl19["run"])


def test_a_missing_text_names_query_and_passage(dl19: dict, model: BagModel) -> None:
    qid = next(iter(dl19["run"]))
    pid = ranking_from_run(dl19["run"][qid])[3]
    texts = {p: t for p, t in dl19["texts"].items() if p != pid}
    with pytest.raises(KeyError, match=f"{qid}.*{pid}"):
        score_candidates(model, HashTokenizer(), dl19["queries"], texts, dl19["run"], depth=10)
    score_candidates(model, HashTokenizer(), dl19["queries"], texts, dl19["run"], depth=3)  # not needed at depth 3
    queries = {q: t for q, t in dl19["queries"].items() if q != qid}
    with pytest.raises(KeyError, match=qid):
        score_candidates(model, HashTokenizer(), queries, dl19["texts"], dl19["run"], depth=3)


def test_scoring_moves_the_model_to_the_device(dl19: dict) -> None:
    torch.manual_seed(0)
    model = BagModel()
    scores = score(dl19, model, depth=2, device="cpu", amp=False)
    assert all(len(scored) == 2 for scored in scores.values())
    with pytest.raises(ValueError, match="'device'"):
        score(dl19, model, depth=2, device="tpu-9")


# --- re-ranking and the depth ---------------------------------------------------------------------------


def test_rerank_depth_zero_is_the_first_stage(dl19: dict, model: BagModel) -> None:
    scores = score(dl19, model, depth=10)
    first = rerank(dl19["run"], scores, 0)
    for qid, candidates in dl19["run"].items():
        assert ranking_from_run(first[qid]) == ranking_from_run(candidates)
    assert evaluate(first, dl19["qrels"]) == evaluate(dl19["run"], dl19["qrels"])
    reranked = rerank(dl19["run"], scores, 10)
    for qid, candidates in dl19["run"].items():
        order = ranking_from_run(candidates)
        assert ranking_from_run(reranked[qid]) == rerank_at_depth(order, scores[qid], 10)
        assert ranking_from_run(reranked[qid])[10:] == order[10:]
    with pytest.raises(KeyError):
        rerank(dl19["run"], scores, 11)


# A hand-made case: the first stage ranks d1 … d5; d3 is the only relevant passage (RR 1/3), the
# model puts d3 first. Re-ranking the top 1 or 2 changes nothing for d3; from depth 3 on, RR = 1.
FIRST = {"q": {"d1": 5.0, "d2": 4.0, "d3": 3.0, "d4": 2.0, "d5": 1.0}}
MODEL = {"q": {"d1": 0.1, "d2": 0.3, "d3": 0.9, "d4": 0.5, "d5": 0.0}}
QRELS = {"q": {"d3": 3, "d1": 0}}


def test_tune_depth_picks_the_best_and_the_smallest_on_ties() -> None:
    best, curve = tune_depth(FIRST, MODEL, QRELS)
    assert list(curve.index) == [0, 1, 2, 3, 4, 5]
    assert curve["MRR@10"].tolist() == pytest.approx([1 / 3, 1 / 3, 1 / 3, 1.0, 1.0, 1.0])
    assert best == 3
    assert tune_depth(FIRST, MODEL, QRELS, depths=[5, 4, 2])[0] == 4
    assert tune_depth(FIRST, MODEL, QRELS, depths=[1, 2, 0])[0] == 0  # all tie: depth 0, the first stage


def test_tune_depth_on_real_scores(dl19: dict, model: BagModel) -> None:
    scores = score(dl19, model, depth=30)
    assert scored_depth(dl19["run"], scores) == 30
    best, curve = tune_depth(dl19["run"], scores, dl19["qrels"], metric="nDCG@10")
    assert list(curve.index) == list(range(31))
    assert set(curve.columns) == {"nDCG@10", "MRR@10"}
    assert curve.loc[best, "nDCG@10"] == curve["nDCG@10"].max()
    assert (curve.loc[: best - 1, "nDCG@10"] < curve["nDCG@10"].max()).all()
    assert curve.loc[0, "nDCG@10"] == pytest.approx(evaluate(dl19["run"], dl19["qrels"], ["nDCG@10"])["nDCG@10"])
    frame = depth_sweep(dl19["run"], scores, dl19["qrels"], [best], ["nDCG@10"])
    assert frame["nDCG@10"].mean() == pytest.approx(curve.loc[best, "nDCG@10"])
