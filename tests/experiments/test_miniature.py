"""``python -m lib.experiments.miniature``: the miniature and its MiniLM teacher file, on the real converted data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from lib.data import is_unscored, read_collection, read_queries, read_run, read_teacher_scores, read_triples
from lib.data.registry import sha256_of
from lib.experiments.miniature import TEACHER_FILE, main, teacher_scores, write_teacher_file
from lib.models.bi_encoder import BiEncoder
from lib.representations.bert import load_tokenizer
from lib.representations.pretrained import minilm_folder

pytestmark = pytest.mark.usefixtures("converted", "one_torch_thread")


@pytest.fixture(scope="module")
def folder(converted: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("miniature")
    main(["--out", str(out), "--source", str(converted), "--depth", "5", "--triples-per-query", "2"])
    return out


def test_the_teacher_file_scores_every_training_triple(folder: Path) -> None:
    triples, margins = read_teacher_scores(folder / TEACHER_FILE)
    assert triples == read_triples(folder / "triples.train.tsv")
    lines = (folder / TEACHER_FILE).read_text(encoding="utf-8").splitlines()
    scores = [(float(line.split("\t")[0]), float(line.split("\t")[1])) for line in lines]
    assert all(-1.0 <= score <= 1.0 for pair in scores for score in pair)
    assert margins == [pos - neg for pos, neg in scores] and len({round(m, 6) for m in margins}) > 1


def test_the_manifest_holds_the_teacher_file(folder: Path) -> None:
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["miniature"] is True
    assert manifest[TEACHER_FILE] == sha256_of(folder / TEACHER_FILE)
    assert all(sha256_of(folder / name) == digest for name, digest in manifest.items() if name != "miniature")


def test_dev_small_has_an_unscored_bm25_run_over_the_collection(folder: Path) -> None:
    run = read_run(folder / "runs" / "dev-small__bm25.trec")
    collection, queries = read_collection(folder / "collection.tsv"), read_queries(folder / "queries.dev-small.tsv")
    assert run and set(run) <= set(queries) and is_unscored(run)
    assert all(len(ranked) <= 5 and set(ranked) <= set(collection) for ranked in run.values())
    ranks = [int(line.split()[3]) for line in (folder / "runs" / "dev-small__bm25.trec").read_text().splitlines()]
    assert ranks[: len(next(iter(run.values())))] == list(range(1, len(next(iter(run.values()))) + 1))


def test_scores_are_the_teachers_cosines(folder: Path) -> None:
    triples = read_triples(folder / "triples.train.tsv")[:3]
    queries, passages = read_queries(folder / "queries.train.tsv"), read_collection(folder / "collection.tsv")
    model, tokenizer = BiEncoder(minilm_folder()).eval(), load_tokenizer(minilm_folder())
    query_ids, query_mask = tokenizer.encode([queries[qid] for qid, _, _ in triples], 30)
    for column in (1, 2):
        doc_ids, doc_mask = tokenizer.encode([passages[triple[column]] for triple in triples], 200)
        with torch.inference_mode():
            expected = model(query_ids, query_mask, doc_ids, doc_mask).tolist()
        got = [pair[column - 1] for pair in teacher_scores(model, tokenizer, queries, passages, triples)]
        assert got == pytest.approx(expected, abs=1e-5)


def test_write_teacher_file_refuses_unmatched_scores(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="1 triples but 0 pairs"):
        write_teacher_file(tmp_path / TEACHER_FILE, [("1", "2", "3")], [])


@pytest.mark.parametrize(("argument", "named"), [("0", "--passages"), ("5", "'passages' must be between")])
def test_a_bad_argument_is_a_usage_error_naming_it(
    converted: Path, tmp_path: Path, capsys: pytest.CaptureFixture, argument: str, named: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--out", str(tmp_path), "--source", str(converted), "--passages", argument])
    assert exit_info.value.code == 2 and named in capsys.readouterr().err
    assert not (tmp_path / "collection.tsv").exists()
