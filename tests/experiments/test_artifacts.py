"""Earlier chapters' results by name: chapter 2's trained models give back the same weights and scores, and a
missing input names the chapter that writes it and the make command."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch

from lib.core import paths
from lib.core.atomic import write_json
from lib.core.broken_files import BrokenFileError
from lib.core.profiles import get_profile
from lib.evaluation import measures as evaluation
from lib.experiments import artifacts, model_runs, model_setup, settings_record, tk_choice
from lib.experiments.artifacts import checkpoint_path, trained_model
from lib.models.bert_cat import BertCat
from lib.representations.pretrained import minilm_folder
from lib.representations.text import DOC_MAX_LENGTH, QUERY_MAX_LENGTH, Vocabulary

TEXTS = ["androgen receptor define", "the androgen receptor is a type of nuclear receptor", "a b c"]


@pytest.fixture
def artifacts_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path / "artifacts"))
    return tmp_path / "artifacts"


def _save_trained(profile_name: str, name: str) -> tuple[torch.nn.Module, Vocabulary]:
    """A seeded model of ``name`` with random 8-d embeddings, saved as chapter 2 saves its best weights."""
    vocabulary = Vocabulary.from_token_streams([t.split() for t in TEXTS], min_count=1)
    folder = paths.chapter_dir(profile_name, "02_training") / "representations"
    folder.mkdir(parents=True, exist_ok=True)
    vocabulary.save(folder / "vocabulary.txt")
    generator = torch.Generator().manual_seed(3)
    representations = model_setup.Representations(
        vocabulary, torch.randn(len(vocabulary), 8, generator=generator), folder / "small-bert", wordpiece=None
    )
    model, _ = model_setup.build_model(name, representations, seed=7)
    with torch.no_grad():  # move every weight away from its initial value, as training would
        for parameter in model.parameters():
            parameter.add_(0.01 * torch.randn(parameter.shape, generator=generator))
    path = checkpoint_path(get_profile(profile_name), name)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({key: value.cpu() for key, value in model.state_dict().items()}, path)
    return model.eval(), vocabulary


@pytest.mark.parametrize("name", ["tk2", "tk1", "knrm", "conv-knrm"])
def test_trained_model_gives_back_the_saved_weights_and_scores(artifacts_root: Path, name: str) -> None:
    saved, vocabulary = _save_trained("smoke", name)
    loaded = trained_model(get_profile("smoke"), name)
    assert loaded.path == artifacts_root / "smoke" / "02_training" / "checkpoints" / name / "best.pt"
    assert loaded.tokenizer == vocabulary
    assert not loaded.model.training
    assert type(loaded.model) is type(saved)
    for (key, want), (other, got) in zip(saved.state_dict().items(), loaded.model.state_dict().items(), strict=True):
        assert key == other and torch.equal(want, got), key
    batch = (*vocabulary.encode(TEXTS[:1] * 2, QUERY_MAX_LENGTH), *vocabulary.encode(TEXTS[1:], DOC_MAX_LENGTH))
    with torch.no_grad():
        assert torch.equal(saved(*batch), loaded.model(*batch))


def test_a_missing_checkpoint_names_chapter_2(artifacts_root: Path) -> None:
    with pytest.raises(
        FileNotFoundError,
        match=r"best\.pt: missing .*chapter 2 \(02_training\).*make chapter CH=02_training PROFILE=smoke",
    ):
        trained_model(get_profile("smoke"), "tk2")


def test_a_truncated_checkpoint_names_the_file_and_the_command_that_rebuilds_it(artifacts_root: Path) -> None:
    _save_trained("smoke", "tk2")
    path = checkpoint_path(get_profile("smoke"), "tk2")
    path.write_bytes(path.read_bytes()[:500])
    with pytest.raises(BrokenFileError) as caught:
        trained_model(get_profile("smoke"), "tk2")
    message = str(caught.value)
    assert message.startswith(f"{path}: the trained tk2 (chapter 2's best weights) is truncated or corrupt")
    assert "make chapter CH=02_training PROFILE=smoke ARGS=--force" in message


def test_a_missing_vocabulary_names_chapter_2(artifacts_root: Path) -> None:
    _save_trained("smoke", "tk2")
    (paths.chapter_dir("smoke", "02_training") / "representations" / "vocabulary.txt").unlink()
    with pytest.raises(FileNotFoundError, match=r"vocabulary\.txt: missing .*chapter 2"):
        trained_model(get_profile("smoke"), "tk2")


def test_an_unknown_model_is_refused(artifacts_root: Path) -> None:
    with pytest.raises(ValueError, match="unknown model 'monobert'"):
        trained_model(get_profile("smoke"), "monobert")


def test_candidate_scores_read_back_what_chapter_2_wrote(artifacts_root: Path) -> None:
    run = {"q1": {"p1": 2.5, "p2": -1.0}, "q2": {"p3": 0.25}}
    path = model_runs.scores_path(get_profile("smoke"), "02_training", "dl19", "tk2")
    evaluation.write_trec_run(run, path, tag="tk2")
    assert artifacts.candidate_scores(get_profile("smoke"), "dl19", "tk2") == run
    with pytest.raises(FileNotFoundError, match=r"dl19__knrm\.trec: missing .*chapter 2 \(02_training\)"):
        artifacts.candidate_scores(get_profile("smoke"), "dl19", "knrm")


def test_small_bert_and_table2_name_chapter_2_when_missing(artifacts_root: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"config\.json: missing \(the small pre-trained BERT\).*02_training"):
        artifacts.small_bert(get_profile("smoke"))
    with pytest.raises(FileNotFoundError, match=r"table2\.csv: missing .*make chapter CH=02_training PROFILE=book"):
        artifacts.table2(get_profile("book"))


def test_speeds_name_chapter_3_when_missing_and_read_its_json(artifacts_root: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"speed\.json: missing .*chapter 3 \(03_time_budget\)"):
        artifacts.speeds(get_profile("smoke"))
    write_json(paths.chapter_dir("smoke", "03_time_budget") / "speed.json", {"results": [{"model": "tk2"}]})
    assert artifacts.speeds(get_profile("smoke")) == {"results": [{"model": "tk2"}]}


def _write_chapter2_settings(profile_name: str, **changes) -> dict:
    settings = dataclasses.asdict(get_profile(profile_name).training.replace(**changes))
    write_json(paths.chapter_dir(profile_name, "02_training") / "settings.json", {"seed": 42, **settings})
    return settings


def _saved_and_loaded(profile_name: str, name: str, model: torch.nn.Module) -> artifacts.TrainedModel:
    """Save ``model``'s weights as chapter 2's best ``name``, then load them back through ``trained_model``."""
    profile = get_profile(profile_name)
    path = checkpoint_path(profile, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), path)
    return trained_model(profile, name)


def test_bert_cat_comes_back_on_the_bert_and_layers_chapter_2_used(artifacts_root: Path) -> None:
    _write_chapter2_settings("smoke", bert_cat_start="minilm", bert_cat_layers=1)
    saved = BertCat(minilm_folder(), num_layers=1)
    with torch.no_grad():
        saved.score.weight.add_(1.0)
    loaded = _saved_and_loaded("smoke", "bert-cat", saved)
    assert len(loaded.model.bert.encoder.layer) == 1
    assert torch.equal(loaded.model.score.weight, saved.score.weight)
    assert loaded.tokenizer.vocab_size == 30522


def test_the_zero_shot_bi_encoder_needs_no_checkpoint(artifacts_root: Path) -> None:
    _write_chapter2_settings("smoke")
    loaded = trained_model(get_profile("smoke"), "bi-encoder")
    assert loaded.path == minilm_folder() and not loaded.model.training
    assert len(loaded.model.bert.encoder.layer) == 6, "the bi-encoder is MiniLM as it is"


def test_tilde_outputs_and_budget_leaders_name_their_chapter_and_read_back(artifacts_root: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"chapter 6 \(06_tilde\)"):
        artifacts.tilde_latency(get_profile("smoke"))
    with pytest.raises(FileNotFoundError, match=r"chapter 6 \(06_tilde\)"):
        artifacts.tilde_index_size(get_profile("smoke"))
    with pytest.raises(FileNotFoundError, match=r"chapter 3 \(03_time_budget\)"):
        artifacts.budget_leaders(get_profile("smoke"), "dl19")
    tilde = paths.chapter_dir("smoke", "06_tilde")
    tilde.mkdir(parents=True, exist_ok=True)
    (tilde / "latency.csv").write_text("method,candidates,total ms\nTILDEv2,100,0.5\n")
    (tilde / "index_size.csv").write_text("model,bytes per passage\nTILDEv2,200.5\n")
    budget = paths.chapter_dir("smoke", "03_time_budget")
    budget.mkdir(parents=True, exist_ok=True)
    (budget / "best_per_budget_book_dl19_nDCG10.csv").write_text("budget (ms),best model(s)\n1.0,TK-1\n10.0,BM25\n")
    assert artifacts.tilde_latency(get_profile("smoke"))["total ms"].tolist() == [0.5]
    assert artifacts.tilde_index_size(get_profile("smoke")).set_index("model")["bytes per passage"]["TILDEv2"] == 200.5
    assert artifacts.budget_leaders(get_profile("smoke"), "dl19")["budget (ms)"].tolist() == [1.0, 10.0]


def test_training_protocol_needs_chapter_2s_settings(artifacts_root: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"chapter 2 \(02_training\)"):
        artifacts.training_protocol(get_profile("smoke"))


def test_a_pieces_model_comes_back_on_minilms_tokenizer_with_its_trained_piece_vectors(artifacts_root: Path) -> None:
    _write_chapter2_settings("smoke")
    representations = model_setup.Representations(
        Vocabulary(["[PAD]", "[UNK]"]), torch.zeros(2, 1), minilm_folder(), wordpiece=None,
        piece_vectors=torch.randn(30522, 20, generator=torch.Generator().manual_seed(1)),
    )  # fmt: skip
    saved, _ = model_setup.build_model("tk1-pieces", representations, seed=3)
    loaded = _saved_and_loaded("smoke", "tk1-pieces", saved)
    assert torch.equal(loaded.model.embedding.weight, saved.embedding.weight)
    assert loaded.tokenizer.vocab_size == 30522
    batch = (*loaded.tokenizer.encode(TEXTS[:1] * 2, QUERY_MAX_LENGTH), *loaded.tokenizer.encode(TEXTS[1:], 200))
    with torch.no_grad():
        assert torch.equal(saved.eval()(*batch), loaded.model(*batch))


def test_tk_on_minilm_comes_back_with_its_own_depth_whatever_bert_cat_kept(artifacts_root: Path) -> None:
    _write_chapter2_settings("smoke", bert_cat_layers=1)
    representations = model_setup.Representations(
        Vocabulary(["[PAD]", "[UNK]"]), torch.zeros(2, 1), minilm_folder(), wordpiece=None, bert_layers=1
    )
    saved, _ = model_setup.build_model("tk-bert2", representations, seed=3)
    with torch.no_grad():
        saved.w_log.weight.add_(1.0)
    loaded = _saved_and_loaded("smoke", "tk-bert2", saved)
    assert len(loaded.model.contextualiser.layers) == 2
    assert torch.equal(loaded.model.w_log.weight, saved.w_log.weight)


def test_the_chosen_tk_names_chapter_2_when_missing_and_reads_back_its_record(artifacts_root: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"chosen_tk\.json: missing .*chapter 2 \(02_training\)"):
        artifacts.chosen_tk(get_profile("smoke"))
    folder = paths.chapter_dir("smoke", "02_training")
    tk_choice.write_choice(folder / artifacts.CHOSEN_TK_FILE, "tk-bert2", {"tk-bert2": 0.5, "bert-cat": 0.6}, "nDCG@10")
    assert artifacts.chosen_tk(get_profile("smoke")) == "tk-bert2"
    record = json.loads((folder / artifacts.CHOSEN_TK_FILE).read_text())
    assert record == {"model": "tk-bert2", "metric": "nDCG@10", "validation": {"tk-bert2": 0.5}}


def test_the_test_years_come_at_chapter_2s_recorded_depth(artifacts_root: Path, converted: Path) -> None:
    profile = get_profile("smoke")
    with pytest.raises(FileNotFoundError, match="02_training"):
        artifacts.test_sets(profile)
    settings = dataclasses.replace(profile.training, candidate_depth=7)
    settings_record.write_settings(paths.chapter_dir("smoke", "02_training") / "settings.json", settings, 42)
    tests = artifacts.test_sets(profile)
    assert set(tests) == {"dl19", "dl20"} and len(tests["dl19"].queries) == 8
    assert all(len(candidates) == 7 for candidates in tests["dl19"].run.values())
