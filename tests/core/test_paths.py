"""Where the book keeps its files, and the environment variables that move them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lib.core import paths


def test_repo_root_holds_the_library() -> None:
    assert (paths.REPO_ROOT / "lib" / "core" / "paths.py").is_file()
    assert (paths.REPO_ROOT / "pyproject.toml").is_file()


def test_default_data_and_artifact_folders(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TKBOOK_DATA", raising=False)
    monkeypatch.delenv(paths.CONVERTED_VARIABLE, raising=False)
    monkeypatch.delenv("TKBOOK_ARTIFACTS", raising=False)
    assert paths.data_dir() == paths.REPO_ROOT / "data"
    assert paths.raw_dir() == paths.REPO_ROOT / "data" / "raw"
    assert paths.converted_dir() == paths.REPO_ROOT / "data" / "converted"
    assert paths.artifacts_root() == paths.REPO_ROOT / "artifacts"


def test_variables_move_the_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TKBOOK_DATA", str(tmp_path / "d"))
    monkeypatch.delenv(paths.CONVERTED_VARIABLE, raising=False)
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path / "a"))
    assert paths.data_dir() == tmp_path.resolve() / "d"
    assert paths.raw_dir() == tmp_path.resolve() / "d" / "raw"
    assert paths.converted_dir() == tmp_path.resolve() / "d" / "converted"
    assert paths.artifacts_root() == tmp_path.resolve() / "a"


def test_each_profile_names_its_data_folder_and_the_variable_picks_the_one_the_loaders_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TKBOOK_DATA", str(tmp_path))
    monkeypatch.delenv(paths.CONVERTED_VARIABLE, raising=False)
    data = tmp_path.resolve()
    assert paths.converted_dir("smoke") == paths.converted_dir("book") == data / "converted"
    assert paths.converted_dir("paper") == data / "msmarco"
    assert paths.converted_dir() == data / "converted", "unset: the book subset"
    monkeypatch.setenv(paths.CONVERTED_VARIABLE, "msmarco")
    assert paths.converted_dir() == data / "msmarco"
    assert paths.converted_dir("book") == data / "converted", "a named profile ignores the variable"


def test_use_profile_data_sets_the_variable_for_this_process_and_its_children(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TKBOOK_DATA", str(tmp_path))
    monkeypatch.setenv(paths.CONVERTED_VARIABLE, "converted")  # restored after the test
    assert paths.use_profile_data("paper") == tmp_path.resolve() / "msmarco"
    assert os.environ[paths.CONVERTED_VARIABLE] == "msmarco" and paths.converted_dir() == tmp_path.resolve() / "msmarco"
    assert paths.use_profile_data("smoke") == tmp_path.resolve() / "converted"
    assert os.environ[paths.CONVERTED_VARIABLE] == "converted"
    with pytest.raises(ValueError, match="'profile'"):
        paths.use_profile_data("huge")


@pytest.mark.parametrize("value", ["../elsewhere", "a/b", "/abs"])
def test_a_data_folder_variable_that_is_not_a_plain_name_is_refused(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(paths.CONVERTED_VARIABLE, value)
    with pytest.raises(ValueError, match="invalid data folder name"):
        paths.converted_dir()


def test_chapter_and_run_folders_are_created(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path))
    chapter = paths.chapter_dir("smoke", "03_tk")
    assert chapter == tmp_path.resolve() / "smoke" / "03_tk" and chapter.is_dir()
    runs = paths.runs_dir("book")
    assert runs == tmp_path.resolve() / "book" / "runs" and runs.is_dir()
    assert paths.run_path("smoke", "dl19", "bm25") == tmp_path.resolve() / "smoke" / "runs" / "dl19__bm25.trec"


@pytest.mark.parametrize(
    ("call", "kind"),
    [
        (lambda: paths.chapter_dir("../etc", "x"), "profile"),
        (lambda: paths.chapter_dir("smoke", "a/b"), "chapter"),
        (lambda: paths.runs_dir(""), "profile"),
        (lambda: paths.run_path("smoke", "dl 19", "bm25"), "set"),
        (lambda: paths.run_path("smoke", "dl19", ".hidden"), "system"),
    ],
)
def test_invalid_names_are_rejected(call, kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path / "artifacts"))
    with pytest.raises(ValueError, match=f"invalid {kind} name"):
        call()
    assert not (tmp_path / "etc").exists()  # nothing escaped the artifacts root
