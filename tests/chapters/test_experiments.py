"""The book-scale protocol of chapter 2: settings, folds on the real data, model construction."""

from __future__ import annotations

import pytest
import torch

from lib.chapters import experiments
from lib.core import paths
from lib.core.profiles import get_profile
from lib.core.types import ranking_from_run
from lib.data import load_queries, read_run
from lib.data.splits import FOLDS
from lib.evaluation import measures as evaluation
from lib.representations.bert import load_tokenizer
from lib.representations.pretrained import glove_6b_50d, minilm_folder
from lib.representations.text import Vocabulary
from lib.training.pairwise import ValidationSet


@pytest.mark.usefixtures("converted")
@pytest.mark.parametrize("fold", sorted(FOLDS))
def test_fold_never_trains_or_validates_on_its_test_year(fold):
    settings = get_profile("smoke").training
    data = experiments.prepare_fold(fold, get_profile("book"), settings, seed=42)
    test_qids = set(load_queries(fold))
    training_qids = {qid for qid, _, _ in data.pairs}
    assert not training_qids & test_qids
    assert not set(data.validation.queries) & test_qids
    assert not set(data.validation.queries) & set(data.train_qids), "validation is held out from training"
    assert set(data.test_queries) == test_qids, "the book profile tests on every query of the year"
    assert all(len(candidates) <= settings.candidate_depth for candidates in data.test_run.values())
    assert training_qids <= set(data.train_qids)
    assert all(better != worse for _, better, worse in data.pairs)


@pytest.mark.usefixtures("converted")
def test_smoke_profile_takes_a_slice():
    profile = get_profile("smoke")
    data = experiments.prepare_fold("dl19", profile, get_profile("smoke").training, seed=42)
    assert len(data.test_queries) == profile.query_limit
    assert len(data.validation.queries) <= profile.query_limit


def test_build_model_gives_each_model_with_its_tokenizer(tmp_path):
    vocabulary = Vocabulary(["[PAD]", "[UNK]", "a", "b"])
    representations = experiments.Representations(vocabulary, torch.randn(4, 300), tmp_path, wordpiece=None)
    for name in ("knrm", "conv-knrm", "tk1", "tk2", "tk3"):
        model, tokenizer = experiments.build_model(name, representations, seed=1)
        assert tokenizer is vocabulary
        assert callable(model.optimizer_groups)
    tk3, _ = experiments.build_model("tk3", representations, seed=1)
    assert len(tk3.contextualiser.layers) == 3
    first, _ = experiments.build_model("tk1", representations, seed=1)
    again, _ = experiments.build_model("tk1", representations, seed=1)
    assert all(torch.equal(a, b) for a, b in zip(first.state_dict().values(), again.state_dict().values(), strict=True))
    with pytest.raises(ValueError, match="unknown model"):
        experiments.build_model("monobert", representations, seed=1)


def test_glove_rows_land_on_their_words_and_are_cached_with_their_coverage(tmp_path):
    vocabulary = Vocabulary(["[PAD]", "[UNK]", "the", "receptor", "zzqxjv"])
    settings = get_profile("smoke").training
    matrix, filled = experiments.word_embeddings("glove-6b-50d", vocabulary, settings, seed=3, folder=tmp_path)
    glove = glove_6b_50d()
    assert matrix.shape == (5, 50)
    assert torch.equal(matrix[vocabulary.id_of("the")], torch.from_numpy(glove["the"].copy()))
    assert torch.equal(matrix[0], torch.zeros(50)), "[PAD] is zeros"
    assert (filled.terms, filled.found, filled.random) == (3, 2, 1), "the nonsense word gets a random vector"
    again, cached = experiments.word_embeddings("glove-6b-50d", vocabulary, settings, seed=3, folder=tmp_path)
    assert torch.equal(matrix, again) and cached == filled
    with pytest.raises(ValueError, match="parameter 'embedding_method'.*'glove-6b-50d'"):
        experiments.word_embeddings("glove-42b", vocabulary, settings, seed=3, folder=tmp_path)


def test_bert_cat_starts_from_the_named_bert(tmp_path):
    assert experiments.bert_cat_folder("minilm", tmp_path) == minilm_folder()
    assert experiments.bert_cat_folder("small-bert", tmp_path) == tmp_path
    with pytest.raises(ValueError, match="parameter 'bert_cat_start'"):
        experiments.bert_cat_folder("roberta", tmp_path)


@pytest.mark.usefixtures("converted")
def test_a_zero_shot_model_is_scored_untrained_and_both_runs_are_written(tmp_path, monkeypatch):
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path / "artifacts"))
    profile, settings = get_profile("smoke"), get_profile("smoke").training.replace(candidate_depth=5)
    data = experiments.prepare_fold("dl19", profile, settings, seed=42)
    data.test_queries = dict(list(data.test_queries.items())[:2])
    data.test_run = {qid: data.test_run[qid] for qid in data.test_queries}
    kept = list(data.validation.queries)[:2]
    data.validation = ValidationSet(
        {q: data.validation.queries[q] for q in kept},
        data.validation.qrels,
        {q: data.validation.run[q] for q in kept},
    )
    representations = experiments.Representations(
        Vocabulary(["[PAD]", "[UNK]"]), torch.zeros(2, 1), minilm_folder(), load_tokenizer(minilm_folder())
    )
    result = experiments.run_model("bi-encoder", data, representations, settings, "smoke", "02_training", 42)
    assert result.training is None and result.best_step == 0 and result.history.empty
    tuned, everything = (
        read_run(paths.run_path("smoke", "dl19", "bi-encoder")),
        read_run(paths.run_path("smoke", "dl19", "bi-encoder-all")),
    )
    assert set(everything) == set(data.test_queries)
    assert all(len(everything[q]) == len(data.test_run[q]) for q in everything)
    scores = read_run(experiments.scores_path("smoke", "02_training", "dl19", "bi-encoder"))
    for qid in everything:  # the -all run is the candidates in the model's order
        assert ranking_from_run(everything[qid]) == ranking_from_run(scores[qid])
    assert set(tuned) == set(everything)
    assert result.metrics_at_full_depth["nDCG@10"] == pytest.approx(
        evaluation.evaluate(everything, data.test_qrels)["nDCG@10"]
    )
