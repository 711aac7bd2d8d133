"""The models that chapter 2 trained, loaded back for the analysis chapters (4: query clusters, 5: interpreting TK).

Chapter 2 (:func:`lib.chapters.experiments.run_model`, :func:`lib.training.pairwise.train`) keeps the best weights of
every model and fold as a CPU state dict in ``artifacts/<profile>/02_training/checkpoints/<fold>/<name>/best.pt``
and the representations it started from in ``artifacts/<profile>/02_training/representations/``
(``vocabulary.txt``, the word-embedding matrix, ``small-bert/``).

:func:`load_trained` rebuilds a model with :func:`lib.chapters.experiments.build_model` (so the architecture
is exactly chapter 2's) and loads those weights. **It never trains anything**: the word-embedding
matrix it builds the model with is a zero matrix of the checkpoint's shape (the trained embeddings
of the checkpoint replace it), the vocabulary is read from ``vocabulary.txt`` and BERT-cat's small
BERT from ``small-bert/``. A missing checkpoint or representation is a ``FileNotFoundError`` that
says that chapter 2 (``02_training``) produces it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from lib.chapters import experiments
from lib.core import paths
from lib.core.device import resolve_device
from lib.representations.bert import load_tokenizer
from lib.representations.text import Vocabulary
from lib.training.pairwise import BEST_NAME

#: The chapter whose artifacts hold the trained models.
TRAINING_CHAPTER = "02_training"
#: Word-embedding models: their checkpoint holds the trained embedding matrix under this key.
EMBEDDING_KEY = "embedding.weight"


@dataclass
class TrainedModel:
    """A trained model in eval mode, the tokenizer it scores with, and where its weights came from."""

    name: str
    fold: str
    model: torch.nn.Module
    tokenizer: Any
    path: Path


def checkpoint_path(profile: str, fold: str, name: str, chapter: str = TRAINING_CHAPTER) -> Path:
    """``artifacts/<profile>/<chapter>/checkpoints/<fold>/<name>/best.pt`` (it may not exist)."""
    return paths.artifacts_root() / profile / chapter / "checkpoints" / fold / name / BEST_NAME


def _missing(path: Path, what: str, chapter: str) -> FileNotFoundError:
    return FileNotFoundError(f"{path}: missing ({what}); chapter 2 ({chapter}) writes it: run that chapter first")


def load_trained(
    profile: str, fold: str, name: str, device: str | torch.device = "cpu", chapter: str = TRAINING_CHAPTER
) -> TrainedModel:
    """The model ``name`` (a :data:`lib.chapters.experiments.MODEL_NAMES` entry) trained for test fold ``fold``.

    The model is moved to ``device`` (``"auto"``: CUDA when available, :func:`lib.training.pairwise.resolve_device`)
    and put in eval mode. An unknown model name is a ``ValueError``; a missing file a ``FileNotFoundError``
    naming chapter 2 (module docstring).
    """
    if name not in experiments.MODEL_NAMES:
        raise ValueError(f"parameter 'name' must be one of {list(experiments.MODEL_NAMES)}, got {name!r}")
    path = checkpoint_path(profile, fold, name, chapter)
    if not path.is_file():
        raise _missing(path, f"the trained {name} of fold {fold}", chapter)
    state = torch.load(path, map_location="cpu", weights_only=True)
    folder = paths.artifacts_root() / profile / chapter / "representations"
    if name == "bert-cat":
        bert_path = folder / "small-bert"
        if not (bert_path / "config.json").is_file():
            raise _missing(bert_path, "the small pre-trained BERT", chapter)
        representations = experiments.Representations(
            vocabulary=Vocabulary(["[PAD]", "[UNK]"]),
            embeddings=torch.zeros(2, 1),
            bert_path=bert_path,
            wordpiece=load_tokenizer(bert_path),
        )
    else:
        vocabulary_path = folder / "vocabulary.txt"
        if not vocabulary_path.is_file():
            raise _missing(vocabulary_path, "the vocabulary", chapter)
        vocabulary = Vocabulary.load(vocabulary_path)
        shape = tuple(state[EMBEDDING_KEY].shape)
        if shape[0] != len(vocabulary):
            raise ValueError(f"{path}: {shape[0]} embedding rows but {vocabulary_path} has {len(vocabulary)} terms")
        representations = experiments.Representations(
            vocabulary=vocabulary, embeddings=torch.zeros(shape), bert_path=folder / "small-bert", wordpiece=None
        )
    model, tokenizer = experiments.build_model(name, representations, seed=0)
    model.load_state_dict(state)
    model.to(resolve_device(device)).eval()
    return TrainedModel(name=name, fold=fold, model=model, tokenizer=tokenizer, path=path)
