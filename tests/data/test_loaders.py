"""The loaders chapters call (``lib.data``): they read the converted files."""

from __future__ import annotations

from pathlib import Path

import pytest

from lib import data


def test_loaders_read_the_converted_files(converted: Path) -> None:
    assert len(data.load_collection()) == 29_963
    assert len(data.load_collection("v2")) == 10_553
    assert len(data.load_queries("dl19")) == 43
    assert sum(len(grades) for grades in data.load_qrels("dl20").values()) == 11_386
    run = data.load_run("dl19", "bm25")
    assert len(run) == 43 and all(len(ranked) == 100 for ranked in run.values())
    assert data.converted_file("manifest.json") == converted / "manifest.json"


def test_unknown_corpus_names_the_parameter() -> None:
    with pytest.raises(ValueError, match="'corpus'"):
        data.load_collection("v3")


def test_missing_file_says_how_to_make_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TKBOOK_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError) as caught:
        data.load_queries("dl19")
    message = str(caught.value)
    assert str(tmp_path.resolve() / "converted" / "queries.dl19.tsv") in message
    assert "make data" in message
