"""Loading chapter 2's trained models back: the same weights and scores, and errors that name chapter 2."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from lib.chapters import experiments
from lib.chapters.trained_models import checkpoint_path, load_trained
from lib.core import paths
from lib.representations.text import DOC_MAX_LENGTH, QUERY_MAX_LENGTH, Vocabulary

TEXTS = ["androgen receptor define", "the androgen receptor is a type of nuclear receptor", "a b c"]


@pytest.fixture
def artifacts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path / "artifacts"))
    return tmp_path / "artifacts"


def _save_trained(profile: str, fold: str, name: str) -> tuple[torch.nn.Module, Vocabulary]:
    """A seeded model of ``name`` with random 8-d embeddings, saved as chapter 2 saves its best weights."""
    vocabulary = Vocabulary.from_token_streams([t.split() for t in TEXTS], min_count=1)
    folder = paths.chapter_dir(profile, "02_training") / "representations"
    folder.mkdir(parents=True, exist_ok=True)
    vocabulary.save(folder / "vocabulary.txt")
    generator = torch.Generator().manual_seed(3)
    representations = experiments.Representations(
        vocabulary, torch.randn(len(vocabulary), 8, generator=generator), folder / "small-bert", wordpiece=None
    )
    model, _ = experiments.build_model(name, representations, seed=7)
    with torch.no_grad():  # move every weight away from its initial value, as training would
        for parameter in model.parameters():
            parameter.add_(0.01 * torch.randn(parameter.shape, generator=generator))
    path = checkpoint_path(profile, fold, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({key: value.cpu() for key, value in model.state_dict().items()}, path)
    return model.eval(), vocabulary


@pytest.mark.parametrize("name", ["tk2", "tk1", "knrm", "conv-knrm"])
def test_load_trained_gives_back_the_saved_weights_and_scores(artifacts: Path, name: str) -> None:
    saved, vocabulary = _save_trained("smoke", "dl19", name)
    loaded = load_trained("smoke", "dl19", name)
    assert loaded.path == artifacts / "smoke" / "02_training" / "checkpoints" / "dl19" / name / "best.pt"
    assert loaded.tokenizer == vocabulary
    assert not loaded.model.training
    assert type(loaded.model) is type(saved)
    for (key, want), (other, got) in zip(saved.state_dict().items(), loaded.model.state_dict().items(), strict=True):
        assert key == other and torch.equal(want, got), key
    batch = (*vocabulary.encode(TEXTS[:1] * 2, QUERY_MAX_LENGTH), *vocabulary.encode(TEXTS[1:], DOC_MAX_LENGTH))
    with torch.no_grad():
        assert torch.equal(saved(*batch), loaded.model(*batch))


def test_a_missing_checkpoint_names_chapter_2(artifacts: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"best\.pt: missing .*chapter 2 \(02_training\)"):
        load_trained("smoke", "dl19", "tk2")


def test_a_missing_vocabulary_names_chapter_2(artifacts: Path) -> None:
    _save_trained("smoke", "dl20", "tk2")
    (paths.chapter_dir("smoke", "02_training") / "representations" / "vocabulary.txt").unlink()
    with pytest.raises(FileNotFoundError, match=r"vocabulary\.txt: missing .*chapter 2"):
        load_trained("smoke", "dl20", "tk2")


def test_an_unknown_model_is_refused(artifacts: Path) -> None:
    with pytest.raises(ValueError, match="parameter 'name'"):
        load_trained("smoke", "dl19", "monobert")
