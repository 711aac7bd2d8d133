"""What chapter 2's models start from (``lib.experiments.model_setup``): word vectors, BERTs, models, configs."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch

from lib.core.profiles import TrainingSettings, get_profile
from lib.core.run_context import RunContext
from lib.data import registry
from lib.data.registry import sha256_of
from lib.experiments import model_setup
from lib.representations.bert import WordPieceTokenizer
from lib.representations.pretrained import WeightsError, glove_6b_50d, minilm_folder
from lib.representations.text import Vocabulary
from tests.representations.test_pretrained import fake_bert_base, glove_300d_file  # noqa: F401  (fixture)

pytestmark = pytest.mark.usefixtures("converted", "one_torch_thread")


def test_word_models_take_one_learning_rate_when_the_profile_sets_one() -> None:
    book = get_profile("book").training
    assert model_setup.training_config("tk2", book, 1, "cpu").learning_rates == {"embedding_lr": 1e-3, "other_lr": 1e-3}
    bert_cat = model_setup.training_config("bert-cat", book, 1, "cpu")
    assert bert_cat.learning_rates == {"bert_lr": book.bert_cat_lr}
    assert bert_cat.warmup_steps == book.bert_cat_warmup > 0
    assert model_setup.training_config("tk2", book, 1, "cpu").warmup_steps == 0, "the word models keep constant rates"
    default = model_setup.training_config("bert-cat", TrainingSettings(), 1, "cpu")
    assert default.learning_rates == {} and default.warmup_steps == 0, "None / 0 keep the model's rate, constant"
    paper = model_setup.training_config("tk2", dataclasses.replace(book, word_learning_rate=None), 1, "cpu")
    assert paper.learning_rates == {}, "None keeps the paper's groups"


def test_a_bert_model_named_in_bert_lr_by_model_takes_its_own_rate() -> None:
    settings = TrainingSettings(bert_cat_lr=1e-4, bert_lr_by_model={"tk-bert6": 3e-5})
    assert model_setup.training_config("tk-bert6", settings, 1, "cpu").learning_rates == {"bert_lr": 3e-5}
    assert model_setup.training_config("tk-bert1", settings, 1, "cpu").learning_rates == {"bert_lr": 1e-4}
    assert model_setup.training_config("bert-cat", settings, 1, "cpu").learning_rates == {"bert_lr": 1e-4}
    alone = TrainingSettings(bert_lr_by_model={"tk-bert6": 3e-5})
    assert model_setup.training_config("bert-cat", alone, 1, "cpu").learning_rates == {}, "None: the model's own"
    assert model_setup.training_config("tk-bert6", alone, 1, "cpu").learning_rates == {"bert_lr": 3e-5}


def test_the_bert_models_take_their_own_patience_when_the_profile_sets_one() -> None:
    book = get_profile("book").training
    assert model_setup.training_config("bert-cat", book, 1, "cpu").patience == book.bert_cat_patience == 2
    assert model_setup.training_config("tk-bert1", book, 1, "cpu").patience == 2
    assert model_setup.training_config("tk2", book, 1, "cpu").patience == book.patience != 2
    default = TrainingSettings()
    assert model_setup.training_config("bert-cat", default, 1, "cpu").patience == default.patience


def test_the_piece_vectors_take_their_own_rate_when_the_profile_sets_one() -> None:
    settings = TrainingSettings(word_learning_rate=1e-3, piece_embedding_lr=1e-4)
    pieces = model_setup.training_config("tk2-pieces", settings, 1, "cpu").learning_rates
    assert pieces == {"embedding_lr": 1e-4, "other_lr": 1e-3}
    glove = model_setup.training_config("tk2", settings, 1, "cpu").learning_rates
    assert glove["embedding_lr"] == 1e-3, "GloVe keeps the word rate"
    unset = model_setup.training_config("tk2-pieces", dataclasses.replace(settings, piece_embedding_lr=None), 1, "cpu")
    assert unset.learning_rates == {"embedding_lr": 1e-3, "other_lr": 1e-3}


def test_early_stopping_watches_the_profiles_validation_measure() -> None:
    for name, measure in (("book", "nDCG@10"), ("paper", "MRR@10")):
        settings = get_profile(name).training
        assert settings.validation_metric == measure
        for model in ("tk2", "bert-cat"):
            assert model_setup.training_config(model, settings, 1, "cpu").metric == measure
    with pytest.raises(ValueError, match="'metric'"):
        model_setup.training_config("tk2", TrainingSettings(validation_metric="MRR@11"), 1, "cpu")


def test_a_pieces_model_starts_from_the_piece_vectors_and_scores_with_the_wordpiece_tokenizer(tmp_path):
    wordpiece = WordPieceTokenizer.from_vocab()
    vectors = torch.randn(wordpiece.vocab_size, 20)
    representations = model_setup.Representations(
        Vocabulary(["[PAD]", "[UNK]"]), torch.randn(2, 300), tmp_path, wordpiece=wordpiece, piece_vectors=vectors
    )
    for name in ("knrm-pieces", "conv-knrm-pieces", "tk2-pieces"):
        model, tokenizer = model_setup.build_model(name, representations, seed=1)
        assert tokenizer is wordpiece and torch.equal(model.embedding.weight, vectors)
    assert model_setup.training_config("tk2-pieces", get_profile("book").training, 1, "cpu").max_steps == 1000
    assert model_setup.training_config("tk-bert2", get_profile("book").training, 1, "cpu").warmup_steps == 30
    representations.piece_vectors = None
    with pytest.raises(ValueError, match="'tk2-pieces' starts from piece vectors"):
        model_setup.build_model("tk2-pieces", representations, seed=1)


def test_build_model_gives_each_model_with_its_tokenizer(tmp_path):
    vocabulary = Vocabulary(["[PAD]", "[UNK]", "a", "b"])
    representations = model_setup.Representations(vocabulary, torch.randn(4, 300), tmp_path, wordpiece=None)
    for name in ("knrm", "conv-knrm", "tk1", "tk2", "tk3"):
        model, tokenizer = model_setup.build_model(name, representations, seed=1)
        assert tokenizer is vocabulary
        assert callable(model.optimizer_groups)
    tk3, _ = model_setup.build_model("tk3", representations, seed=1)
    assert len(tk3.contextualiser.layers) == 3
    first, _ = model_setup.build_model("tk1", representations, seed=1)
    again, _ = model_setup.build_model("tk1", representations, seed=1)
    assert all(torch.equal(a, b) for a, b in zip(first.state_dict().values(), again.state_dict().values(), strict=True))
    with pytest.raises(ValueError, match="unknown model"):
        model_setup.build_model("monobert", representations, seed=1)


def test_glove_rows_land_on_their_words_and_are_cached_with_their_coverage(tmp_path):
    vocabulary = Vocabulary(["[PAD]", "[UNK]", "the", "receptor", "zzqxjv"])
    settings = get_profile("smoke").training
    matrix, filled = model_setup.word_embeddings("glove-6b-50d", vocabulary, settings, seed=3, folder=tmp_path)
    glove = glove_6b_50d()
    assert matrix.shape == (5, 50)
    assert torch.equal(matrix[vocabulary.id_of("the")], torch.from_numpy(glove["the"].copy()))
    assert torch.equal(matrix[0], torch.zeros(50)), "[PAD] is zeros"
    assert (filled.terms, filled.found, filled.random) == (3, 2, 1), "the nonsense word gets a random vector"
    again, cached = model_setup.word_embeddings("glove-6b-50d", vocabulary, settings, seed=3, folder=tmp_path)
    assert torch.equal(matrix, again) and cached == filled
    with pytest.raises(ValueError, match="parameter 'embedding_method'.*'glove-6b-50d'"):
        model_setup.word_embeddings("glove-42b", vocabulary, settings, seed=3, folder=tmp_path)


def test_glove_42b_is_read_from_its_file_and_the_sha256_of_that_file_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vocabulary = Vocabulary(["[PAD]", "[UNK]", "the", "receptor", "zzqxjv"])
    settings = get_profile("smoke").training
    folder = tmp_path / "representations"
    folder.mkdir()
    monkeypatch.setenv("TKBOOK_GLOVE_42B", str(tmp_path / "missing.txt"))
    with pytest.raises(WeightsError, match="TKBOOK_GLOVE_42B"):
        model_setup.word_embeddings("glove-42b-300d", vocabulary, settings, seed=3, folder=folder)
    glove = glove_300d_file(tmp_path / "glove.42B.300d.txt", ["the", "receptor"])
    monkeypatch.setenv("TKBOOK_GLOVE_42B", str(glove))
    matrix, filled = model_setup.word_embeddings("glove-42b-300d", vocabulary, settings, seed=3, folder=folder)
    assert matrix.shape == (5, 300) and torch.all(matrix[vocabulary.id_of("receptor")] == 0.1)
    assert (filled.terms, filled.found, filled.random) == (3, 2, 1)
    source = json.loads((folder / "glove-42b-300d-seed3.source.json").read_text(encoding="utf-8"))
    assert source["sha256"] == sha256_of(glove) and source["url"].endswith("glove.42B.300d.zip")
    assert json.loads((folder / "glove-42b-300d-seed3.coverage.json").read_text(encoding="utf-8"))["found"] == 2
    glove.unlink()  # the cached matrix is reused without the file
    again, cached = model_setup.word_embeddings("glove-42b-300d", vocabulary, settings, seed=3, folder=folder)
    assert torch.equal(again, matrix) and cached == filled


def test_bert_cat_starts_from_the_named_bert(tmp_path, fake_bert_base):  # noqa: F811
    assert model_setup.bert_cat_folder("minilm", tmp_path) == minilm_folder()
    assert model_setup.bert_cat_folder("small-bert", tmp_path) == tmp_path
    pinned = model_setup.bert_cat_folder("bert-base-uncased", tmp_path)
    assert pinned == registry.paper_dir() / "google-bert" / "bert-base-uncased"
    assert (pinned / "model.safetensors").is_file() and (pinned / "vocab.txt").is_file()
    with pytest.raises(ValueError, match="parameter 'bert_cat_start'"):
        model_setup.bert_cat_folder("roberta", tmp_path)


def test_a_chapter_of_word_models_keeps_every_word_and_skips_the_small_bert(tmp_path):
    settings = get_profile("smoke").training
    context = RunContext("02_training", get_profile("smoke"), 3, torch.device("cpu"), tmp_path)
    paper = model_setup.prepare_representations(context, settings, with_small_bert=False)
    every = model_setup.prepare_representations(context, settings, min_count=1, with_small_bert=False)
    assert paper.small_bert is None and not (tmp_path / "representations" / "small-bert").exists()
    assert len(every.vocabulary) > len(paper.vocabulary)
    assert all(term in every.vocabulary for term in paper.vocabulary.terms)
    assert every.embeddings.shape == (len(every.vocabulary), 50)
    files = {path.name for path in (tmp_path / "representations").iterdir()}
    assert {"vocabulary.txt", "vocabulary-min1.txt", "glove-6b-50d-seed3.npy", "glove-6b-50d-min1-seed3.npy"} <= files
    again = model_setup.prepare_representations(context, settings, with_small_bert=False)
    assert again.vocabulary == paper.vocabulary and torch.equal(again.embeddings, paper.embeddings)
