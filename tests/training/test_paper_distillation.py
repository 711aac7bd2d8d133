"""The paper-scale distillation entry point on tiny files in the exported MS MARCO formats (one process, CPU)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lib.data import DataFormatError
from lib.representations.text import Vocabulary
from lib.training import paper_distillation

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PASSAGES = {
    "p1": "the cat and the dog",
    "p2": "the zebra and the cat",
    "p3": "a dog a dog a cat",
    "p4": "the zebra the zebra",
    "p5": "cat dog zebra the a and",
    "p6": "cat dog zebra cat dog zebra",
}


def _export(folder: Path) -> Path:
    """A folder as ``lib.data.msmarco`` writes it, tiny; the words repeat so that the vocabulary keeps them."""
    (folder / "runs").mkdir(parents=True)
    (folder / "collection.tsv").write_text("".join(f"{pid}\t{text}\n" for pid, text in PASSAGES.items()))
    (folder / "queries.train.tsv").write_text("11\tthe cat\n12\tzebra and dog\n")
    (folder / "queries.dev-small.tsv").write_text("21\tcat\n22\tthe zebra\n")
    (folder / "qrels.dev-small.txt").write_text("21 0 p1 1\n22 0 p4 1\n")
    run = [f"{q} Q0 {p} {r} {10 - r} bm25\n" for q in ("21", "22") for r, p in enumerate(PASSAGES, start=1)]
    (folder / "runs" / "dev-small__bm25.trec").write_text("".join(run))
    return folder


def _teacher(path: Path, extra: str = "") -> Path:
    lines = ["9.5\t1.0\t11\tp1\tp4", "8.0\t2.5\t11\tp2\tp4", "7.0\t-1.0\t12\tp4\tp3", "6.0\t0.5\t12\tp5\tp1"]
    path.write_text("\n".join(lines) + "\n" + extra)
    return path


def _arguments(data: Path, teacher: Path, out: Path, *extra: str) -> list[str]:
    vectors = str(FIXTURES / "glove.tiny.5d.txt")
    return ["--data", str(data), "--teacher", str(teacher), "--out", str(out), "--vectors", vectors,
            "--steps", "4", "--validate-every", "2", "--batch-size", "2", "--validation-queries", "2",
            "--device", "cpu", *extra]  # fmt: skip


@pytest.mark.usefixtures("one_torch_thread")
def test_a_short_run_trains_records_its_result_and_a_second_call_reuses_it(tmp_path: Path, capsys) -> None:
    data, teacher, out = _export(tmp_path / "data"), _teacher(tmp_path / "teacher.tsv"), tmp_path / "out"
    paper_distillation.main(_arguments(data, teacher, out))
    printed = json.loads(capsys.readouterr().out)
    record = json.loads((out / "result.json").read_text())
    assert printed == record
    assert record["model"] == "tk2" and record["triples"] == 4 and record["steps"] == 4 and record["processes"] == 1
    assert record["best_step"] in (2, 4) and 0.0 <= record["best validation MRR@10"] <= 1.0
    assert (out / "checkpoints" / "best.pt").is_file() and (out / "checkpoints" / "history.csv").is_file()
    assert {"cat", "dog", "zebra", "the"} <= set(Vocabulary.load(out / "vocabulary.txt").terms)
    again = paper_distillation.run(paper_distillation.parse_arguments(_arguments(data, teacher, out)))
    assert again == record, "the finished run is reused, not trained again"


def test_bad_input_names_the_file_and_line_or_the_parameter(tmp_path: Path) -> None:
    data = _export(tmp_path / "data")
    bad = _teacher(tmp_path / "teacher.tsv", extra="nan\t1.0\t11\tp1\tp2\n")
    with pytest.raises(DataFormatError, match=r"teacher\.tsv:5: pos_score 'nan' is not finite"):
        paper_distillation.run(paper_distillation.parse_arguments(_arguments(data, bad, tmp_path / "out")))
    good = _teacher(tmp_path / "good.tsv")
    with pytest.raises(ValueError, match="parameter '--model'.*'bert-cat'"):
        paper_distillation.run(
            paper_distillation.parse_arguments(_arguments(data, good, tmp_path / "out", "--model", "bert-cat"))
        )
