"""Paths as pages show them (``lib.core.paths.shown``): never the building machine's folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from lib.core import paths


def test_shown_paths_are_relative_to_artifacts_data_or_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path / "elsewhere" / "artifacts"))
    monkeypatch.setenv("TKBOOK_DATA", str(tmp_path / "disk" / "data"))
    checkpoint = tmp_path / "elsewhere" / "artifacts" / "book" / "02_training" / "best.pt"
    assert paths.shown(checkpoint) == "artifacts/book/02_training/best.pt"
    assert paths.shown(tmp_path / "disk" / "data" / "converted" / "collection.tsv") == "data/converted/collection.tsv"
    assert paths.shown(paths.REPO_ROOT / "lib" / "core" / "paths.py") == "lib/core/paths.py"
    assert paths.shown(tmp_path / "other" / "file.txt") == "file.txt"
    assert str(tmp_path) not in paths.shown(checkpoint)
