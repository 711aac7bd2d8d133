"""Where the book keeps its files, and the environment variables that move them."""

from __future__ import annotations

from pathlib import Path

import pytest

from lib.core import paths


def test_repo_root_holds_the_library() -> None:
    assert (paths.REPO_ROOT / "lib" / "core" / "paths.py").is_file()
    assert (paths.REPO_ROOT / "pyproject.toml").is_file()


def test_default_data_and_artifact_folders(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TKBOOK_DATA", raising=False)
    monkeypatch.delenv("TKBOOK_ARTIFACTS", raising=False)
    assert paths.data_dir() == paths.REPO_ROOT / "data"
    assert paths.raw_dir() == paths.REPO_ROOT / "data" / "raw"
    assert paths.converted_dir() == paths.REPO_ROOT / "data" / "converted"
    assert paths.artifacts_root() == paths.REPO_ROOT / "artifacts"


def test_variables_move_the_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TKBOOK_DATA", str(tmp_path / "d"))
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path / "a"))
    assert paths.data_dir() == tmp_path.resolve() / "d"
    assert paths.raw_dir() == tmp_path.resolve() / "d" / "raw"
    assert paths.converted_dir() == tmp_path.resolve() / "d" / "converted"
    assert paths.artifacts_root() == tmp_path.resolve() / "a"


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
