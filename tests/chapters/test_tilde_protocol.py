"""Chapter 6's protocol (``lib.chapters.tilde_protocol``): its test years, the starting BERT and Table 2's systems."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import BertModel

from lib.chapters import experiments
from lib.chapters.distillation_set import DistillationSet
from lib.chapters.tilde_protocol import (
    EvaluationYear,
    StartingBert,
    check_test_sets,
    judged_groups,
    pooled_cache,
    run_names,
    starting_bert,
    table2_systems,
    trained_part,
)
from lib.core.types import ranking_from_run
from lib.data import book_texts, registry
from lib.evaluation import measures as evaluation
from lib.models.bi_encoder import BiEncoder
from lib.models.tilde import PASSAGE_MARKER_ID, QUERY_MARKER_ID
from lib.representations.bert import CLS_ID
from lib.representations.pretrained import minilm_folder
from lib.representations.text import DOC_MAX_LENGTH
from lib.reranking.dense import Encodings, encode
from lib.reranking.tilde_runs import random_order
from lib.reranking.tilde_scoring import TildeScores
from lib.training.tilde import fold_training_data
from tests.representations.test_pretrained import fake_bert_base  # noqa: F401  (fixture)

FIRST_STAGE = {"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"a": 2.0, "c": 1.0}}
OTHER = {"q1": {"c": 5.0, "a": 4.0}, "q2": {"c": 2.0}}


def _scores(run: dict) -> TildeScores:
    """QL prefers the first stage's last candidate, DL its first."""
    return TildeScores(
        {q: {p: float(i) for i, p in enumerate(c)} for q, c in run.items()},
        {q: {p: -float(i) for i, p in enumerate(c)} for q, c in run.items()},
    )


@pytest.fixture
def artifacts_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path / "artifacts"))
    return tmp_path / "artifacts"


def test_check_test_sets_names_the_bad_parameter() -> None:
    check_test_sets(["dl19", "dl20"], ["dl19"])
    with pytest.raises(ValueError, match="'test_sets'"):
        check_test_sets(["dl18"], [])
    with pytest.raises(ValueError, match="'ablation_sets'"):
        check_test_sets(["dl19"], ["dl20"])


def test_table2_systems_rerank_each_first_stage_and_add_chapter_2s_models(artifacts_root: Path) -> None:
    year = EvaluationYear("dl19", {}, {}, {"bm25": FIRST_STAGE, "splade-pp-ed": OTHER})
    tk2 = {"q1": {"a": 0.0, "b": 9.0, "c": 1.0}, "q2": {"a": 0.0, "c": 1.0}, "q3": {"x": 1.0}}
    evaluation.write_trec_run(tk2, experiments.scores_path("smoke", "02_training", "dl19", "tk2"), tag="tk2")
    scores = {"bm25": _scores(FIRST_STAGE), "splade-pp-ed": _scores(OTHER)}
    systems, baseline_of, left_out = table2_systems(year, scores, {"bm25": "BM25"}, "smoke", seed=3, depth=3)
    assert list(systems) == [
        "BM25",
        "BM25 in random order",
        "BM25 + TILDE-QL",
        "BM25 + TILDE-QDL",
        "splade-pp-ed",
        "splade-pp-ed + TILDE-QL",
        "splade-pp-ed + TILDE-QDL",
        "BM25 + TK-2 (chapter 2)",
    ]
    assert baseline_of["splade-pp-ed + TILDE-QL"] == "splade-pp-ed" and baseline_of["BM25 + TK-2 (chapter 2)"] == "BM25"
    assert systems["BM25 in random order"] == random_order(FIRST_STAGE, 3)
    assert ranking_from_run(systems["BM25 + TILDE-QL"]["q1"]) == ["c", "b", "a"]
    assert ranking_from_run(systems["BM25 + TK-2 (chapter 2)"]["q1"]) == ["b", "c", "a"]
    assert set(systems["BM25 + TK-2 (chapter 2)"]) == {"q1", "q2"}
    [message] = left_out
    assert message.startswith("BERT-cat row left out") and "chapter 2 (02_training)" in message


def test_the_starting_encoder_is_minilm_the_small_bert_or_the_pinned_bert_base(
    artifacts_root: Path,
    fake_bert_base: BertModel,  # noqa: F811
) -> None:
    minilm = starting_bert("smoke")
    assert minilm.name == "minilm" and minilm.markers == (CLS_ID, CLS_ID) and minilm.pooling == "unit-mean"
    assert "all-MiniLM-L6-v2" in str(minilm) and minilm.tokenizer.vocab_size == 30522
    with pytest.raises(FileNotFoundError, match=r"small-bert/config\.json: missing .*chapter 2"):
        starting_bert("smoke", "small-bert")
    with pytest.raises(ValueError, match="'start'"):
        starting_bert("smoke", "bert-large")
    paper = starting_bert("paper")  # the pinned files, from the fake mirror of the fixture
    assert isinstance(paper, StartingBert) and paper.path == registry.paper_dir() / "google-bert" / "bert-base-uncased"
    assert str(paper) == "bert-base-uncased (Hugging Face revision 86b5e0934494, hash-checked)"
    assert paper.markers == (PASSAGE_MARKER_ID, QUERY_MARKER_ID) and paper.tokenizer.vocab_size == 10
    assert paper.tilde().bert.config.hidden_size == 8, "TILDE starts from the fetched folder's weights"


def test_every_new_model_of_a_start_has_the_same_weights() -> None:
    minilm = starting_bert("smoke")
    torch.manual_seed(1)
    first = minilm.tilde().state_dict()
    torch.manual_seed(2)
    second = minilm.tilde().state_dict()
    assert all(torch.equal(first[name], second[name]) for name in first), "a re-run must find the same start"
    left, right = minilm.tilde_v2(), minilm.tilde_v2()
    assert torch.equal(left.projection.weight, right.projection.weight)


def test_run_names_name_this_chapters_rerankings_only() -> None:
    systems = ["BM25", "BM25 in random order", "BM25 + TILDE-QL", "SPLADE++ + TILDE-QDL", "BM25 + TILDEv2",
               "BM25 + TK-2 (chapter 2)"]  # fmt: skip
    assert run_names(systems) == {
        "BM25 + TILDE-QL": "tilde-ql",
        "SPLADE++ + TILDE-QDL": "splade-pp-tilde-qdl",
        "BM25 + TILDEv2": "tildev2",
    }


def test_judged_groups_use_bm25_candidates_not_judged_relevant(converted: Path) -> None:
    texts = book_texts()
    data = fold_training_data("dl19", texts, max_train_queries=2)
    made = judged_groups(data, texts, depth=50)
    assert made and {g.qid for g in made} <= set(data.train_qids)
    for group in made:
        assert data.qrels[group.qid][group.positive] >= 2
        assert all(data.qrels[group.qid].get(pid, 0) < 1 for pid in group.negatives)
        assert 0 < len(group.negatives) <= 50 and all(pid in texts for pid in group.negatives)


def test_trained_part_says_what_a_setting_fine_tunes() -> None:
    assert trained_part(None) == "the whole encoder and the head"
    assert "frozen encoder" in trained_part(0)
    assert trained_part(1) == "the encoder's top 1 layer and the head"
    assert trained_part(2) == "the encoder's top 2 layers and the head"


def _teacher_of(pids: list[str], texts: dict[str, str]) -> DistillationSet:
    minilm = starting_bert("smoke")
    vectors = encode(BiEncoder(minilm_folder()), minilm.tokenizer, texts, pids, DOC_MAX_LENGTH)
    return DistillationSet({}, {}, [], [], {}, vectors)


def test_the_pooled_cache_holds_the_teachers_passage_vectors_for_minilm(converted: Path, tmp_path: Path) -> None:
    texts = book_texts()
    pids = sorted(texts)[:12]
    teacher = _teacher_of(pids, texts)
    minilm = starting_bert("smoke")
    model = minilm.tilde()
    cache = pooled_cache(tmp_path / "pooled", model, minilm.tokenizer, texts, teacher)
    rows = model.rows(minilm.tokenizer.pieces([texts[pid] for pid in pids]), "passage")
    found, missing = cache.get(model.encoder_fingerprint(), rows)
    assert missing == [] and len(found) == len(pids)
    computed = model.pooled(minilm.tokenizer.pieces([texts[pid] for pid in pids[-2:]]), "passage")  # not checked ones
    torch.testing.assert_close(computed, teacher.passages.vectors[-2:], atol=1e-4, rtol=1e-4)


def test_the_pooled_cache_refuses_vectors_that_are_not_the_encoders(converted: Path, tmp_path: Path) -> None:
    texts = book_texts()
    pids = sorted(texts)[:3]
    teacher = _teacher_of(pids, texts)
    wrong = DistillationSet({}, {}, [], [], {}, Encodings(pids, teacher.passages.vectors.flip(0)))
    minilm = starting_bert("smoke")
    with pytest.raises(ValueError, match="teacher vectors differ"):
        pooled_cache(tmp_path / "pooled", minilm.tilde(), minilm.tokenizer, texts, wrong)
    first = minilm.tilde()
    first.pooling = "mean"  # another pooling: the cache starts empty
    cache = pooled_cache(tmp_path / "other", first, minilm.tokenizer, texts, teacher)
    assert len(cache) == 0 and not (tmp_path / "other").exists()
