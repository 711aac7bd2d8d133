"""The scored BM25 runs the chapters re-rank, and chapter 1 under the ``paper`` profile on an MS MARCO export.

The export is a real slice of the book data written as ``python -m lib.data.msmarco`` writes full MS
MARCO: ``collection.tsv`` (the book corpus's first passages), DL19/DL20 queries and qrels restricted
to them, dev-small queries and qrels, the official runs with the score 0 for every candidate, and no
DL21, v2 passages or other runs.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lib.book.build import Chapter, execute
from lib.core import paths
from lib.core.profiles import get_profile
from lib.data import load_run, read_collection, read_qrels, read_queries, read_run
from lib.experiments import artifacts, first_stage_runs
from lib.first_stage import lucene

PASSAGES = 300
DEV_QUERIES = 5


def _write_lines(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


@pytest.fixture(scope="module")
def export(converted: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``<data>/msmarco``: the first :data:`PASSAGES` book passages in the MS MARCO export's files."""
    data = tmp_path_factory.mktemp("data")
    folder = data / "msmarco"
    passages = dict(list(read_collection(converted / "collection.tsv").items())[:PASSAGES])
    _write_lines(folder / "collection.tsv", [f"{pid}\t{text}" for pid, text in passages.items()])
    for name in ("dl19", "dl20"):
        qrels = {
            qid: {pid: grade for pid, grade in judged.items() if pid in passages}
            for qid, judged in read_qrels(converted / f"qrels.{name}.txt").items()
        }
        qrels = {qid: judged for qid, judged in qrels.items() if judged}
        queries = read_queries(converted / f"queries.{name}.tsv")
        _write_lines(folder / f"queries.{name}.tsv", [f"{qid}\t{queries[qid]}" for qid in qrels])
        _write_lines(
            folder / f"qrels.{name}.txt", [f"{q} 0 {p} {g}" for q, judged in qrels.items() for p, g in judged.items()]
        )
        run = read_run(converted / "runs" / f"{name}__bm25.trec")
        unscored = [
            f"{qid} Q0 {pid} {rank} 0.0 bm25"
            for qid in qrels
            for rank, pid in enumerate((pid for pid in run.get(qid, {}) if pid in passages), start=1)
        ]
        _write_lines(folder / "runs" / f"{name}__bm25.trec", unscored)
    dev = dict(list(read_queries(converted / "queries.dev-small.tsv").items())[:DEV_QUERIES])
    dev_qrels = read_qrels(converted / "qrels.dev-small.txt")
    _write_lines(folder / "queries.dev-small.tsv", [f"{qid}\t{text}" for qid, text in dev.items()])
    _write_lines(folder / "qrels.dev-small.txt", [f"{q} 0 {p} {g}" for q in dev for p, g in dev_qrels[q].items()])
    (folder / "manifest.json").write_text("{}", encoding="utf-8")
    return folder


@pytest.fixture
def paper_data(export: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This process reads ``export`` as the ``paper`` profile's folder, with artifacts under ``tmp_path``."""
    monkeypatch.setenv("TKBOOK_DATA", str(export.parent))
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path / "artifacts"))
    monkeypatch.setenv(paths.CONVERTED_VARIABLE, "msmarco")
    return export


def test_the_export_slice_has_unscored_runs_and_no_book_only_sets(paper_data: Path) -> None:
    assert first_stage_runs.rerank_sets(get_profile("paper")) == ("dl19", "dl20", "dev-small")
    assert {score for candidates in load_run("dl19", "bm25").values() for score in candidates.values()} == {0.0}
    with pytest.raises(FileNotFoundError, match="make chapter CH=01_data_and_first_stage PROFILE=paper"):
        first_stage_runs.bm25_run(get_profile("paper"), "dl19")


def test_unscored_and_missing_runs_are_retrieved_scored_and_read_back(paper_data: Path, tmp_path: Path) -> None:
    profile = get_profile("paper")
    index = lucene.build_index(paper_data / "collection.tsv", tmp_path / "index", threads=1, progress=False)
    retrieved = first_stage_runs.retrieve_missing(profile, index, threads=1)
    assert list(retrieved) == ["dl19", "dl20", "dev-small"], "dev-small has no run in the export: retrieved too"
    for name, run in retrieved.items():
        assert any(score > 0 for candidates in run.values() for score in candidates.values())
        assert first_stage_runs.bm25_run(get_profile("paper"), name) == run, "the written run reads back exactly"
        assert paths.run_path("paper", name, "bm25").is_file()
    sentence = first_stage_runs.runs_sentence(profile, retrieved)
    assert sentence.startswith("Retrieved here") and "top 1000 of dl19, dl20, dev-small" in sentence


def test_the_book_subset_ships_scored_runs_and_nothing_is_retrieved(
    converted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TKBOOK_ARTIFACTS", str(tmp_path))
    monkeypatch.setenv(paths.CONVERTED_VARIABLE, "converted")
    profile = get_profile("book")
    assert first_stage_runs.retrieve_missing(profile, tmp_path / "no-index") == {}, "no index is opened"
    assert first_stage_runs.bm25_run(get_profile("book"), "dl21") == load_run("dl21", "bm25")
    assert not paths.run_path("book", "dl21", "bm25").exists()
    assert first_stage_runs.runs_sentence(profile, {}).startswith("The data folder ships scored BM25 runs of dl19")


def test_chapter_1_runs_under_the_paper_profile_on_the_export(paper_data: Path, tmp_path: Path) -> None:
    source = paths.REPO_ROOT / "notebooks" / "01_data_and_first_stage.py"
    chapter = Chapter("01_data_and_first_stage", source, tmp_path / "chapters" / "01_data_and_first_stage.ipynb")
    execute(chapter, {"profile": "paper", "index_threads": 1})

    out = paths.artifacts_root() / "paper" / "01_data_and_first_stage"
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["passages_v1"] == PASSAGES and summary["passages_v2"] == 0
    assert set(summary["queries"]) == {"dl19", "dl20", "dev-small"}
    assert all(0 < value <= 1 for value in summary["bm25_ndcg10"].values())
    assert artifacts.book_index(get_profile("paper")).is_dir()
    for name in ("dl19", "dl20", "dev-small"):
        run = read_run(paths.run_path("paper", name, "bm25"))
        assert any(score > 0 for candidates in run.values() for score in candidates.values()), name
    notebook = chapter.output.read_text(encoding="utf-8")
    assert "has no DL21 queries and judgments (queries.dl21.tsv, qrels.dl21.txt)" in notebook
    assert "has no v2 corpus of DL21" in notebook
    assert (out / "recall_by_depth.csv").is_file() and not (out / "folds.csv").exists()
    assert (paths.runs_dir("paper") / "dl19__bm25-msmarco.trec").is_file()


@pytest.mark.parametrize("chapter", ["02_training", "03_time_budget", "04_query_clusters", "05_interpreting_tk"])
def test_chapters_after_the_first_read_bm25_through_bm25_run(chapter: str) -> None:
    source = (paths.REPO_ROOT / "notebooks" / f"{chapter}.py").read_text(encoding="utf-8")
    direct = re.findall(r"load_run\([^)]*(?:\"bm25\"|FIRST_STAGE)\)", source)
    assert not direct, f"{chapter} reads the data folder's BM25 run, unscored in the MS MARCO export: {direct}"
    assert "first_stage_runs.bm25_run(chapter.profile, " in source
