"""The conversion of the real registry files into the standard MS MARCO / TREC formats."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lib.core import paths
from lib.data import convert, read_collection, read_qrels, read_queries, read_run
from lib.data.registry import REGISTRY, sha256_of

TILDE_RUN_FILE = "dl19__bm25-tilde-top1000.trec"


def expected_run_files() -> set[str]:
    """One run per (query set, retriever) the registry ships, plus the TILDE top-1000."""
    names = {TILDE_RUN_FILE}
    for folder, system in convert.RETRIEVERS.items():
        for query_set in ("dl19", "dl20", "dl21"):
            if f"{convert.RANK_LLM}/{folder}/retrieve_results_{query_set}_top100.json" in REGISTRY:
                names.add(f"{query_set}__{system}.trec")
    return names


def output_files(folder: Path) -> set[str]:
    return {str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file()}


# --- the converted real data -------------------------------------------------------------------


def test_collection_sizes(converted: Path) -> None:
    assert len(read_collection(converted / "collection.tsv")) == 29_963
    assert len(read_collection(converted / "collection.v2.tsv")) == 10_553
    with open(converted / "collection.tsv", encoding="utf-8") as handle:
        assert sum(1 for _ in handle) == 29_963


@pytest.mark.parametrize(
    ("query_set", "collection", "with_text", "judged"),
    [
        ("dl19", "collection.tsv", 5_698, 9_260),
        ("dl20", "collection.tsv", 5_013, 11_386),
        ("dl21", "collection.v2.tsv", 4_812, 10_828),
    ],
)
def test_judged_pairs_with_text(converted: Path, query_set: str, collection: str, with_text: int, judged: int) -> None:
    texts = read_collection(converted / collection)
    qrels = read_qrels(converted / f"qrels.{query_set}.txt")
    pairs = [(qid, pid) for qid, grades in qrels.items() for pid in grades]
    assert len(pairs) == judged
    assert sum(pid in texts for _, pid in pairs) == with_text


def test_every_dl19_passage_judged_relevant_has_text(converted: Path) -> None:
    texts = read_collection(converted / "collection.tsv")
    qrels = read_qrels(converted / "qrels.dl19.txt")
    relevant = [pid for grades in qrels.values() for pid, grade in grades.items() if grade >= 1]
    assert len(relevant) == 4_102
    assert all(pid in texts and texts[pid] for pid in relevant)


def test_v2_ids_are_v2_and_v1_ids_numeric(converted: Path) -> None:
    assert all(pid.isdigit() for pid in read_collection(converted / "collection.tsv"))
    assert all(pid.startswith("msmarco_passage_") for pid in read_collection(converted / "collection.v2.tsv"))


@pytest.mark.parametrize(("query_set", "count"), [("dl19", 43), ("dl20", 54), ("dl21", 53), ("dev-small", 6_980)])
def test_queries_are_the_judged_ones(converted: Path, query_set: str, count: int) -> None:
    queries = read_queries(converted / f"queries.{query_set}.tsv")
    qrels = read_qrels(converted / f"qrels.{query_set}.txt")
    assert len(queries) == count
    assert set(queries) == set(qrels)
    assert all(text.strip() for text in queries.values())


@pytest.mark.parametrize("query_set", sorted(convert.QUERY_SETS))
def test_qrels_keep_every_official_judgment(converted: Path, raw: Path, query_set: str) -> None:
    original = read_qrels(raw / convert.QUERY_SETS[query_set][1])
    assert read_qrels(converted / f"qrels.{query_set}.txt") == original


def test_query_text_is_the_normalised_topic(converted: Path, raw: Path) -> None:
    topics = read_queries(raw / convert.QUERY_SETS["dl19"][0])
    queries = read_queries(converted / "queries.dl19.tsv")
    assert queries == {qid: convert.normalise_text(topics[qid]) for qid in queries}


@pytest.mark.parametrize("collection", ["collection.tsv", "collection.v2.tsv"])
def test_no_mojibake_left(converted: Path, collection: str) -> None:
    text = (converted / collection).read_text(encoding="utf-8")
    assert "â\x80" not in text
    assert "\r" not in text


@pytest.mark.parametrize(("query_set", "collection"), [("dl19", "collection.tsv"), ("dl21", "collection.v2.tsv")])
def test_rank_llm_text_is_normalised_bm25_first(converted: Path, raw: Path, query_set: str, collection: str) -> None:
    """Passages the NOS-IRv3 copy lacks take the text of the first retriever (BM25) that has them, normalised."""
    hits = json.loads((raw / convert.RANK_LLM / "BM25" / f"retrieve_results_{query_set}_top100.json").read_text())
    nos = read_collection(raw / convert.NOS_COLLECTION) if collection == "collection.tsv" else {}
    contents = {str(hit["docid"]): hit["content"] for entry in hits for hit in entry["hits"]}
    contents = {pid: content for pid, content in contents.items() if pid not in nos}
    assert len(contents) > 1000
    if query_set == "dl19":
        assert sum("â\x80" in content for content in contents.values()) > 100  # raw v1 text does need repair
    texts = read_collection(converted / collection)
    assert all(texts[pid] == convert.normalise_text(content) for pid, content in contents.items())


def test_nos_copy_is_preferred_for_v1(converted: Path, raw: Path) -> None:
    nos = read_collection(raw / convert.NOS_COLLECTION)
    texts = read_collection(converted / "collection.tsv")
    assert len(nos) == 4_103  # the 4,102 judged-relevant DL19 passages and pid 0
    assert all(texts[pid] == convert.normalise_text(text) for pid, text in nos.items())


def test_normalise_text() -> None:
    # ftfy repairs the mojibake of ’ (and, by its default, straightens the quote); whitespace collapses
    assert convert.normalise_text("Itâ\x80\x99s  a\ttab\nand\r\nlines ") == "It's a tab and lines"
    assert convert.normalise_text("caf\u00c3\u00a9") == "café"
    assert convert.normalise_text("plain") == "plain"


def test_one_run_per_set_and_retriever(converted: Path) -> None:
    expected = expected_run_files()
    assert len(expected) == 15  # 14 rank_llm_data files and the TILDE run
    assert {path.name for path in (converted / "runs").iterdir()} == expected


@pytest.mark.parametrize("run_file", sorted(expected_run_files() - {TILDE_RUN_FILE}))
def test_runs_have_depth_at_most_100_and_text(converted: Path, run_file: str) -> None:
    query_set, system = run_file.removesuffix(".trec").split("__")
    run = read_run(converted / "runs" / run_file)
    assert set(run) == set(read_queries(converted / f"queries.{query_set}.tsv"))
    assert max(len(ranked) for ranked in run.values()) == convert.RUN_DEPTH == 100
    collection = "collection.v2.tsv" if convert.QUERY_SETS[query_set][2] == "v2" else "collection.tsv"
    texts = read_collection(converted / collection)
    assert all(pid in texts for ranked in run.values() for pid in ranked)
    with open(converted / "runs" / run_file, encoding="utf-8") as handle:
        assert {line.split()[5] for line in handle} == {system}


def test_repllama_run_is_cut_to_100(converted: Path, raw: Path) -> None:
    hits = json.loads((raw / convert.RANK_LLM / "REP_LLAMA" / "retrieve_results_dl19_top100.json").read_text())
    assert max(len(entry["hits"]) for entry in hits) > 100  # the raw file is deeper
    run = read_run(converted / "runs" / "dl19__repllama.trec")
    assert max(len(ranked) for ranked in run.values()) == 100


def test_tilde_run_is_the_papers_top_1000(converted: Path) -> None:
    run = read_run(converted / "runs" / TILDE_RUN_FILE)
    assert len(run) == 43
    assert {len(ranked) for ranked in run.values()} == {1000}


def test_manifest_lists_every_output_with_its_hash(converted: Path) -> None:
    manifest = json.loads((converted / "manifest.json").read_text(encoding="utf-8"))
    assert set(manifest) == output_files(converted) - {"manifest.json"}
    assert all(sha256_of(converted / name) == digest for name, digest in manifest.items())


# --- determinism and atomicity -----------------------------------------------------------------


def test_conversion_is_deterministic(raw: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two conversions of one raw folder (one in a subprocess with another hash seed) are byte-identical.

    The in-process one also records that every output goes through ``atomic_write``.
    """
    code = "import sys; from lib.data.convert import convert; convert(sys.argv[1], sys.argv[2])"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(raw), str(tmp_path / "b")],
        cwd=paths.REPO_ROOT,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    written: list[Path] = []
    real_atomic_write = convert.atomic_write

    @contextlib.contextmanager
    def recording_atomic_write(path, *args, **kwargs) -> Iterator:
        written.append(Path(path))
        with real_atomic_write(path, *args, **kwargs) as handle:
            yield handle

    monkeypatch.setattr(convert, "atomic_write", recording_atomic_write)
    try:
        manifest_a = convert.convert(raw, tmp_path / "a")
    finally:
        _, stderr = child.communicate(timeout=300)
    assert child.returncode == 0, stderr

    manifest_b = json.loads((tmp_path / "b" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest_a == manifest_b
    assert (tmp_path / "a" / "manifest.json").read_bytes() == (tmp_path / "b" / "manifest.json").read_bytes()
    assert output_files(tmp_path / "a") == output_files(tmp_path / "b") == set(manifest_a) | {"manifest.json"}
    for name, digest in manifest_a.items():
        assert sha256_of(tmp_path / "a" / name) == sha256_of(tmp_path / "b" / name) == digest, name
    assert sorted(str(path.relative_to(tmp_path / "a")) for path in written) == sorted(manifest_a)


class _DiskFull:
    """A file handle that writes a few lines and then fails as a full disk would."""

    def __init__(self, handle, lines_before_failure: int) -> None:
        self.handle = handle
        self.left = lines_before_failure

    def write(self, text: str) -> int:
        if self.left == 0:
            raise OSError(28, "No space left on device")
        self.left -= 1
        return self.handle.write(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)


def test_conversion_failure_leaves_no_half_written_output(
    raw: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "converted"
    victim = out / "runs" / "dl19__bm25.trec"  # the first output convert writes
    victim.parent.mkdir(parents=True)
    victim.write_text("old content\n", encoding="utf-8")
    real_atomic_write = convert.atomic_write
    failed = []

    @contextlib.contextmanager
    def failing_atomic_write(path, *args, **kwargs) -> Iterator:
        with real_atomic_write(path, *args, **kwargs) as handle:
            if Path(path) == victim:
                failed.append(path)
                yield _DiskFull(handle, lines_before_failure=50)
            else:
                yield handle

    monkeypatch.setattr(convert, "atomic_write", failing_atomic_write)
    with pytest.raises(OSError, match="No space left"):
        convert.convert(raw, out)
    assert failed == [victim]
    assert victim.read_text(encoding="utf-8") == "old content\n"
    assert output_files(out) == {"runs/dl19__bm25.trec"}  # no .part file, no manifest
    assert not (out / "manifest.json").exists()


def test_malformed_raw_file_names_file_and_line(tmp_path: Path) -> None:
    topics = tmp_path / "topics.txt"
    topics.write_text("1\tfirst\n2 no tab\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^{topics}:2: "):
        convert._read_topics(topics)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 a 1\n1 0 b 1\n1 0 c\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^{qrels}:3: "):
        convert._read_raw_qrels(qrels)


# --- prepare(): fetch, then convert unless a verified conversion is there ----------------------


@pytest.fixture
def converted_copy(converted: Path, tmp_path: Path) -> Path:
    import shutil

    return Path(shutil.copytree(converted, tmp_path / "converted"))


def test_prepare_reuses_a_verified_conversion(converted_copy: Path, raw: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    monkeypatch.setattr(convert, "convert", lambda *args: calls.append(args))
    assert convert.prepare(raw, converted_copy) == converted_copy
    assert calls == []


@pytest.mark.parametrize("damage", ["changed", "removed", "no-manifest"])
def test_prepare_converts_again_when_an_output_is_damaged(
    converted_copy: Path, raw: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    target = converted_copy / "qrels.dl19.txt"
    if damage == "changed":
        target.write_bytes(target.read_bytes().replace(b" 3\n", b" 2\n", 1))
    elif damage == "removed":
        target.unlink()
    else:
        (converted_copy / "manifest.json").unlink()
    calls = []
    monkeypatch.setattr(convert, "convert", lambda *args: calls.append(args))
    assert convert.prepare(raw, converted_copy) == converted_copy
    assert calls == [(raw, converted_copy)]
