"""Earlier chapters' results, asked for by name: the only place that knows another chapter's folder.

A later chapter never builds a path into an earlier chapter's artifacts; it asks here (ARCHITECTURE.md,
"Chapters"):

- chapter 1 (``01_data_and_first_stage``): :func:`book_index` (the Lucene index of the book corpus);
- chapter 2 (``02_training``): :func:`trained_model` (the best weights of model X — one per
  architecture, tested on DL19 and DL20 — rebuilt with :func:`lib.experiments.model_setup.build_model`;
  a zero-shot model as it is),
  :func:`training_settings`, :func:`small_bert` and
  :func:`small_bert_pretraining` (the masked-LM pre-trained BERT and its record),
  :func:`candidate_scores` (a model's score of every test candidate) and :func:`table2` (Table 2),
  :func:`training_protocol` (its settings, seed and distillation protocol, for chapters that train more models),
  :func:`test_sets` (its test years as it re-ranked them, for a chapter that only tests on them);
- chapter 3 (``03_time_budget``): :func:`speeds` (``speed.json``, the measured speed of every architecture),
  :func:`budget_leaders` (the best model under each time budget), :func:`regimes` (``regimes.csv``, every trained
  model's query-time cost run whole and with its passages stored) and :func:`budget_figure` (Figure 2 in both
  regimes);
- chapter 6 (``06_tilde``): :func:`tilde_latency` and :func:`tilde_index_size` (TILDE's and TILDEv2's
  per-query latency and bytes per passage).

Chapter 2 keeps its models as CPU state dicts in ``artifacts/<profile>/02_training/checkpoints/<name>/best.pt``
and the representations they started from in ``…/02_training/representations/`` (``vocabulary.txt``, the
word-embedding matrix, ``small-bert/``). :func:`trained_model` **never trains anything**: the word-embedding
matrix it builds the model with is a zero matrix of the checkpoint's shape (the checkpoint's trained
embeddings replace it). A missing input is a ``FileNotFoundError`` that names the chapter that writes
it and the ``make`` command that runs that chapter.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from lib.core import paths
from lib.core.broken_files import read_checked
from lib.core.device import resolve_device
from lib.core.profiles import Profile, TrainingSettings
from lib.core.types import JudgedSet
from lib.data import read_run
from lib.data.splits import TEST_SETS
from lib.experiments import distillation_protocol, model_runs, model_setup, settings_record
from lib.models.registry import model_spec
from lib.representations.bert import load_tokenizer
from lib.representations.text import Vocabulary
from lib.training.pairwise import BEST_NAME

#: The chapter that builds the book-corpus index.
FIRST_STAGE_CHAPTER = "01_data_and_first_stage"
#: The chapter that trains the models and their representations.
TRAINING_CHAPTER = "02_training"
#: The chapter that measures every architecture's speed.
TIME_BUDGET_CHAPTER = "03_time_budget"
#: The chapter that trains and measures TILDE and TILDEv2.
TILDE_CHAPTER = "06_tilde"
#: Word-embedding models: their checkpoint holds the trained embedding matrix under this key.
EMBEDDING_KEY = "embedding.weight"


@dataclass
class TrainedModel:
    """A trained model in eval mode, the tokenizer it scores with, and where its weights came from."""

    name: str
    model: torch.nn.Module
    tokenizer: Any
    path: Path


def _folder(profile: Profile, chapter: str) -> Path:
    return paths.artifacts_root() / profile.name / chapter


def _required(path: Path, what: str, chapter: str, profile: Profile) -> Path:
    """``path`` when it exists; otherwise the error that names the chapter writing it."""
    if not path.exists():
        raise FileNotFoundError(
            f"{path}: missing ({what}); chapter {int(chapter[:2])} ({chapter}) writes it: "
            f"run `make chapter CH={chapter} PROFILE={profile.name}` first"
        )
    return path


def _rerun(chapter: str, profile: Profile) -> str:
    """The command that executes ``chapter`` again even when it is up to date (it rewrites a broken output)."""
    return f"make chapter CH={chapter} PROFILE={profile.name} ARGS=--force"


def _load_state(path: Path) -> dict[str, torch.Tensor]:
    state = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(state, dict):
        raise ValueError(f"not a state dict but a {type(state).__name__}")
    return state


def book_index(profile: Profile) -> Path:
    """Chapter 1's Lucene index of the book corpus (v1 passages), for BM25 over it."""
    folder = _folder(profile, FIRST_STAGE_CHAPTER) / "index-v1"
    return _required(folder, "the Lucene index of the book corpus", FIRST_STAGE_CHAPTER, profile)


def teacher_folder(profile: Profile) -> Path:
    """Where chapter 2 keeps the teacher's encodings (it may not exist yet: :func:`prepare_protocol
    <lib.experiments.distillation_protocol.prepare_protocol>` fills it, for chapter 2 or a setting probe)."""
    return _folder(profile, TRAINING_CHAPTER) / "teacher"


def teacher_cache(profile: Profile) -> Path:
    """Chapter 2's folder of the teacher's cached encodings (the book passages' vectors, the training queries')."""
    folder = teacher_folder(profile)
    _required(
        folder / "teacher-passages.npy", "the teacher's encodings of the book passages", TRAINING_CHAPTER, profile
    )
    return folder


def checkpoint_path(profile: Profile, name: str) -> Path:
    """``artifacts/<profile>/02_training/checkpoints/<name>/best.pt`` (it may not exist)."""
    return model_runs.checkpoint_folder(profile, TRAINING_CHAPTER, name) / BEST_NAME


def small_bert(profile: Profile) -> Path:
    """The folder of chapter 2's small BERT, pre-trained by masked LM on the book corpus."""
    folder = _folder(profile, TRAINING_CHAPTER) / "representations" / "small-bert"
    _required(folder / "config.json", "the small pre-trained BERT", TRAINING_CHAPTER, profile)
    return folder


def small_bert_pretraining(profile: Profile) -> dict[str, Any]:
    """The record of the small BERT's masked-LM pre-training (its ``params`` and ``losses``)."""
    path = _required(small_bert(profile) / "pretraining.json", "its pre-training record", TRAINING_CHAPTER, profile)
    return json.loads(path.read_text(encoding="utf-8"))


def vocabulary(profile: Profile) -> Vocabulary:
    """The word vocabulary of chapter 2's word-embedding models."""
    path = _folder(profile, TRAINING_CHAPTER) / "representations" / "vocabulary.txt"
    return Vocabulary.load(_required(path, "the vocabulary", TRAINING_CHAPTER, profile))


def training_settings(profile: Profile) -> dict[str, Any]:
    """The settings chapter 2 ran with (``settings.json``: the seed and its ``TrainingSettings``)."""
    path = _folder(profile, TRAINING_CHAPTER) / "settings.json"
    return json.loads(_required(path, "its settings", TRAINING_CHAPTER, profile).read_text(encoding="utf-8"))


def training_protocol(profile: Profile) -> tuple[TrainingSettings, int, distillation_protocol.Protocol]:
    """Chapter 2's settings, seed and distillation protocol (teacher-labelled triples, the validation set, the
    DL19/DL20 tests), rebuilt from its teacher cache and chapter 1's index (on the paper's path, from the
    teacher-scores file: no cache), for a chapter that trains more models the same way (chapters 7 and 8)."""
    settings, seed = settings_record.read_settings(training_settings(profile))
    cache = _folder(profile, TRAINING_CHAPTER) / "teacher"
    if settings.teacher_scores is None:
        cache = teacher_cache(profile)
    protocol = distillation_protocol.prepare_protocol(profile, settings, seed, book_index(profile), cache, False)
    return settings, seed, protocol


def test_sets(profile: Profile) -> dict[str, JudgedSet]:
    """Chapter 2's test years as it re-ranked them (its recorded candidate depth), without the teacher: for a chapter
    that tests on them but trains nothing on chapter 2's protocol (chapter 9)."""
    settings, _ = settings_record.read_settings(training_settings(profile))
    return {name: distillation_protocol.query_set(name, profile, settings.candidate_depth) for name in TEST_SETS}


def trained_model(profile: Profile, name: str, device: str | torch.device = "cpu") -> TrainedModel:
    """Chapter 2's model ``name`` (a :data:`lib.models.registry.MODELS` name), the one tested on every test year.

    The model is moved to ``device`` (``"auto"``: CUDA when available, :func:`lib.core.device.resolve_device`)
    and put in eval mode. A BERT model starts from the BERT chapter 2 used (its ``settings.json``); a
    zero-shot model has no checkpoint and is the pre-trained package's (``path`` is its folder). An
    unknown model name is a ``ValueError``; a missing file a ``FileNotFoundError`` naming chapter 2
    (module docstring).
    """
    spec = model_spec(name)
    if spec.family in ("wordpiece", "pieces"):
        settings = training_settings(profile)
        small = _folder(profile, TRAINING_CHAPTER) / "representations" / "small-bert"
        bert_path = model_setup.bert_cat_folder(settings["bert_cat_start"], small)
        representations = model_setup.Representations(
            vocabulary=Vocabulary(["[PAD]", "[UNK]"]),
            embeddings=torch.zeros(2, 1),
            bert_path=bert_path,
            wordpiece=load_tokenizer(bert_path),
            bert_layers=settings["bert_cat_layers"],
        )
    if spec.zero_shot:
        model, tokenizer = model_setup.build_model(name, representations, seed=0)
        return TrainedModel(name, model.to(resolve_device(device)).eval(), tokenizer, representations.bert_path)
    path = _required(checkpoint_path(profile, name), f"the trained {name}", TRAINING_CHAPTER, profile)
    state = read_checked(
        path, _load_state, f"the trained {name} (chapter 2's best weights)", _rerun(TRAINING_CHAPTER, profile)
    )
    if spec.family == "word":
        words = vocabulary(profile)
        shape = tuple(state[EMBEDDING_KEY].shape)
        if shape[0] != len(words):
            raise ValueError(f"{path}: {shape[0]} embedding rows but chapter 2's vocabulary has {len(words)} terms")
        representations = model_setup.Representations(
            vocabulary=words, embeddings=torch.zeros(shape), bert_path=Path(), wordpiece=None
        )
    if spec.family == "pieces":
        representations.piece_vectors = torch.zeros(tuple(state[EMBEDDING_KEY].shape))
    model, tokenizer = model_setup.build_model(name, representations, seed=0)
    model.load_state_dict(state)
    model.to(resolve_device(device)).eval()
    return TrainedModel(name=name, model=model, tokenizer=tokenizer, path=path)


#: Chapter 2's record of the TK chosen on validation (:func:`lib.experiments.tk_choice.write_choice`).
CHOSEN_TK_FILE = "chosen_tk.json"


def chosen_tk(profile: Profile) -> str:
    """The registry name of the TK chapter 2 chose on validation among every TK it trained (GloVe, pieces or a
    BERT's layers): the TK that the chapters studying TK use."""
    path = _required(_folder(profile, TRAINING_CHAPTER) / CHOSEN_TK_FILE, "the chosen TK", TRAINING_CHAPTER, profile)
    return json.loads(path.read_text(encoding="utf-8"))["model"]


def tk_validation(profile: Profile) -> dict[str, float]:
    """Each TK's best validation value as chapter 2 recorded it when it chose its TK (by registry name)."""
    path = _required(_folder(profile, TRAINING_CHAPTER) / CHOSEN_TK_FILE, "the chosen TK", TRAINING_CHAPTER, profile)
    return {name: float(value) for name, value in json.loads(path.read_text(encoding="utf-8"))["validation"].items()}


def candidate_scores(profile: Profile, query_set: str, model: str) -> dict[str, dict[str, float]]:
    """Chapter 2's score of every test candidate of ``query_set`` by ``model`` (a run over the full depth)."""
    path = model_runs.scores_path(profile, TRAINING_CHAPTER, query_set, model)
    return read_run(_required(path, f"the {model} scores of {query_set}", TRAINING_CHAPTER, profile))


def table2(profile: Profile) -> pd.DataFrame:
    """Chapter 2's Table 2 analogue: one row per (test set, model), with its effectiveness and docs/ms."""
    path = _folder(profile, TRAINING_CHAPTER) / "table2.csv"
    return pd.read_csv(_required(path, "Table 2", TRAINING_CHAPTER, profile))


def speeds(profile: Profile) -> dict[str, Any]:
    """Chapter 3's ``speed.json``: docs/ms and latencies of every timed architecture, on the machine it ran on."""
    path = _folder(profile, TIME_BUDGET_CHAPTER) / "speed.json"
    return json.loads(_required(path, "the speed of every architecture", TIME_BUDGET_CHAPTER, profile).read_text())


def budget_leaders(profile: Profile, query_set: str, measure: str = "nDCG@10") -> pd.DataFrame:
    """Chapter 3's best model(s) under each time budget (the book's own speeds), for ``query_set`` and ``measure``."""
    path = _folder(profile, TIME_BUDGET_CHAPTER) / f"best_per_budget_book_{query_set}_{measure.replace('@', '')}.csv"
    return pd.read_csv(
        _required(path, f"the best model per budget ({query_set}, {measure})", TIME_BUDGET_CHAPTER, profile)
    )


def regimes(profile: Profile) -> pd.DataFrame:
    """Chapter 3's cost table of the two regimes (:func:`lib.experiments.regime_costs.regime_table`'s rows)."""
    path = _folder(profile, TIME_BUDGET_CHAPTER) / "regimes.csv"
    return pd.read_csv(_required(path, "the cost of every model in both regimes", TIME_BUDGET_CHAPTER, profile))


def budget_figure(profile: Profile, query_set: str) -> Path:
    """Chapter 3's Figure 2 of ``query_set`` in both regimes (a PNG: nDCG@10 under a time budget, run whole and
    with passages stored)."""
    path = _folder(profile, TIME_BUDGET_CHAPTER) / f"figure2_regimes_{query_set}.png"
    return _required(path, f"the time-budget figure of {query_set}", TIME_BUDGET_CHAPTER, profile)


def tilde_latency(profile: Profile) -> pd.DataFrame:
    """Chapter 6's per-query latency of TILDE-QL, TILDE-QDL and TILDEv2 (one row per method and candidate count)."""
    path = _folder(profile, TILDE_CHAPTER) / "latency.csv"
    return pd.read_csv(_required(path, "TILDE's latency", TILDE_CHAPTER, profile))


def tilde_index_size(profile: Profile) -> pd.DataFrame:
    """Chapter 6's bytes per passage of TILDE's and TILDEv2's indexes."""
    path = _folder(profile, TILDE_CHAPTER) / "index_size.csv"
    return pd.read_csv(_required(path, "TILDE's index size", TILDE_CHAPTER, profile))
