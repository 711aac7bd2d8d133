"""The book-scale protocol of chapter 2: settings, folds on the real data, model construction."""

from __future__ import annotations

import pytest
import torch

from lib.chapters import experiments
from lib.core.profiles import get_profile
from lib.data import load_queries
from lib.data.splits import FOLDS
from lib.representations.text import Vocabulary


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
