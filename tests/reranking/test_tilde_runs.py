"""Scoring first stages through a TILDE index (``lib.reranking.tilde_runs``): candidates, index kept or not, ties."""

from __future__ import annotations

from pathlib import Path

import pytest

from lib import data
from lib.core.types import query_order, ranking_from_run, top_of_run
from lib.models.tilde_vocabulary import TargetVocabulary
from lib.representations.bert import WordPieceTokenizer
from lib.reranking.tilde_index import build_index
from lib.reranking.tilde_runs import candidate_pids, random_order, score_first_stages, tied_share
from lib.reranking.tilde_scoring import score_run
from tests.tilde_helpers import tiny_tilde

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_candidate_pids_lists_each_passage_once_in_order_of_appearance() -> None:
    runs = {"bm25": {"q1": {"a": 2.0, "b": 1.0}, "q2": {"b": 5.0}}, "splade": {"q1": {"c": 1.0, "a": 0.5}}}
    assert candidate_pids(runs) == ["a", "b", "c"]


def test_tied_share_counts_candidates_that_share_a_score_within_a_query() -> None:
    scores = {"q1": {"a": -1.0, "b": -1.0, "c": -2.0}, "q2": {"d": -1.0}}
    assert tied_share(scores) == pytest.approx(2 / 4)
    assert tied_share({"q": {"a": -1.0, "b": -2.0}}) == 0.0
    assert tied_share({}) == 0.0


def test_random_order_is_a_seeded_permutation_of_every_querys_candidates() -> None:
    run = {"q1": {f"p{i}": float(i) for i in range(20)}, "q2": {"x": 1.0, "y": 0.5}}
    shuffled = random_order(run, seed=7)
    assert shuffled == random_order(run, seed=7) and shuffled != random_order(run, seed=8)
    assert {q: set(r) for q, r in shuffled.items()} == {q: set(r) for q, r in run.items()}
    assert ranking_from_run(shuffled["q1"]) != ranking_from_run(run["q1"])


def test_scores_through_one_index_equal_score_run_and_the_index_is_removed_unless_kept(
    converted: Path, tmp_path: Path
) -> None:
    tokenizer = WordPieceTokenizer.from_vocab()
    texts = data.load_collection("v1")
    queries = data.load_queries("dl19")
    full = data.load_run("dl19", "bm25")
    qids = sorted(full, key=query_order)[:2]
    runs = {
        "bm25": top_of_run({q: {p: s for p, s in full[q].items() if p in texts} for q in qids}, 4),
        "other": top_of_run({q: {p: -s for p, s in full[q].items() if p in texts} for q in qids}, 3),
    }
    model, vocabulary = tiny_tilde().eval(), TargetVocabulary.cleaned(tokenizer)
    kept, summary = score_first_stages(
        model, tokenizer, texts, queries, runs, tmp_path / "kept", vocabulary, progress=False
    )
    assert summary.folder == tmp_path / "kept" and (tmp_path / "kept" / "index.json").is_file()
    assert summary.passages == len(candidate_pids(runs)) and summary.log_prob_bytes_per_passage == 2 * 30522
    reference = build_index(model, tokenizer, texts, candidate_pids(runs), tmp_path / "ref", vocabulary, progress=False)
    for name, run in runs.items():
        expected = score_run(reference, tokenizer, queries, run, model=model)
        assert kept[name].ql == expected.ql and kept[name].dl == expected.dl
    gone, summary = score_first_stages(
        model,
        tokenizer,
        texts,
        queries,
        runs,
        tmp_path / "gone",
        vocabulary,
        "float32",
        keep_index=False,
        progress=False,
    )
    assert summary.folder is None and not (tmp_path / "gone").exists()
    assert summary.log_prob_bytes_per_passage == 4 * 30522
    assert set(gone["bm25"].ql) == set(qids)
    with pytest.raises(ValueError, match="'runs' is empty"):
        score_first_stages(model, tokenizer, texts, queries, {}, tmp_path / "none", vocabulary)
