"""Full MS MARCO through ir_datasets (``lib.data.msmarco``), offline: tiny files where ir_datasets caches its own.

The fixture lays out ``IR_DATASETS_HOME/msmarco-passage/`` as ir_datasets leaves it after its
downloads (its cache paths, in its own formats): ir_datasets then reads them as they are, without
checking them against the official MD5s (the fixture's files are not the official ones). The
export runs as the CLI in a fresh process (ir_datasets reads ``IR_DATASETS_HOME`` at import),
with every HTTP(S) request sent to a closed local port so a download attempt fails at once.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from lib.core import paths
from lib.core.paths import REPO_ROOT
from lib.data import (
    book_texts,
    load_qrels,
    load_queries,
    load_run,
    msmarco,
    read_collection,
    read_qrels,
    read_queries,
    read_run,
    read_triples,
)
from lib.data.registry import sha256_of

COLLECTION = {
    "0": "The presence of communication amid scientific minds was equally important.",
    "1": "The Manhattan Project and its atomic bomb helped bring an end to World War II.",
    "2": "Itâ€™s  a   passage with mojibake and runs of spaces.",
    "3": "   ",  # empty after normalisation: left out with a warning
    "4": "Robert Gray was a sea captain.",
    "5": "Kernel pooling counts soft matches.",
}


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def irds_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``IR_DATASETS_HOME`` with the msmarco-passage files that ir_datasets would have cached."""
    home = tmp_path_factory.mktemp("ir_datasets")
    base = home / "msmarco-passage"
    write(base / "irds_version.txt", "v2")  # else ir_datasets deletes collection.tsv as an old version
    write(base / "collection.tsv", "".join(f"{pid}\t{text}\n" for pid, text in COLLECTION.items()))
    write(base / "train/queries.tsv", "121352\tdefine extreme\n634306\twhat does chattel mean\n12\tunjudged query\n")
    write(base / "train/qrels", "634306\t0\t1\t1\n121352\t0\t0\t1\n")
    write(base / "train/small.triples.qidpid.tsv", "634306\t1\t5\n121352\t0\t2\n634306\t1\t4\n")
    (base / "train").mkdir(parents=True, exist_ok=True)
    with gzip.open(base / "train/docpairs.tsv.gz", "wt", encoding="utf-8") as handle:
        handle.write("121352\t0\t4\n634306\t1\t2\n")
    write(base / "dev/small/queries.tsv", "1048585\twhat is paula deen's brother\n2\tandrew kaufman\n")
    write(base / "dev/small/qrels", "1048585\t0\t4\t1\n2\t0\t5\t1\n")
    write(base / "dev/ms.run", "2\t5\n2\t4\n1048585\t1\n")
    dl19_queries = "19335\tanthropological definition\n47923\taxon terminal\n99\tno judgments\n"
    write(base / "trec-dl-2019/queries.tsv", dl19_queries)
    write(base / "trec-dl-2019/qrels", "19335 0 1 3\n19335 0 2 0\n47923 0 4 2\n")
    write(base / "trec-dl-2019/ms.run", "19335\t2\n19335\t0\n19335\t1\n47923\t4\n99\t5\n")
    (base / "trec-dl-2020").mkdir()
    with gzip.open(base / "trec-dl-2020/queries.tsv.gz", "wt", encoding="utf-8") as handle:
        handle.write("23849\tare naturalization records public\n42255\taverage salary\n")
    write(base / "trec-dl-2020/qrels", "42255 0 5 1\n")
    write(base / "trec-dl-2020/ms.run", "42255\t5\n42255\t1\n23849\t0\n")
    return home


def run_cli(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key not in ("IR_DATASETS_HOME",)}
    env.update(
        IR_DATASETS_HOME=str(home),
        HTTP_PROXY="http://127.0.0.1:9",  # nothing listens there: a download attempt fails at once
        HTTPS_PROXY="http://127.0.0.1:9",
        IR_DATASETS_DL_TRIES="1",
        IR_DATASETS_DL_DISABLE_PBAR="true",
    )
    done = subprocess.run(
        [sys.executable, "-m", "lib.data.msmarco", *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def exported(irds_home: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("msmarco")
    return out, run_cli(irds_home, "--out", str(out)).stderr


def test_the_readers_read_every_exported_file(exported: tuple[Path, str]) -> None:
    out, _ = exported
    collection = read_collection(out / "collection.tsv")
    assert list(collection) == ["0", "1", "2", "4", "5"]
    assert collection["2"] == "It's a passage with mojibake and runs of spaces."  # as lib.data.convert normalises
    assert read_queries(out / "queries.train.tsv") == {
        "12": "unjudged query",
        "121352": "define extreme",
        "634306": "what does chattel mean",
    }
    assert read_qrels(out / "qrels.train.txt") == {"121352": {"0": 1}, "634306": {"1": 1}}
    assert read_triples(out / "triples.train.tsv") == [("634306", "1", "5"), ("121352", "0", "2"), ("634306", "1", "4")]
    dev_small = {"2": "andrew kaufman", "1048585": "what is paula deen's brother"}
    assert read_queries(out / "queries.dev-small.tsv") == dev_small
    assert read_qrels(out / "qrels.dev-small.txt") == {"2": {"5": 1}, "1048585": {"4": 1}}
    assert read_run(out / "runs" / "dev-small__bm25.trec") == {"2": {"5": 0.0, "4": 0.0}, "1048585": {"1": 0.0}}


def test_the_paper_profile_reads_the_default_export_through_the_loaders(
    exported: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out, _ = exported
    monkeypatch.setenv("TKBOOK_DATA", str(tmp_path))
    monkeypatch.setenv(paths.CONVERTED_VARIABLE, "converted")  # restored after the test
    assert msmarco.default_out() == tmp_path.resolve() / "msmarco", "the export's default is the paper profile's folder"
    (tmp_path / "msmarco").symlink_to(out, target_is_directory=True)
    paths.use_profile_data("paper")
    assert book_texts() == read_collection(out / "collection.tsv")
    assert load_queries("dev-small") == read_queries(out / "queries.dev-small.tsv")
    assert load_qrels("dl20") == read_qrels(out / "qrels.dl20.txt")
    assert load_run("dl19", "bm25") == read_run(out / "runs" / "dl19__bm25.trec")


def test_trec_dl_keeps_the_judged_queries_and_their_unscored_top_1000(exported: tuple[Path, str]) -> None:
    out, _ = exported
    assert read_queries(out / "queries.dl19.tsv") == {"19335": "anthropological definition", "47923": "axon terminal"}
    assert read_qrels(out / "qrels.dl19.txt") == {"19335": {"1": 3, "2": 0}, "47923": {"4": 2}}
    assert read_run(out / "runs" / "dl19__bm25.trec") == {"19335": {"2": 0.0, "0": 0.0, "1": 0.0}, "47923": {"4": 0.0}}
    assert (out / "runs" / "dl19__bm25.trec").read_text(encoding="utf-8").splitlines()[:3] == [
        "19335 Q0 2 1 0.0 bm25",  # the file's order as the rank: the official candidates are shuffled
        "19335 Q0 0 2 0.0 bm25",
        "19335 Q0 1 3 0.0 bm25",
    ]
    assert read_queries(out / "queries.dl20.tsv") == {"42255": "average salary"}  # the gzipped queries file
    assert read_qrels(out / "qrels.dl20.txt") == {"42255": {"5": 1}}
    assert read_run(out / "runs" / "dl20__bm25.trec") == {"42255": {"5": 0.0, "1": 0.0}}


def test_the_manifest_hashes_every_output_and_empty_texts_are_named(exported: tuple[Path, str]) -> None:
    out, stderr = exported
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and p.name != "manifest.json")
    assert sorted(manifest) == files
    assert all(sha256_of(out / name) == digest for name, digest in manifest.items())
    assert "1 passages with an empty text left out (ids ['3'])" in stderr
    assert not [p for p in out.rglob("*.part")]


def test_a_subset_with_the_full_id_triples_updates_the_manifest(irds_home: Path, tmp_path: Path) -> None:
    run_cli(irds_home, "--out", str(tmp_path), "--subset", "dl20")
    run_cli(irds_home, "--out", str(tmp_path), "--subset", "triples", "--triples", "full")
    assert read_triples(tmp_path / "triples.train.tsv") == [("121352", "0", "4"), ("634306", "1", "2")]
    manifest = json.loads((tmp_path / "manifest.json").read_text(encoding="utf-8"))
    assert sorted(manifest) == ["qrels.dl20.txt", "queries.dl20.tsv", "runs/dl20__bm25.trec", "triples.train.tsv"]


def test_arguments_are_checked_before_ir_datasets_is_loaded(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="parameter 'parts' must name some of"):
        msmarco.export(tmp_path, ["dl21"])
    with pytest.raises(ValueError, match="parameter 'triples' must be one of"):
        msmarco.export(tmp_path, ["triples"], triples="large")


def test_an_ir_datasets_imported_with_another_home_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ir_datasets", types.ModuleType("ir_datasets"))
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "elsewhere"))
    with pytest.raises(RuntimeError, match="set IR_DATASETS_HOME before the first import"):
        msmarco.load_ir_datasets(tmp_path / "home")
    assert msmarco.load_ir_datasets(tmp_path / "elsewhere") is sys.modules["ir_datasets"]
