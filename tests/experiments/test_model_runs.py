"""The book-scale protocol of chapter 2: the distillation protocol on real data, settings, model construction."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import torch

from lib.core import paths
from lib.core.profiles import TrainingSettings, get_profile
from lib.core.types import ranking_from_run, top_of_run
from lib.data import load_queries, load_run, read_run, registry
from lib.data.pseudo_queries import PSEUDO_PREFIX
from lib.data.registry import sha256_of
from lib.evaluation import measures as evaluation
from lib.experiments import model_runs
from lib.models.bi_encoder import BiEncoder
from lib.representations.bert import WordPieceTokenizer, load_tokenizer
from lib.representations.pretrained import WeightsError, glove_6b_50d, minilm_folder
from lib.representations.text import Vocabulary
from lib.training import pairwise
from lib.training.pairwise import ValidationSet
from tests.data.test_loaders import data_folders  # noqa: F401  (fixture: a tiny book subset and MS MARCO export)
from tests.experiments.test_distillation_set import corpus, index  # noqa: F401,F811  (the real index slice)
from tests.representations.test_pretrained import fake_bert_base, glove_300d_file  # noqa: F401  (fixture)

pytestmark = pytest.mark.usefixtures("converted", "one_torch_thread")


@pytest.fixture(scope="module")
def protocol(
    index: Path,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> model_runs.Protocol:
    """The smoke profile's protocol over a real slice of the book index (teacher: the MiniLM bi-encoder)."""
    settings = get_profile("smoke").training.replace(distill_bm25_depth=8, distill_triples_per_query=6)
    folder = tmp_path_factory.mktemp("teacher")
    return model_runs.prepare_protocol(get_profile("smoke"), settings, 42, index, folder, progress=False)


def test_the_protocol_never_trains_or_validates_on_a_test_year(protocol: model_runs.Protocol) -> None:
    tests = {name: set(load_queries(name)) for name in ("dl19", "dl20")}
    training = {qid for qid, _, _ in protocol.triples}
    held_out = {qid for qid, _, _ in protocol.held_out}
    assert training and held_out and not training & held_out, "held-out queries are never trained on"
    pseudo = {qid for qid in protocol.queries if qid.startswith(PSEUDO_PREFIX)}
    assert pseudo and training | held_out <= set(load_queries("dev-small")) | pseudo
    assert set(protocol.validation.queries) <= set(load_queries("dl21"))
    for test in tests.values():
        assert not (training | held_out | set(protocol.validation.queries)) & test
    assert sorted(protocol.tests) == ["dl19", "dl20"]
    profile = get_profile("smoke")
    for name, test in protocol.tests.items():
        assert len(test.queries) == profile.query_limit and set(test.queries) <= tests[name]
        assert all(len(candidates) <= profile.training.candidate_depth for candidates in test.run.values())
    assert all(p in protocol.texts and n in protocol.texts for _, p, n in protocol.triples + protocol.held_out)
    assert len(protocol.margins) == len(protocol.triples) and len(protocol.held_out_margins) == len(protocol.held_out)
    summary = protocol.summary()
    assert summary["training triples"] + summary["held-out triples"] == summary["triples"]
    assert protocol.validation_set == "dl21"
    assert summary["validation queries (dl21)"] == len(protocol.validation.queries)


def test_pseudo_query_examples_show_the_query_its_passage_and_the_teachers_first_candidate(
    protocol: model_runs.Protocol,
) -> None:
    rows = model_runs.pseudo_query_examples(protocol, count=3, width=40)
    qids = sorted(q for q in protocol.queries if q.startswith(PSEUDO_PREFIX))[:3]
    assert [row["pseudo-query"] for row in rows] == [protocol.queries[q] for q in qids]
    for qid, row in zip(qids, rows, strict=True):
        source = protocol.texts[qid.removeprefix(PSEUDO_PREFIX)]
        assert row["cut from"] == source or (row["cut from"].endswith(" …") and source.startswith(row["cut from"][:-2]))
        assert len(row["cut from"]) <= 42


def test_query_sources_are_each_of_the_profiles_sources_alone() -> None:
    book = get_profile("book").training
    assert book.distill_queries is None and book.distill_pseudo_queries > 0, "the book trains on both sources"
    variants = model_runs.query_source_settings(book)
    assert list(variants) == ["dev-small only", "pseudo-queries only"]
    dev, pseudo = variants["dev-small only"], variants["pseudo-queries only"]
    assert dev.distill_queries is None and dev.distill_pseudo_queries == 0
    assert pseudo.distill_queries == 0 and pseudo.distill_pseudo_queries == book.distill_pseudo_queries
    assert dev.replace(distill_pseudo_queries=book.distill_pseudo_queries) == book


def test_a_profile_with_one_source_of_queries_has_nothing_to_compare() -> None:
    book = get_profile("book").training
    assert model_runs.query_source_settings(book.replace(distill_queries=0)) == {}
    assert model_runs.query_source_settings(book.replace(distill_pseudo_queries=0)) == {}


def test_each_profile_validates_on_its_own_set_and_the_prose_names_it() -> None:
    assert model_runs.validation_set(get_profile("book").training) == "dl21"
    assert model_runs.validation_set(get_profile("smoke").training) == "dl21"
    assert model_runs.validation_set(get_profile("paper").training) == "dev-small"
    assert model_runs.query_set_label("dl21") == "DL21"
    assert model_runs.query_set_label("dev-small") == "MS MARCO dev-small"


@pytest.fixture
def paper_export(data_folders: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """The paper profile reads the tiny MS MARCO export; its artifacts go to a fresh folder."""
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path / "artifacts"))
    paths.use_profile_data("paper")


@pytest.mark.usefixtures("paper_export")
def test_the_paper_profile_validates_on_dev_small_from_the_msmarco_export() -> None:
    paper = get_profile("paper")
    name = model_runs.validation_set(paper.training)
    with pytest.raises(FileNotFoundError, match="CH=01_data_and_first_stage PROFILE=paper"):
        model_runs.query_set(name, paper, paper.training.candidate_depth)  # the export's run is unscored
    scored = {"2": {"0": 7.5, "1": 3.25}, "1048585": {"0": 1.5}}  # what chapter 1 retrieves in its place
    evaluation.write_trec_run(scored, paths.run_path("paper", name, "bm25"), tag="bm25")
    validation = model_runs.query_set(name, paper, 1)
    assert validation.name == "dev-small"
    assert validation.queries == {"2": "andrew kaufman", "1048585": "what is paula deen's brother"}
    assert validation.qrels == {"2": {"1": 1}, "1048585": {"0": 1}}
    assert validation.run == {"2": {"0": 7.5}, "1048585": {"0": 1.5}}, "chapter 1's scored run, cut at the depth"


@pytest.mark.usefixtures("paper_export")
def test_table_2_compares_against_chapter_1s_scored_bm25_on_the_msmarco_export() -> None:
    with pytest.raises(FileNotFoundError, match="CH=01_data_and_first_stage PROFILE=paper"):
        model_runs.first_stage_baselines("paper", "dl19")  # the export's run is unscored: never compared against
    scored = {"19335": {"1": 9.5, "0": 2.0}}  # what chapter 1 retrieves in its place
    evaluation.write_trec_run(scored, paths.run_path("paper", "dl19", "bm25"), tag="bm25")
    assert model_runs.first_stage_baselines("paper", "dl19") == {"BM25": scored}, "no BM25+RM3 in the export"


def test_table_2_compares_against_the_book_subsets_shipped_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path))
    monkeypatch.setenv(paths.CONVERTED_VARIABLE, "converted")
    runs = model_runs.first_stage_baselines("book", "dl19")
    assert list(runs) == ["BM25", "BM25+RM3"]
    assert runs["BM25"] == load_run("dl19", "bm25") and runs["BM25+RM3"] == load_run("dl19", "bm25-rm3")
    assert not paths.run_path("book", "dl19", "bm25").exists(), "the shipped run is read where it is"


@pytest.mark.parametrize("test_year", ["dl19", "dl20"])
def test_a_test_year_never_validates(test_year: str, tmp_path: Path) -> None:
    settings = get_profile("book").training.replace(validation_set=test_year)
    with pytest.raises(ValueError, match=f"'validation_set' is '{test_year}', a test year"):
        model_runs.validation_set(settings)
    with pytest.raises(ValueError, match="a test year"):  # refused before any teacher or index work
        model_runs.prepare_protocol(get_profile("book"), settings, 42, tmp_path / "no-index", tmp_path, progress=False)


def test_the_training_queries_never_validate() -> None:
    settings = get_profile("paper").training.replace(distill_query_set="dev-small")
    with pytest.raises(ValueError, match="'distill_query_set' trains on"):
        model_runs.validation_set(settings)


def test_the_teacher_scores_its_own_held_out_margins(protocol: model_runs.Protocol) -> None:
    """The bi-encoder is the teacher: scored as a student, its margins are the teacher's divided by the scale."""
    teacher = BiEncoder(minilm_folder())
    margins = model_runs.held_out_margins(teacher, load_tokenizer(minilm_folder()), protocol)
    assert len(margins) == len(protocol.held_out)
    candidates = [negative in protocol.distillation.teacher[qid] for qid, _, negative in protocol.held_out]
    assert (margins["teacher"][candidates] >= 0).all(), "a negative from the candidates ranks below the positive"
    assert margins["student"].to_numpy() * 10 == pytest.approx(margins["teacher"].to_numpy(), abs=1e-3)


def test_listwise_groups_extend_the_training_triples_and_never_take_a_held_out_query(
    protocol: model_runs.Protocol,
) -> None:
    settings = get_profile("smoke").training.replace(distill_triples_per_query=6, distill_negatives=3)
    groups, scores = model_runs.training_groups(protocol, settings, 42)
    assert all(len(group) == 5 and len(row) == 4 for group, row in zip(groups, scores, strict=True))
    assert {group[0] for group in groups} == {qid for qid, _, _ in protocol.triples}, "the training queries, no other"
    first = {qid: triple for qid, *triple in reversed(protocol.triples)}
    assert all(group[1:3] == tuple(first[group[0]]) for group in groups[::6]), "each query's first group: its triple"
    margin_of = {triple: margin for triple, margin in zip(protocol.triples, protocol.margins, strict=True)}
    for group, (high, low, *_) in zip(groups[::6], scores[::6], strict=True):
        assert high - low == pytest.approx(margin_of[group[:3]], abs=1e-5)


def test_word_models_take_one_learning_rate_when_the_profile_sets_one() -> None:
    book = get_profile("book").training
    assert model_runs.training_config("tk2", book, 1, "cpu").learning_rates == {"embedding_lr": 1e-3, "other_lr": 1e-3}
    bert_cat = model_runs.training_config("bert-cat", book, 1, "cpu")
    assert bert_cat.learning_rates == {"bert_lr": book.bert_cat_lr}
    assert bert_cat.warmup_steps == book.bert_cat_warmup > 0
    assert model_runs.training_config("tk2", book, 1, "cpu").warmup_steps == 0, "the word models keep constant rates"
    default = model_runs.training_config("bert-cat", TrainingSettings(), 1, "cpu")
    assert default.learning_rates == {} and default.warmup_steps == 0, "None / 0 keep the model's rate, constant"
    paper = model_runs.training_config("tk2", dataclasses.replace(book, word_learning_rate=None), 1, "cpu")
    assert paper.learning_rates == {}, "None keeps the paper's groups"


def test_the_bert_models_take_their_own_patience_when_the_profile_sets_one() -> None:
    book = get_profile("book").training
    assert model_runs.training_config("bert-cat", book, 1, "cpu").patience == book.bert_cat_patience == 2
    assert model_runs.training_config("tk-bert1", book, 1, "cpu").patience == 2
    assert model_runs.training_config("tk2", book, 1, "cpu").patience == book.patience != 2
    default = TrainingSettings()
    assert model_runs.training_config("bert-cat", default, 1, "cpu").patience == default.patience


def test_the_piece_vectors_take_their_own_rate_when_the_profile_sets_one() -> None:
    settings = TrainingSettings(word_learning_rate=1e-3, piece_embedding_lr=1e-4)
    pieces = model_runs.training_config("tk2-pieces", settings, 1, "cpu").learning_rates
    assert pieces == {"embedding_lr": 1e-4, "other_lr": 1e-3}
    glove = model_runs.training_config("tk2", settings, 1, "cpu").learning_rates
    assert glove["embedding_lr"] == 1e-3, "GloVe keeps the word rate"
    unset = model_runs.training_config("tk2-pieces", dataclasses.replace(settings, piece_embedding_lr=None), 1, "cpu")
    assert unset.learning_rates == {"embedding_lr": 1e-3, "other_lr": 1e-3}


def test_early_stopping_watches_the_profiles_validation_measure() -> None:
    for name, measure in (("book", "nDCG@10"), ("paper", "MRR@10")):
        settings = get_profile(name).training
        assert settings.validation_metric == measure
        for model in ("tk2", "bert-cat"):
            assert model_runs.training_config(model, settings, 1, "cpu").metric == measure
    with pytest.raises(ValueError, match="'metric'"):
        model_runs.training_config("tk2", TrainingSettings(validation_metric="MRR@11"), 1, "cpu")


def test_a_pieces_model_starts_from_the_piece_vectors_and_scores_with_the_wordpiece_tokenizer(tmp_path):
    wordpiece = WordPieceTokenizer.from_vocab()
    vectors = torch.randn(wordpiece.vocab_size, 20)
    representations = model_runs.Representations(
        Vocabulary(["[PAD]", "[UNK]"]), torch.randn(2, 300), tmp_path, wordpiece=wordpiece, piece_vectors=vectors
    )
    for name in ("knrm-pieces", "conv-knrm-pieces", "tk2-pieces"):
        model, tokenizer = model_runs.build_model(name, representations, seed=1)
        assert tokenizer is wordpiece and torch.equal(model.embedding.weight, vectors)
    assert model_runs.training_config("tk2-pieces", get_profile("book").training, 1, "cpu").max_steps == 1000
    assert model_runs.training_config("tk-bert2", get_profile("book").training, 1, "cpu").warmup_steps == 30
    representations.piece_vectors = None
    with pytest.raises(ValueError, match="'tk2-pieces' starts from piece vectors"):
        model_runs.build_model("tk2-pieces", representations, seed=1)


def test_build_model_gives_each_model_with_its_tokenizer(tmp_path):
    vocabulary = Vocabulary(["[PAD]", "[UNK]", "a", "b"])
    representations = model_runs.Representations(vocabulary, torch.randn(4, 300), tmp_path, wordpiece=None)
    for name in ("knrm", "conv-knrm", "tk1", "tk2", "tk3"):
        model, tokenizer = model_runs.build_model(name, representations, seed=1)
        assert tokenizer is vocabulary
        assert callable(model.optimizer_groups)
    tk3, _ = model_runs.build_model("tk3", representations, seed=1)
    assert len(tk3.contextualiser.layers) == 3
    first, _ = model_runs.build_model("tk1", representations, seed=1)
    again, _ = model_runs.build_model("tk1", representations, seed=1)
    assert all(torch.equal(a, b) for a, b in zip(first.state_dict().values(), again.state_dict().values(), strict=True))
    with pytest.raises(ValueError, match="unknown model"):
        model_runs.build_model("monobert", representations, seed=1)


def test_glove_rows_land_on_their_words_and_are_cached_with_their_coverage(tmp_path):
    vocabulary = Vocabulary(["[PAD]", "[UNK]", "the", "receptor", "zzqxjv"])
    settings = get_profile("smoke").training
    matrix, filled = model_runs.word_embeddings("glove-6b-50d", vocabulary, settings, seed=3, folder=tmp_path)
    glove = glove_6b_50d()
    assert matrix.shape == (5, 50)
    assert torch.equal(matrix[vocabulary.id_of("the")], torch.from_numpy(glove["the"].copy()))
    assert torch.equal(matrix[0], torch.zeros(50)), "[PAD] is zeros"
    assert (filled.terms, filled.found, filled.random) == (3, 2, 1), "the nonsense word gets a random vector"
    again, cached = model_runs.word_embeddings("glove-6b-50d", vocabulary, settings, seed=3, folder=tmp_path)
    assert torch.equal(matrix, again) and cached == filled
    with pytest.raises(ValueError, match="parameter 'embedding_method'.*'glove-6b-50d'"):
        model_runs.word_embeddings("glove-42b", vocabulary, settings, seed=3, folder=tmp_path)


def test_glove_42b_is_read_from_its_file_and_the_sha256_of_that_file_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vocabulary = Vocabulary(["[PAD]", "[UNK]", "the", "receptor", "zzqxjv"])
    settings = get_profile("smoke").training
    folder = tmp_path / "representations"
    folder.mkdir()
    monkeypatch.setenv("TKBOOK_GLOVE_42B", str(tmp_path / "missing.txt"))
    with pytest.raises(WeightsError, match="TKBOOK_GLOVE_42B"):
        model_runs.word_embeddings("glove-42b-300d", vocabulary, settings, seed=3, folder=folder)
    glove = glove_300d_file(tmp_path / "glove.42B.300d.txt", ["the", "receptor"])
    monkeypatch.setenv("TKBOOK_GLOVE_42B", str(glove))
    matrix, filled = model_runs.word_embeddings("glove-42b-300d", vocabulary, settings, seed=3, folder=folder)
    assert matrix.shape == (5, 300) and torch.all(matrix[vocabulary.id_of("receptor")] == 0.1)
    assert (filled.terms, filled.found, filled.random) == (3, 2, 1)
    source = json.loads((folder / "glove-42b-300d-seed3.source.json").read_text(encoding="utf-8"))
    assert source["sha256"] == sha256_of(glove) and source["url"].endswith("glove.42B.300d.zip")
    assert json.loads((folder / "glove-42b-300d-seed3.coverage.json").read_text(encoding="utf-8"))["found"] == 2
    glove.unlink()  # the cached matrix is reused without the file
    again, cached = model_runs.word_embeddings("glove-42b-300d", vocabulary, settings, seed=3, folder=folder)
    assert torch.equal(again, matrix) and cached == filled


def test_bert_cat_starts_from_the_named_bert(tmp_path, fake_bert_base):  # noqa: F811
    assert model_runs.bert_cat_folder("minilm", tmp_path) == minilm_folder()
    assert model_runs.bert_cat_folder("small-bert", tmp_path) == tmp_path
    pinned = model_runs.bert_cat_folder("bert-base-uncased", tmp_path)
    assert pinned == registry.paper_dir() / "google-bert" / "bert-base-uncased"
    assert (pinned / "model.safetensors").is_file() and (pinned / "vocab.txt").is_file()
    with pytest.raises(ValueError, match="parameter 'bert_cat_start'"):
        model_runs.bert_cat_folder("roberta", tmp_path)


def test_a_run_reuses_another_chapters_finished_checkpoint_instead_of_training_again(
    protocol: model_runs.Protocol, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path / "artifacts"))
    settings = get_profile("smoke").training.replace(candidate_depth=5)
    small = dataclasses.replace(
        protocol,
        tests={name: dataclasses.replace(test, run=top_of_run(test.run, 5)) for name, test in protocol.tests.items()},
    )
    words = Vocabulary.build(list(protocol.texts.values())[:200])
    representations = model_runs.Representations(words, torch.randn(len(words), 8), Path(), None)
    first = model_runs.run_model("knrm", small, representations, settings, "smoke", "02_training", 42, progress=False)

    def no_training(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a finished checkpoint of the same run must not be trained again")

    monkeypatch.setattr(pairwise, "margin_mse", no_training)
    monkeypatch.setattr(pairwise, "hinge_loss", no_training)
    again = model_runs.run_model(
        "knrm", small, representations, settings, "smoke", "07_trec_runs", 42, progress=False, variant="init42",
        reuse_from="02_training",
    )  # fmt: skip
    assert (model_runs.checkpoint_folder("smoke", "07_trec_runs", "knrm-init42") / "best.pt").is_file()
    for name in first:
        assert again[name].best_step == first[name].best_step
        assert again[name].metrics_at_full_depth == first[name].metrics_at_full_depth


def test_a_zero_shot_model_is_scored_untrained_and_both_runs_are_written(
    protocol: model_runs.Protocol, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path / "artifacts"))
    # a measure neither profile uses, so that a hard-coded nDCG@10 or MRR@10 would show
    settings = get_profile("smoke").training.replace(candidate_depth=5, validation_metric="MAP")
    tuned_on = []

    def spying(original: Callable[..., Any]) -> Callable[..., Any]:
        def spy(*args: Any, **kwargs: Any) -> Any:
            tuned_on.append(kwargs["metric"])
            return original(*args, **kwargs)

        return spy

    monkeypatch.setattr(model_runs, "tune_depth", spying(model_runs.tune_depth))
    monkeypatch.setattr(model_runs, "tune_interpolation", spying(model_runs.tune_interpolation))
    small = dataclasses.replace(
        protocol,
        validation=ValidationSet(
            {q: protocol.validation.queries[q] for q in list(protocol.validation.queries)[:2]},
            protocol.validation.qrels,
            {q: top_of_run(protocol.validation.run, 5)[q] for q in list(protocol.validation.queries)[:2]},
        ),
        tests={
            name: dataclasses.replace(
                test,
                queries=dict(list(test.queries.items())[:2]),
                run=top_of_run(test.run, 5, list(test.queries)[:2]),
            )
            for name, test in protocol.tests.items()
        },
    )
    representations = model_runs.Representations(
        Vocabulary(["[PAD]", "[UNK]"]), torch.zeros(2, 1), minilm_folder(), load_tokenizer(minilm_folder())
    )
    results = model_runs.run_model("bi-encoder", small, representations, settings, "smoke", "02_training", 42)
    assert sorted(results) == ["dl19", "dl20"]
    assert tuned_on == ["MAP", "MAP"], "the depth and the weight maximise the profile's validation measure"
    for name, result in results.items():
        assert result.training is None and result.best_step == 0 and result.history.empty
        assert result.history.columns[3:].tolist() == ["MAP", "MRR@10", "nDCG@10"]
        assert result.query_set == name and result.row()["set"] == name
        tuned = read_run(paths.run_path("smoke", name, "bi-encoder"))
        everything = read_run(paths.run_path("smoke", name, "bi-encoder-all"))
        test = small.tests[name]
        fused = read_run(paths.run_path("smoke", name, "bi-encoder-with-bm25"))
        assert set(everything) == set(test.queries) == set(tuned) == set(fused)
        assert 0.0 <= result.weight <= 1.0 and result.row()["λ"] == result.weight
        assert result.metrics_interpolated["nDCG@10"] == pytest.approx(
            evaluation.evaluate(fused, test.qrels)["nDCG@10"]
        )
        assert all(len(everything[q]) == len(test.run[q]) for q in everything)
        scores = read_run(model_runs.scores_path("smoke", "02_training", name, "bi-encoder"))
        for qid in everything:  # the -all run is the candidates in the model's order
            assert ranking_from_run(everything[qid]) == ranking_from_run(scores[qid])
        assert result.metrics_at_full_depth["nDCG@10"] == pytest.approx(
            evaluation.evaluate(everything, test.qrels)["nDCG@10"]
        )


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
    table = model_runs.variant_comparison("source", runs, "nDCG@10")
    assert table.columns.tolist() == ["set", "source", "nDCG@10", "depth", "nDCG@10 (all)", "validation nDCG@10"]
    assert table["validation nDCG@10"].iloc[1] == 0.6, "the best validation, of the measure named"
    assert table["validation nDCG@10"].iloc[[0, 2, 3]].isna().all(), "no history, no validation number"
    assert table[["set", "source"]].values.tolist() == [["dl19", "a"], ["dl19", "b"], ["dl20", "a"], ["dl20", "b"]]
    assert table["nDCG@10 (all)"].tolist() == [0.4, 0.2, 0.35, 0.15]
    assert table["depth"].tolist() == [12, 5, 12, 5]
    assert model_runs.variant_comparison("source", {}, "nDCG@10").empty


def test_settings_read_back_as_they_were_written(tmp_path):
    settings = get_profile("book").training.replace(max_steps=17)
    model_runs.write_settings(tmp_path / "settings.json", settings, seed=5)
    record = json.loads((tmp_path / "settings.json").read_text(encoding="utf-8"))
    assert isinstance(record["distill_pseudo_span"], list), "JSON has no tuples"
    assert model_runs.read_settings(record) == (settings, 5)
    with pytest.raises(ValueError, match="unknown setting"):
        model_runs.read_settings({**record, "learning_rate": 1.0})
    with pytest.raises(ValueError, match="no 'seed'"):
        model_runs.read_settings({key: value for key, value in record.items() if key != "seed"})


def test_a_chapter_of_word_models_keeps_every_word_and_skips_the_small_bert(tmp_path):
    settings = get_profile("smoke").training
    paper = model_runs.prepare_representations("smoke", settings, 3, tmp_path, with_small_bert=False)
    every = model_runs.prepare_representations("smoke", settings, 3, tmp_path, min_count=1, with_small_bert=False)
    assert paper.small_bert is None and not (tmp_path / "representations" / "small-bert").exists()
    assert len(every.vocabulary) > len(paper.vocabulary)
    assert all(term in every.vocabulary for term in paper.vocabulary.terms)
    assert every.embeddings.shape == (len(every.vocabulary), 50)
    files = {path.name for path in (tmp_path / "representations").iterdir()}
    assert {"vocabulary.txt", "vocabulary-min1.txt", "glove-6b-50d-seed3.npy", "glove-6b-50d-min1-seed3.npy"} <= files
    again = model_runs.prepare_representations("smoke", settings, 3, tmp_path, with_small_bert=False)
    assert again.vocabulary == paper.vocabulary and torch.equal(again.embeddings, paper.embeddings)
