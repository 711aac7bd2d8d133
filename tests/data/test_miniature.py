"""The paper-shaped miniature (``lib.data.miniature``) built from the real converted book data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lib.core.types import ranking_from_run
from lib.data import read_collection, read_qrels, read_queries, read_run, read_triples
from lib.data.miniature import MARK, V2_ID_BASE, V2_IDS, build_miniature, is_miniature, write_miniature
from lib.data.registry import sha256_of
from lib.data.splits import TEST_SETS, check_disjoint_from_tests

pytestmark = pytest.mark.usefixtures("converted")

SETS = ("train", "dev-small", "dl19", "dl20")


@pytest.fixture(scope="module")
def folder(converted: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("miniature")
    write_miniature(build_miniature(converted), out)
    return out


def test_layout_and_manifest(folder: Path) -> None:
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["miniature"] is True
    files = {name for name in manifest if name not in MARK}
    expected = {"collection.tsv", "triples.train.tsv", V2_IDS, "runs/dl19__bm25.trec", "runs/dl20__bm25.trec"}
    expected |= {f"queries.{name}.tsv" for name in SETS} | {f"qrels.{name}.txt" for name in SETS}
    assert files == expected
    on_disk = {path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file()}
    assert on_disk == files | {"manifest.json"}
    assert all(sha256_of(folder / name) == manifest[name] for name in files)
    assert is_miniature(folder) and not is_miniature(folder / "runs"), "no manifest: not a miniature"


def test_texts_are_the_book_data(folder: Path, converted: Path) -> None:
    collection = read_collection(folder / "collection.tsv")
    v1, v2 = read_collection(converted / "collection.tsv"), read_collection(converted / "collection.v2.tsv")
    v2_ids = dict(line.split("\t") for line in (folder / V2_IDS).read_text(encoding="utf-8").splitlines())
    assert all(pid.isdigit() for pid in collection)
    for pid, text in collection.items():
        assert text == (v2[v2_ids[pid]] if int(pid) >= V2_ID_BASE else v1[pid])
    sources = {"train": "dl21", "dev-small": "dev-small", "dl19": "dl19", "dl20": "dl20"}
    for name, source in sources.items():
        queries, book = read_queries(folder / f"queries.{name}.tsv"), read_queries(converted / f"queries.{source}.tsv")
        assert queries and all(book[qid] == text for qid, text in queries.items())


def test_every_pid_is_in_the_collection(folder: Path) -> None:
    collection = read_collection(folder / "collection.tsv")
    for name in SETS:
        qrels = read_qrels(folder / f"qrels.{name}.txt")
        assert set(qrels) == set(read_queries(folder / f"queries.{name}.tsv"))
        assert all(pid in collection for judged in qrels.values() for pid in judged)
    for name in TEST_SETS:
        assert all(
            pid in collection for ranked in read_run(folder / "runs" / f"{name}__bm25.trec").values() for pid in ranked
        )
    assert all(pos in collection and neg in collection for _, pos, neg in read_triples(folder / "triples.train.tsv"))


def test_test_years_keep_their_judged_pools_and_an_unscored_top_k(folder: Path, converted: Path) -> None:
    book = read_collection(converted / "collection.tsv")
    for name in TEST_SETS:
        assert read_queries(folder / f"queries.{name}.tsv") == read_queries(converted / f"queries.{name}.tsv")
        judged = {
            q: {p: g for p, g in j.items() if p in book} for q, j in read_qrels(converted / f"qrels.{name}.txt").items()
        }
        assert read_qrels(folder / f"qrels.{name}.txt") == judged
        lines = (folder / "runs" / f"{name}__bm25.trec").read_text(encoding="utf-8").splitlines()
        positions: dict[str, int] = {}
        for line in lines:
            qid, _, _, rank, score, tag = line.split()
            positions[qid] = positions.get(qid, 0) + 1
            assert (int(rank), score, tag) == (positions[qid], "0.0", "bm25")
        official = read_run(converted / "runs" / f"{name}__bm25.trec")
        run = read_run(folder / "runs" / f"{name}__bm25.trec")
        assert {q: set(c) for q, c in run.items()} == {q: set(ranking_from_run(c)[:100]) for q, c in official.items()}
        shuffled = [line.split()[2] for line in lines if line.startswith(f"{lines[0].split()[0]} ")]
        assert shuffled != ranking_from_run(official[lines[0].split()[0]])


def test_training_and_validation_queries_are_disjoint_and_no_test_query(folder: Path) -> None:
    train, dev = read_queries(folder / "queries.train.tsv"), read_queries(folder / "queries.dev-small.tsv")
    tests = {name: read_queries(folder / f"queries.{name}.tsv") for name in TEST_SETS}
    assert not set(train) & set(dev)
    check_disjoint_from_tests(train, {"dev-small": dev})
    check_disjoint_from_tests({**train, **dev}, tests)


def test_triples_pair_a_judged_passage_with_an_unjudged_one(folder: Path) -> None:
    qrels = read_qrels(folder / "qrels.train.txt")
    triples = read_triples(folder / "triples.train.tsv")
    assert triples and len(set(triples)) == len(triples)
    assert {g for judged in qrels.values() for g in judged.values()} == {1}
    assert all(qrels[qid].get(pos) == 1 and neg not in qrels[qid] for qid, pos, neg in triples)


def test_deterministic_and_sized(converted: Path, tmp_path: Path) -> None:
    needed = build_miniature(converted)
    assert build_miniature(converted) == needed
    larger = build_miniature(converted, passages=len(needed.passages) + 10)
    assert len(larger.passages) == len(needed.passages) + 10 and needed.passages.items() <= larger.passages.items()
    smaller = build_miniature(converted, depth=10, triples_per_query=1)
    assert len(smaller.passages) < len(needed.passages)
    assert all(len(ranked) == 10 for run in smaller.runs.values() for ranked in run.values())


@pytest.mark.parametrize(
    ("arguments", "named"),
    [({"passages": 0}, "'passages'"), ({"passages": 5}, "'passages' must be between"), ({"depth": 0}, "'depth'"),
     ({"triples_per_query": -1}, "'triples_per_query'")],
)  # fmt: skip
def test_bad_arguments_name_the_parameter(converted: Path, arguments: dict, named: str) -> None:
    with pytest.raises(ValueError, match=named):
        build_miniature(converted, **arguments)


def test_refuses_a_folder_that_is_no_miniature(converted: Path, tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text('{"collection.tsv": "abc"}', encoding="utf-8")
    with pytest.raises(ValueError, match="not a miniature"):
        write_miniature(build_miniature(converted, depth=1, triples_per_query=1), tmp_path)
    assert not (tmp_path / "collection.tsv").exists()
