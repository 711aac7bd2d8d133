"""The loaders chapters call (``lib.data``): they read the profile's data folder (book subset or MS MARCO export)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lib import data
from lib.core import paths


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


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def data_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data folder with a tiny book subset (``converted/``) and a tiny MS MARCO export (``msmarco/``).

    The two hold different texts for the same names, so a test sees which one a loader read; the export
    has the files ``python -m lib.data.msmarco`` writes (no v2 corpus, no DL21, BM25 runs only).
    """
    monkeypatch.setenv("TKBOOK_DATA", str(tmp_path))
    monkeypatch.setenv(paths.CONVERTED_VARIABLE, "converted")  # restored after the test
    book = tmp_path / "converted"
    _write(book / "collection.tsv", "7\tbook passage seven\n")
    _write(book / "collection.v2.tsv", "msmarco_passage_00_1\ta v2 passage of DL21\n")
    _write(book / "queries.dl21.tsv", "2082\tbook validation query\n")
    export = tmp_path / "msmarco"
    _write(export / "collection.tsv", "0\tthe full collection's first passage\n1\tand its second\n")
    _write(export / "queries.dev-small.tsv", "2\tandrew kaufman\n1048585\twhat is paula deen's brother\n")
    _write(export / "qrels.dev-small.txt", "2 0 1 1\n1048585 0 0 1\n")
    _write(export / "runs" / "dev-small__bm25.trec", "2 Q0 1 1 0.0 bm25\n2 Q0 0 2 0.0 bm25\n1048585 Q0 0 1 0.0 bm25\n")
    _write(export / "queries.dl19.tsv", "19335\tanthropological definition of environment\n")
    _write(export / "qrels.dl19.txt", "19335 0 1 3\n")
    _write(export / "runs" / "dl19__bm25.trec", "19335 Q0 0 1 0.0 bm25\n19335 Q0 1 2 0.0 bm25\n")
    return tmp_path.resolve()


def test_under_the_paper_profile_the_loaders_read_the_msmarco_export(data_folders: Path) -> None:
    paths.use_profile_data("paper")
    assert data.load_queries("dev-small") == {"2": "andrew kaufman", "1048585": "what is paula deen's brother"}
    assert data.load_qrels("dev-small") == {"2": {"1": 1}, "1048585": {"0": 1}}
    assert data.load_run("dev-small", "bm25") == {"2": {"1": 0.0, "0": 0.0}, "1048585": {"0": 0.0}}
    assert list(data.load_run("dl19", "bm25")["19335"]) == ["0", "1"]
    assert data.converted_file("collection.tsv") == data_folders / "msmarco" / "collection.tsv"
    expected = {"0": "the full collection's first passage", "1": "and its second"}
    assert data.book_texts() == expected, "the export has no v2 corpus: its passages are collection.tsv alone"


def test_the_book_profile_still_reads_the_converted_subset(data_folders: Path) -> None:
    paths.use_profile_data("paper")
    paths.use_profile_data("book")
    assert data.load_collection() == {"7": "book passage seven"}
    assert data.book_texts() == {"7": "book passage seven", "msmarco_passage_00_1": "a v2 passage of DL21"}
    assert data.load_queries("dl21") == {"2082": "book validation query"}
    (data_folders / "converted" / "collection.v2.tsv").unlink()
    with pytest.raises(FileNotFoundError, match="make data"):
        data.book_texts()  # the book subset always has its v2 corpus: a missing one is an error


def test_a_missing_paper_folder_names_the_folder_and_the_export_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TKBOOK_DATA", str(tmp_path))
    monkeypatch.setenv(paths.CONVERTED_VARIABLE, "converted")
    paths.use_profile_data("paper")
    with pytest.raises(FileNotFoundError) as caught:
        data.load_queries("dev-small")
    message = str(caught.value)
    folder = tmp_path.resolve() / "msmarco"
    assert message.startswith(f"{folder}: no such folder")
    assert f"`python -m lib.data.msmarco --out {folder}`" in message
    assert "make data" not in message


def test_a_file_the_export_never_writes_says_so(data_folders: Path) -> None:
    paths.use_profile_data("paper")
    with pytest.raises(FileNotFoundError) as caught:
        data.load_queries("dl21")
    message = str(caught.value)
    assert str(data_folders / "msmarco" / "queries.dl21.tsv") in message
    assert "python -m lib.data.msmarco" in message and "DL21" in message


def test_fill_command_names_make_data_for_the_book_subset_and_the_export_otherwise(data_folders: Path) -> None:
    assert "make data" in data.fill_command(paths.converted_dir("book"))
    export = data_folders / "msmarco"
    assert data.fill_command(paths.converted_dir("paper")) == f"`python -m lib.data.msmarco --out {export}`"


def test_the_export_holds_no_book_only_files_and_its_runs_are_unscored(data_folders: Path) -> None:
    paths.use_profile_data("paper")
    assert data.holds("collection.tsv", "queries.dl19.tsv") and not data.holds(data.V2_COLLECTION)
    assert data.held_query_sets(("dl19", "dl20", "dl21", "dev-small")) == ("dl19", "dev-small")
    assert data.held_runs("dl19", ("bm25", "bm25-rm3", "tas-b")) == ("bm25",)
    assert data.is_unscored(data.load_run("dl19", "bm25"))
    assert data.corpus_tag() == "msmarco"
    sentence = data.missing_sentence("DL21 queries and judgments", ["queries.dl21.tsv", "qrels.dl21.txt"])
    assert sentence == (
        "The data folder data/msmarco has no DL21 queries and judgments (queries.dl21.tsv, qrels.dl21.txt): "
        "full MS MARCO's export writes none, so this part is left out."
    )


def test_a_run_with_any_score_is_scored_and_the_book_folder_is_the_book_corpus(data_folders: Path) -> None:
    assert not data.is_unscored({"1": {"7": 0.0, "8": -1.5}})
    assert data.is_unscored({"1": {"7": 0.0}, "2": {}})
    paths.use_profile_data("book")
    assert data.corpus_tag() == "bookcorpus"
    assert data.holds(data.V2_COLLECTION)
    assert data.held_query_sets(("dl21",)) == (), "queries without qrels are no query set"
    assert "make data" in data.missing_sentence("DL21 judgments", ["qrels.dl21.txt"])
