"""Chapter 6's protocol (``lib.experiments.tilde_protocol``): its test years, the starting BERT, the training pairs of
each profile (DL21's in the book subset, MS MARCO's training judgments in the ``paper`` profile's export) and
Table 2's systems."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import BertModel

from lib.core import paths
from lib.core.profiles import get_profile
from lib.core.types import JudgedSet, query_order, ranking_from_run, top_of_run
from lib.data import book_texts, load_queries, load_run, read_collection, read_qrels, read_queries, registry
from lib.data.splits import TEST_SETS
from lib.evaluation import measures as evaluation
from lib.experiments import model_runs
from lib.experiments.distillation_set import DistillationSet
from lib.experiments.tilde_protocol import (
    StartingBert,
    check_test_sets,
    evaluation_year,
    judged_groups,
    judged_source,
    judged_training_data,
    pooled_cache,
    run_names,
    starting_bert,
    table2_systems,
    tilde_training_data,
    trained_part,
)
from lib.models.bi_encoder import BiEncoder
from lib.models.tilde import PASSAGE_MARKER_ID, QUERY_MARKER_ID
from lib.representations.bert import CLS_ID
from lib.representations.pretrained import minilm_folder
from lib.representations.text import DOC_MAX_LENGTH
from lib.reranking.dense import Encodings, encode
from lib.reranking.tilde_runs import random_order
from lib.reranking.tilde_scoring import TildeScores
from lib.training.tilde import fold_training_data, msmarco_training_pairs, with_teacher_pairs
from tests.experiments.test_first_stage_runs import DEV_QUERIES, export  # noqa: F401  (fixture)
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
    year = {stage: JudgedSet("dl19", {}, {}, run) for stage, run in (("bm25", FIRST_STAGE), ("splade-pp-ed", OTHER))}
    tk2 = {"q1": {"a": 0.0, "b": 9.0, "c": 1.0}, "q2": {"a": 0.0, "c": 1.0}, "q3": {"x": 1.0}}
    smoke = get_profile("smoke")
    evaluation.write_trec_run(tk2, model_runs.scores_path(smoke, "02_training", "dl19", "tk2"), tag="tk2")
    scores = {"bm25": _scores(FIRST_STAGE), "splade-pp-ed": _scores(OTHER)}
    systems, baseline_of, left_out = table2_systems(
        year, scores, {"bm25": "BM25"}, get_profile("smoke"), seed=3, depth=3
    )
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
    minilm = starting_bert(get_profile("smoke"))
    assert minilm.name == "minilm" and minilm.markers == (CLS_ID, CLS_ID) and minilm.pooling == "unit-mean"
    assert "all-MiniLM-L6-v2" in str(minilm) and minilm.tokenizer.vocab_size == 30522
    with pytest.raises(FileNotFoundError, match=r"small-bert/config\.json: missing .*chapter 2"):
        starting_bert(get_profile("smoke"), "small-bert")
    with pytest.raises(ValueError, match="'start'"):
        starting_bert(get_profile("smoke"), "bert-large")
    paper = starting_bert(get_profile("paper"))  # the pinned files, from the fake mirror of the fixture
    assert isinstance(paper, StartingBert) and paper.path == registry.paper_dir() / "google-bert" / "bert-base-uncased"
    assert str(paper) == "bert-base-uncased (Hugging Face revision 86b5e0934494, hash-checked)"
    assert paper.markers == (PASSAGE_MARKER_ID, QUERY_MARKER_ID) and paper.tokenizer.vocab_size == 10
    assert paper.tilde().bert.config.hidden_size == 8, "TILDE starts from the fetched folder's weights"


def test_every_new_model_of_a_start_has_the_same_weights() -> None:
    minilm = starting_bert(get_profile("smoke"))
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
    made = judged_groups(get_profile("book"), data, texts, depth=50)
    assert made and {g.qid for g in made} <= set(data.train_qids) & set(load_run("dl21", "bm25"))
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
    minilm = starting_bert(get_profile("smoke"))
    vectors = encode(BiEncoder(minilm_folder()), minilm.tokenizer, texts, pids, DOC_MAX_LENGTH)
    return DistillationSet({}, {}, [], [], {}, vectors)


def test_the_pooled_cache_holds_the_teachers_passage_vectors_for_minilm(converted: Path, tmp_path: Path) -> None:
    texts = book_texts()
    pids = sorted(texts)[:12]
    teacher = _teacher_of(pids, texts)
    minilm = starting_bert(get_profile("smoke"))
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
    minilm = starting_bert(get_profile("smoke"))
    with pytest.raises(ValueError, match="teacher vectors differ"):
        pooled_cache(tmp_path / "pooled", minilm.tilde(), minilm.tokenizer, texts, wrong)
    first = minilm.tilde()
    first.pooling = "mean"  # another pooling: the cache starts empty
    cache = pooled_cache(tmp_path / "other", first, minilm.tokenizer, texts, teacher)
    assert len(cache) == 0 and not (tmp_path / "other").exists()


#: Training queries of the export below: real dev-small queries that the export's dev-small does not hold.
TRAIN_QUERIES = 8
#: A DL20 query's text under an id of MS MARCO's training set: a test query all the same.
DL20_TEXT_ID = "990000001"


@pytest.fixture
def paper_train(
    converted: Path,
    export: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Path:
    """``export`` with MS MARCO's training files, read as the ``paper`` profile's folder (artifacts in ``tmp_path``).

    ``queries.train.tsv``: :data:`TRAIN_QUERIES` real dev-small queries after the export's, a DL19 query
    and a DL20 query's text under :data:`DL20_TEXT_ID`; ``qrels.train.txt`` judges each of them relevant
    (grade 1, MS MARCO's only grade) to one export passage, except the last training query (unjudged);
    the first query is also judged to a passage without text.
    """
    pids = list(read_collection(export / "collection.tsv"))
    train = list(read_queries(converted / "queries.dev-small.tsv").items())[DEV_QUERIES : DEV_QUERIES + TRAIN_QUERIES]
    dl19_qid, dl19_text = next(iter(read_queries(export / "queries.dl19.tsv").items()))
    dl20_text = next(iter(read_queries(export / "queries.dl20.tsv").values()))
    queries = [*train, (dl19_qid, dl19_text), (DL20_TEXT_ID, dl20_text)]
    (export / "queries.train.tsv").write_text("".join(f"{qid}\t{text}\n" for qid, text in queries), encoding="utf-8")
    judged = [qid for qid, _ in queries if qid != train[-1][0]]
    lines = [f"{qid} 0 {pids[i]} 1\n" for i, qid in enumerate(judged)] + [f"{train[0][0]} 0 no-text 1\n"]
    (export / "qrels.train.txt").write_text("".join(lines), encoding="utf-8")
    monkeypatch.setenv("TKBOOK_DATA", str(export.parent))
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path / "artifacts"))
    monkeypatch.setenv(paths.CONVERTED_VARIABLE, "converted")  # restored after the test
    paths.use_profile_data("paper")
    return export


def _teacher(run: dict[str, dict[str, float]], queries: dict[str, str]) -> DistillationSet:
    return DistillationSet(queries, run, [], [], {}, Encodings([], torch.empty(0, 1)))


def test_the_paper_profile_trains_on_ms_marcos_training_judgments_without_test_queries(paper_train: Path) -> None:
    texts, paper = book_texts(), get_profile("paper")
    data = judged_training_data(paper, "dl19", texts, seed=42)
    train_queries, train_qrels = (
        read_queries(paper_train / "queries.train.tsv"),
        read_qrels(paper_train / "qrels.train.txt"),
    )
    assert data.train_sets == ("train",) and data.pairs
    assert all(train_qrels[qid][pid] >= 1 and pid in texts for qid, pid in data.pairs), "judged pairs with text"
    tests = {name: load_queries(name) for name in TEST_SETS}
    test_texts = {text for queries in tests.values() for text in queries.values()}
    paired = {qid for qid, _ in data.pairs}
    assert not paired & {qid for queries in tests.values() for qid in queries}, "no test-year query id"
    assert not {train_queries[qid] for qid in paired} & test_texts, "no test-year query text"
    every = msmarco_training_pairs(train_queries, train_qrels, texts)  # the command line's pairs
    dl19_qid = next(iter(tests["dl19"]))
    assert {qid for qid, _ in set(every) - set(data.pairs)} == {dl19_qid, DL20_TEXT_ID}, "only test queries dropped"
    assert len(data.pairs) == TRAIN_QUERIES - 1 and data.train_qids == sorted(paired, key=query_order)
    assert data.validation_qids == sorted(read_qrels(paper_train / "qrels.dev-small.txt"), key=query_order)
    assert paper.training.validation_set == "dev-small" and not set(data.validation_qids) & paired
    assert judged_training_data(paper, "dl20", texts, seed=42).pairs == data.pairs, "one model for both test years"
    assert list(data.sources) == ["MS MARCO train judged pairs (grade ≥ 1)"]
    assert judged_source(data).startswith("the pairs (query, passage judged relevant) of MS MARCO's training")
    assert judged_groups(paper, data, texts, depth=10) == [], "MS MARCO's training queries have no BM25 run"


def test_under_paper_the_teacher_pairs_only_the_queries_without_judgments(paper_train: Path) -> None:
    texts, paper = book_texts(), get_profile("paper")
    judged = judged_training_data(paper, "dl19", texts, seed=42)
    train_queries = read_queries(paper_train / "queries.train.tsv")
    unjudged = next(qid for qid in train_queries if qid not in judged.qrels and qid != DL20_TEXT_ID)
    first = judged.train_qids[0]
    teacher = _teacher({first: {"0": 1.0}, unjudged: {"421": 0.2, "887": 0.9}}, train_queries)
    data = tilde_training_data(paper, "dl19", texts, teacher, seed=42)
    assert data.pairs == [*judged.pairs, (unjudged, "887")], "a judged query keeps its judgments"
    assert data.queries[unjudged] == train_queries[unjudged]
    validation = judged.validation_qids[0]
    with pytest.raises(ValueError, match="also judged training or validation queries"):
        tilde_training_data(paper, "dl19", texts, _teacher({validation: {"0": 1.0}}, judged.queries), seed=42)


def test_under_paper_test_years_rerank_the_scored_bm25_run_and_unheld_first_stages_are_left_out(
    paper_train: Path,
) -> None:
    unscored = load_run("dl19", "bm25")
    scored = {qid: {pid: float(rank) for rank, pid in enumerate(ranked, start=1)} for qid, ranked in unscored.items()}
    evaluation.write_trec_run(scored, paths.run_path("paper", "dl19", "bm25"), tag="bm25")  # chapter 1's retrieval
    year = evaluation_year("dl19", ["bm25", "splade-pp-ed"], book_texts(), get_profile("paper"), depth=3)
    assert list(year) == ["bm25"], "the export has no SPLADE++ run"
    assert year["bm25"].run == top_of_run(scored, 3), "chapter 1's scored run, not the export's unscored one"


def test_the_book_profiles_train_on_dl21_as_before(
    converted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path))
    monkeypatch.setenv(paths.CONVERTED_VARIABLE, "converted")
    texts = book_texts()
    for name, max_train_queries in (("book", None), ("smoke", 4 * get_profile("smoke").query_limit)):
        data = judged_training_data(get_profile(name), "dl19", texts, seed=42)
        assert data == fold_training_data("dl19", texts, seed=42, max_train_queries=max_train_queries), name
    assert data.train_sets == ("dl21",)
    assert (
        judged_source(data) == "the pairs (query, passage judged ≥ 2) of DL21, the judged year that is not a test year"
    )
    teacher = _teacher({"pseudo-1": {"0": 0.1, "421": 0.5}}, {"pseudo-1": "pseudo words"})
    both = tilde_training_data(get_profile("smoke"), "dl19", texts, teacher, seed=42)
    assert both == with_teacher_pairs(data, teacher.teacher, teacher.queries)
    year = evaluation_year("dl19", ["bm25", "splade-pp-ed"], texts, get_profile("smoke"), depth=5)
    assert list(year) == ["bm25", "splade-pp-ed"]
    for stage, judged in year.items():
        assert judged.run == top_of_run({q: load_run("dl19", stage)[q] for q in judged.run}, 5), stage
