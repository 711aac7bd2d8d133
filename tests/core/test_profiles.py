"""The profiles, the smoke profile's query slice and ``paper-mini``'s named substitutions."""

from __future__ import annotations

import dataclasses

import pytest

from lib.core.profiles import (
    MINIATURE_TEACHER,
    PAPER_MINI_SUBSTITUTIONS,
    PROFILES,
    PUBLISHED_TEACHER,
    LectureSettings,
    LongSettings,
    SpeedSettings,
    TrainingSettings,
    TrecSettings,
    get_profile,
    limit_queries,
    with_overrides,
)
from lib.models.paper_size import ARCHITECTURES
from lib.models.registry import MODELS


@pytest.mark.parametrize(("name", "limit"), [("smoke", 8), ("book", None), ("paper", None), ("paper-mini", 8)])
def test_get_profile(name: str, limit: int | None) -> None:
    profile = get_profile(name)
    assert profile is PROFILES[name]
    assert profile.name == name
    assert profile.query_limit == limit


@pytest.mark.parametrize("name", ["full", "", "Smoke", "book "])
def test_unknown_profile_is_a_value_error_naming_the_parameter(name: str) -> None:
    with pytest.raises(ValueError) as caught:
        get_profile(name)
    message = str(caught.value)
    assert "'profile'" in message
    assert repr(name) in message
    assert "smoke" in message and "book" in message and "paper" in message


QIDS = ["1037798", "104861", "19335", "1110199", "1063750", "87452", "1133167", "156493", "168216", "183378", "3"]


def test_smoke_takes_the_first_eight_in_numeric_order() -> None:
    assert limit_queries(QIDS, get_profile("smoke")) == [
        "3",
        "19335",
        "87452",
        "104861",
        "156493",
        "168216",
        "183378",
        "1037798",
    ]


def test_book_takes_all_in_numeric_order() -> None:
    given = list(QIDS)
    assert limit_queries(given, get_profile("book")) == sorted(QIDS, key=int)
    assert given == QIDS  # the argument is not reordered in place


def test_smoke_on_a_short_list_takes_all() -> None:
    assert limit_queries(["20", "10", "9"], get_profile("smoke")) == ["9", "10", "20"]


def test_every_profile_has_every_chapter_section() -> None:
    for profile in PROFILES.values():
        assert profile.training.candidate_depth >= 1 and profile.training.max_steps >= 1
        assert set(profile.speed.architectures) <= set(ARCHITECTURES)
        assert min(profile.clusters.ks) >= 2 and profile.clusters.n_init >= 1
        assert profile.tilde.steps >= 1 and profile.tilde.lr > 0
        assert len(profile.trec.inits) >= 2, "TUW19-p1 picks among inits and p3 ensembles them"
    assert PROFILES["smoke"].training.max_steps < PROFILES["book"].training.max_steps
    assert PROFILES["paper"].tilde.lr == 2e-5  # TILDE §4.3 for bert-base-uncased


def test_each_profile_names_its_data_folder_its_validation_set_and_its_training_queries() -> None:
    for name in ("smoke", "book"):
        profile = get_profile(name)
        assert profile.data_folder == "converted", "the book subset of `make data`"
        assert profile.training.validation_set == "dl21" and profile.training.distill_query_set == "dev-small"
    paper = get_profile("paper")
    assert paper.data_folder == "msmarco", "full MS MARCO of `python -m lib.data.msmarco`"
    assert paper.training.validation_set == "dev-small", "the TK paper's and Hofstätter et al.'s validation"
    assert paper.training.distill_query_set == "train", "never the validation queries"
    assert paper.training.candidate_depth == 1000, "the export's top-1000 has no BM25 order to cut"


def test_settings_replace_ignores_none_and_refuses_unknown_names() -> None:
    base = get_profile("book").training
    assert base.replace(max_steps=None) == base
    assert base.replace(max_steps=7).max_steps == 7
    with pytest.raises(ValueError, match="unknown TrainingSettings setting"):
        base.replace(learning_rate=1.0)
    assert isinstance(base, TrainingSettings)


def test_speed_settings_refuse_bad_values() -> None:
    with pytest.raises(ValueError, match="min_documents"):
        SpeedSettings(min_documents=10, max_documents=5)
    with pytest.raises(ValueError, match="batch_sizes"):
        SpeedSettings(batch_sizes={"word": 0, "wordpiece": 1})


def test_trec_settings_refuse_repeated_seeds_and_a_zero_count() -> None:
    with pytest.raises(ValueError, match="'inits' must be distinct"):
        TrecSettings(inits=(1, 1))
    with pytest.raises(ValueError, match="'inits' must be distinct"):
        TrecSettings(inits=())
    with pytest.raises(ValueError, match="p2_min_count"):
        TrecSettings(p2_min_count=0)


def test_lecture_settings_refuse_empty_counts_and_zero_repetitions() -> None:
    with pytest.raises(ValueError, match="latency_counts"):
        LectureSettings(latency_counts=())
    with pytest.raises(ValueError, match="latency_repetitions"):
        LectureSettings(latency_repetitions=0)
    assert get_profile("book").lecture.latency_counts == (100, 1000)
    assert set(get_profile("smoke").lecture.models) <= set(MODELS)


def test_long_settings_keep_the_sweep_inside_what_the_models_read() -> None:
    with pytest.raises(ValueError, match="sweep_offsets"):
        LongSettings(sweep_offsets=(0, 1024))  # at the cap: nothing would be read there
    with pytest.raises(ValueError, match="sweep_offsets"):
        LongSettings(sweep_offsets=())
    with pytest.raises(ValueError, match="own_per_document"):
        LongSettings(own_per_document=-1)
    with pytest.raises(ValueError, match="time_max_pieces"):
        LongSettings(time_max_pieces=0)
    book = get_profile("book").long
    assert 0 in book.sweep_offsets and book.first_pieces < max(book.sweep_offsets) < book.max_pieces
    assert book.time_max_pieces >= 2000  # TIME's articles read as far as the authors of TKL and IDCM read


def test_lecture_settings_stop_only_their_models_within_the_schedule() -> None:
    with pytest.raises(ValueError, match="'stop_at'.*'bert-cat'"):
        LectureSettings(stop_at={"bert-cat": 80})
    with pytest.raises(ValueError, match="'stop_at'.*'colbert': 0"):
        LectureSettings(stop_at={"colbert": 0})
    with pytest.raises(ValueError, match="'duo_stop_at'"):
        LectureSettings(duo_max_steps=60, duo_stop_at=61)
    book = get_profile("book").lecture
    assert set(book.stop_at) <= set(book.models) and book.duo_stop_at <= book.duo_max_steps
    assert not get_profile("smoke").lecture.stop_at  # the CI sizes run their whole schedules


def test_overrides_change_only_their_section_and_name_a_bad_parameter() -> None:
    smoke = get_profile("smoke")
    changed = with_overrides(smoke, "training", {"max_steps": 7, "batch_size": None, "ladder_models": ["tk1-pieces"]})
    assert changed.training == smoke.training.replace(max_steps=7, ladder_models=("tk1-pieces",))
    assert changed.speed == smoke.speed and changed.tilde == smoke.tilde
    with pytest.raises(ValueError, match="'max_step'"):
        with_overrides(smoke, "training", {"max_step": 1})
    with pytest.raises(ValueError, match="'section'"):
        with_overrides(smoke, "nothing", {})


def test_paper_mini_is_the_paper_path_with_schedules_of_seconds_and_named_substitutions_only() -> None:
    paper, mini, smoke = get_profile("paper"), get_profile("paper-mini"), get_profile("smoke")
    assert paper.paper_path and mini.paper_path and not smoke.paper_path and not get_profile("book").paper_path
    assert mini.data_folder == "msmarco-mini" and paper.substitutions == () and mini.substitutions
    assert mini.substitutions == PAPER_MINI_SUBSTITUTIONS
    # what the paper's path reads and decides is the paper's ...
    for field in ("distill_query_set", "validation_set", "validation_metric", "bert_steps", "distill_negatives"):
        assert getattr(mini.training, field) == getattr(paper.training, field), field
    assert mini.tilde == smoke.tilde.replace(train_set="train"), "MS MARCO's training judgments, smoke's schedule"
    # ... and every other difference in the training section is a schedule or size, or a named substitution
    schedules = {"batch_size", "max_steps", "validate_every", "patience", "bert_cat_batch_size", "bert_cat_max_steps",
                 "bert_cat_validate_every", "validation_depth", "candidate_depth", "throughput_documents",
                 "piece_vector_dim", "ladder_models"}  # fmt: skip
    substituted = {"embedding_method": "GloVe 6B-50d", "bert_cat_start": "all-MiniLM-L6-v2",
                   "bert_cat_layers": "its first layer", "teacher_scores": "MiniLM bi-encoder"}  # fmt: skip
    changed = {f.name for f in dataclasses.fields(paper.training)} - {
        name for name in vars(paper.training) if getattr(paper.training, name) == getattr(mini.training, name)
    }
    assert changed <= schedules | set(substituted), changed - schedules - set(substituted)
    for name, phrase in substituted.items():
        assert name not in changed or any(phrase in line for line in mini.substitutions), name
    assert (paper.training.teacher_scores, mini.training.teacher_scores) == (PUBLISHED_TEACHER, MINIATURE_TEACHER)
    assert (paper.training.embedding_method, paper.training.bert_cat_start) == ("glove-42b-300d", "bert-base-uncased")
    assert mini.training.max_steps == smoke.training.max_steps and mini.query_limit == smoke.query_limit
