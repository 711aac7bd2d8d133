"""Fine-tuning TILDE (``lib.training.tilde``): pairs, exact resume, reuse of a finished run, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import lib.training.tilde as training
from lib import data
from lib.data.splits import FOLDS
from lib.models.tilde import Tilde
from lib.representations.bert import WordPieceTokenizer
from lib.training.tilde import (
    MIN_RELEVANCE,
    TildeTrainingConfig,
    fold_training_data,
    relevant_pairs,
    teacher_pairs,
    train_tilde,
    with_reconstruction,
    with_teacher_pairs,
)
from tests.tilde_helpers import tiny_tilde

#: Tiny models run as fast on one thread, and a busy machine cannot stall a second one.
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def tokenizer(raw: Path) -> WordPieceTokenizer:
    return WordPieceTokenizer.from_vocab()


@pytest.fixture(scope="module")
def material(converted: Path) -> tuple[list[tuple[str, str]], dict[str, str], dict[str, str]]:
    texts = data.load_collection("v1")
    pairs = relevant_pairs(data.load_qrels("dl20"), texts)[:12]
    return pairs, data.load_queries("dl20"), texts


def run(material, out: Path, tokenizer: WordPieceTokenizer, **kwargs):
    pairs, queries, texts = material
    kwargs = {
        "steps": 4,
        "batch_size": 4,
        "checkpoint_every": 2,
        "seed": 3,
        "device": "cpu",
        "progress": False,
        **kwargs,
    }
    reconstruction = kwargs.pop("reconstruction", ())
    config = TildeTrainingConfig(**kwargs)
    return train_tilde(tiny_tilde(), tokenizer, pairs, queries, texts, out, config, reconstruction)


def same_weights(left: Tilde, right: Tilde) -> bool:
    return all(torch.equal(a, b) for a, b in zip(left.state_dict().values(), right.state_dict().values(), strict=True))


def test_relevant_pairs_keep_grades_at_the_threshold_with_text() -> None:
    qrels = {"2": {"a": 3, "b": 1, "c": 2, "z": 3}, "10": {"d": 2}, "1": {"e": 0}}
    texts = {"a": "", "b": "", "c": "", "d": ""}
    assert MIN_RELEVANCE == 2
    assert relevant_pairs(qrels, texts) == [("2", "a"), ("2", "c"), ("10", "d")]
    assert relevant_pairs(qrels, texts, min_relevance=1) == [("2", "a"), ("2", "b"), ("2", "c"), ("10", "d")]


def test_fold_pairs_come_from_the_non_test_years_only(converted: Path) -> None:
    texts = {**data.load_collection("v1"), **data.load_collection("v2")}
    fold = fold_training_data("dl19", texts)
    assert FOLDS["dl19"].train == ("dl20", "dl21")
    test_qids = set(data.load_queries("dl19")) | set(data.load_queries("dl20"))
    train_qids = {qid for qid, _ in fold.pairs}
    assert fold.pairs and not train_qids & test_qids and not train_qids & set(fold.validation_qids)
    assert train_qids <= set(data.load_queries("dl21")), "no test year's judgment trains TILDE"
    assert fold_training_data("dl20", texts).pairs == fold.pairs, "both test years train on DL21 alone"
    assert all(fold.qrels[q][p] >= MIN_RELEVANCE and p in texts for q, p in fold.pairs)
    assert len(fold_training_data("dl19", texts, max_train_queries=3).train_qids) == 3
    with pytest.raises(ValueError, match="'fold'"):
        fold_training_data("dl21", texts)


def test_teacher_pairs_add_one_pair_per_teacher_labelled_query(converted: Path) -> None:
    texts = {**data.load_collection("v1"), **data.load_collection("v2")}
    fold = fold_training_data("dl19", texts, max_train_queries=2)
    teacher = {"pseudo-b": {"p1": 0.2, "p2": 0.9}, "pseudo-a": {"p3": 0.5}, "pseudo-c": {}}
    assert teacher_pairs(teacher) == [("pseudo-a", "p3"), ("pseudo-b", "p2")]
    queries = {"pseudo-a": "alpha words", "pseudo-b": "beta words", "pseudo-c": "gamma"}
    both = with_teacher_pairs(fold, teacher, queries)
    assert both.pairs == [*fold.pairs, ("pseudo-a", "p3"), ("pseudo-b", "p2")]
    assert both.queries["pseudo-b"] == "beta words" and "pseudo-c" not in both.queries
    assert list(both.sources.values()) == [len(fold.pairs), 2] and fold.sources != both.sources
    with pytest.raises(ValueError, match="also judged training or validation queries"):
        with_teacher_pairs(fold, {fold.train_qids[0]: {"p1": 1.0}}, fold.queries)


def test_resume_after_an_interruption_ends_with_the_uninterrupted_weights(
    material, tokenizer: WordPieceTokenizer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = run(material, tmp_path / "whole", tokenizer)
    assert whole.complete and len(whole.losses) == 4 and all(loss > 0 for loss in whole.losses)
    assert (tmp_path / "whole" / "training.json").is_file() and not (tmp_path / "whole" / "checkpoint.pt").exists()

    calls = {"n": 0}
    original = training.step_seed

    def interrupted(*args):
        calls["n"] += 1
        if calls["n"] == 4:  # step 4: steps 1–3 ran, the checkpoint holds step 2
            raise KeyboardInterrupt
        return original(*args)

    monkeypatch.setattr(training, "step_seed", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run(material, tmp_path / "cut", tokenizer)
    monkeypatch.setattr(training, "step_seed", original)
    assert (tmp_path / "cut" / "checkpoint.pt").is_file() and not (tmp_path / "cut" / "training.json").exists()
    resumed = run(material, tmp_path / "cut", tokenizer)
    assert (resumed.resumed_from, resumed.steps_run) == (2, 2)
    assert resumed.losses == whole.losses
    assert same_weights(resumed.model, whole.model)

    paused = run(material, tmp_path / "paused", tokenizer, stop_after=1)
    assert not paused.complete and len(paused.losses) == 1
    finished = run(material, tmp_path / "paused", tokenizer)
    assert finished.resumed_from == 1 and finished.losses == whole.losses

    again = run(material, tmp_path / "whole", tokenizer)  # a finished folder is loaded, not trained again
    assert again.steps_run == 0 and again.losses == whole.losses and same_weights(again.model, whole.model)


def test_other_arguments_or_bad_input_are_clear_errors(material, tokenizer: WordPieceTokenizer, tmp_path: Path) -> None:
    run(material, tmp_path / "m", tokenizer, steps=2, loss="ql", vocabulary="full")
    with pytest.raises(ValueError, match="lr: 0.001 → 0.002"):
        run(material, tmp_path / "m", tokenizer, steps=2, loss="ql", vocabulary="full", lr=2e-3)
    with pytest.raises(ValueError, match="'loss'"):
        run(material, tmp_path / "x", tokenizer, loss="bce")
    with pytest.raises(ValueError, match="'vocabulary'"):
        run(material, tmp_path / "x", tokenizer, vocabulary="clean")
    pairs, queries, texts = material
    with pytest.raises(KeyError, match="passage 'nope'"):
        train_tilde(tiny_tilde(), tokenizer, [(pairs[0][0], "nope")], queries, texts, tmp_path / "x")
    with pytest.raises(ValueError, match="'pairs' is empty"):
        train_tilde(tiny_tilde(), tokenizer, [], queries, texts, tmp_path / "x")


@pytest.mark.parametrize("loss", ["ql", "dl", "biqdl"])
def test_each_loss_lowers_its_training_loss(material, tokenizer: WordPieceTokenizer, tmp_path: Path, loss: str) -> None:
    result = run(material, tmp_path / loss, tokenizer, loss=loss, steps=6, batch_size=12, lr=3e-3)
    assert result.losses[-1] < result.losses[0]


def test_reconstruction_passages_are_a_seeded_sample_named_in_the_sources(converted: Path) -> None:
    texts = data.load_collection("v1")
    base = fold_training_data("dl19", texts)
    first, again = with_reconstruction(base, texts, 5, seed=1), with_reconstruction(base, texts, 5, seed=1)
    assert first.reconstruction == again.reconstruction and len(set(first.reconstruction)) == 5
    assert set(first.reconstruction) <= set(texts) and first.pairs == base.pairs
    assert first.sources["passages predicting their own pieces"] == 5
    assert with_reconstruction(base, texts, 5, seed=2).reconstruction != first.reconstruction
    with pytest.raises(ValueError, match="'count'"):
        with_reconstruction(base, {"a": "x"}, 2, seed=1)


def test_the_head_alone_learns_on_a_frozen_encoder_with_reconstruction(
    material, tokenizer: WordPieceTokenizer, tmp_path: Path
) -> None:
    _, _, texts = material
    own = sorted(texts)[:8]
    start = tiny_tilde()
    result = run(material, tmp_path / "head", tokenizer, trainable_layers=0, reconstruction=own, steps=8, lr=3e-3)
    assert result.losses[-1] < result.losses[0] and result.params["reconstruction"] == 8
    trained = result.model
    assert not trained.decoder_tied
    encoder = zip(start.bert.bert.state_dict().values(), trained.bert.bert.state_dict().values(), strict=True)
    assert all(torch.equal(a, b) for a, b in encoder)  # frozen
    head = zip(start.bert.cls.state_dict().values(), trained.bert.cls.state_dict().values(), strict=True)
    assert not all(torch.equal(a, b) for a, b in head)
    with pytest.raises(KeyError, match="'reconstruction'"):
        run(material, tmp_path / "x", tokenizer, reconstruction=["nope"])
