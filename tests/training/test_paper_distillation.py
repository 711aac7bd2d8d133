"""The paper-scale distillation entry point on tiny files in the exported MS MARCO formats (CPU).

A word model and BERT-cat train through the command line; a run killed (SIGKILL) after its first
checkpoints resumes, when the same command is started again, to exactly the weights of a run that was
never interrupted (tolerance 0: on one CPU thread every step is bit-for-bit reproducible).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from lib.data import DataFormatError, read_run
from lib.models.bert_cat import HEAD_LR, PAPER_BERT_LR
from lib.representations.bert import WordPieceTokenizer
from lib.representations.text import Vocabulary
from lib.representations.word_vectors import load_matrix
from lib.training import paper_distillation
from lib.training.loop import CHECKPOINT_NAME
from lib.training.pairwise import BEST_NAME
from tests.tilde_helpers import tiny_bert

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
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
    (folder / "queries.dl19.tsv").write_text("31\tdog and cat\n32\tzebra stripes\n")
    (folder / "queries.dl20.tsv").write_text("41\twhy is the dog\n")
    (folder / "qrels.dev-small.txt").write_text("21 0 p1 1\n22 0 p4 1\n")
    run = [f"{q} Q0 {p} {r} {10 - r} bm25\n" for q in ("21", "22") for r, p in enumerate(PASSAGES, start=1)]
    (folder / "runs" / "dev-small__bm25.trec").write_text("".join(run))
    for name, qids in (("dl19", ("31", "32")), ("dl20", ("41",))):  # unscored, as the export's official runs
        run = [f"{q} Q0 {p} {r} 0.0 official\n" for q in qids for r, p in enumerate(reversed(PASSAGES), start=1)]
        (folder / "runs" / f"{name}__bm25.trec").write_text("".join(run))
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
    assert record["dropped_test_queries"] == 0
    assert record["best_step"] in (2, 4) and 0.0 <= record["best validation MRR@10"] <= 1.0
    assert (out / "checkpoints" / "best.pt").is_file() and (out / "checkpoints" / "history.csv").is_file()
    assert {"cat", "dog", "zebra", "the"} <= set(Vocabulary.load(out / "vocabulary.txt").terms)
    assert record["runs"] == ["runs/dl19__tk2.trec", "runs/dl20__tk2.trec"]
    for path, qids in zip(record["runs"], (["31", "32"], ["41"]), strict=True):
        run = read_run(out / path)
        assert sorted(run) == qids and all(set(run[qid]) == set(PASSAGES) for qid in run), "every candidate re-ranked"
        assert len({score for scores in run.values() for score in scores.values()}) > 1, "the model's scores"
    again = paper_distillation.run(paper_distillation.parse_arguments(_arguments(data, teacher, out)))
    assert again == record, "the finished run is reused, not trained again"


@pytest.mark.usefixtures("one_torch_thread")
def test_no_test_year_query_trains_or_validates(tmp_path: Path) -> None:
    data, teacher = _export(tmp_path / "data"), _teacher(tmp_path / "teacher.tsv")
    (data / "queries.dl20.tsv").write_text("12\tanother text, same id\n41\twhy is the dog\n")
    record = paper_distillation.run(paper_distillation.parse_arguments(_arguments(data, teacher, tmp_path / "a")))
    assert record["dropped_test_queries"] == 1 and record["triples"] == 2, "query 12's two triples are dropped"
    (data / "queries.dl20.tsv").write_text("41\tThe Cat?\n")  # training query 11's text
    record = paper_distillation.run(paper_distillation.parse_arguments(_arguments(data, teacher, tmp_path / "b")))
    assert record["dropped_test_queries"] == 1 and record["triples"] == 2, "query 11's two triples are dropped"
    (data / "queries.dl19.tsv").write_text("31\tCAT\n")  # dev-small query 21's text
    with pytest.raises(ValueError, match="1 training/validation queries are dl19 test queries"):
        paper_distillation.run(paper_distillation.parse_arguments(_arguments(data, teacher, tmp_path / "c")))
    (data / "queries.dl19.tsv").unlink()
    with pytest.raises(FileNotFoundError, match=r"queries\.dl19\.tsv: the dl19 test queries are needed"):
        paper_distillation.run(paper_distillation.parse_arguments(_arguments(data, teacher, tmp_path / "d")))


def test_bad_input_names_the_file_and_line_or_the_parameter(tmp_path: Path) -> None:
    data = _export(tmp_path / "data")
    bad = _teacher(tmp_path / "teacher.tsv", extra="nan\t1.0\t11\tp1\tp2\n")
    with pytest.raises(DataFormatError, match=r"teacher\.tsv:5: pos_score 'nan' is not finite"):
        paper_distillation.run(paper_distillation.parse_arguments(_arguments(data, bad, tmp_path / "out")))
    good = _teacher(tmp_path / "good.tsv")
    (data / "queries.dl20.tsv").write_text("42\tanother query\n")
    with pytest.raises(ValueError, match=r"dl20__bm25\.trec: query '41' has no text in .*queries\.dl20\.tsv"):
        paper_distillation.run(paper_distillation.parse_arguments(_arguments(data, good, tmp_path / "out")))
    with pytest.raises(ValueError, match="parameter '--model'.*'bi-encoder' is used zero-shot"):
        paper_distillation.run(
            paper_distillation.parse_arguments(_arguments(data, good, tmp_path / "out", "--model", "bi-encoder"))
        )


@pytest.fixture(scope="module")
def bert_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random BERT saved with bert-base-uncased's ``vocab.txt``, as a downloaded BERT folder is."""
    folder = tmp_path_factory.mktemp("bert")
    tiny_bert().save_pretrained(folder)
    WordPieceTokenizer.from_vocab().save_files(folder)
    return folder


@pytest.mark.usefixtures("one_torch_thread")
def test_bert_cat_trains_from_a_bert_folder_with_its_wordpieces_and_the_papers_bert_rate(
    tmp_path: Path, bert_folder: Path
) -> None:
    data, teacher, out = _export(tmp_path / "data"), _teacher(tmp_path / "teacher.tsv"), tmp_path / "out"
    arguments = _arguments(data, teacher, out, "--model", "bert-cat", "--bert", str(bert_folder))
    record = paper_distillation.run(paper_distillation.parse_arguments(arguments))
    assert record["model"] == "bert-cat" and record["start"] == str(bert_folder) and record["steps"] == 4
    assert not (out / "vocabulary.txt").exists(), "a WordPiece model needs no word vocabulary"
    saved = torch.load(out / "checkpoints" / CHECKPOINT_NAME, map_location="cpu", weights_only=True)
    rates = {group["name"]: group["lr"] for group in saved["optimizer"]["param_groups"]}
    assert rates == {"bert": PAPER_BERT_LR, "head": HEAD_LR}
    assert saved["model"]["bert.embeddings.word_embeddings.weight"].shape[0] == 30522  # bert-base-uncased's pieces
    start = tiny_bert().bert.embeddings.word_embeddings.weight
    assert not torch.equal(saved["model"]["bert.embeddings.word_embeddings.weight"], start), "BERT was fine-tuned"


@pytest.mark.usefixtures("one_torch_thread")
def test_a_pieces_model_starts_from_piece_vectors_distilled_from_the_bert_folder(
    tmp_path: Path, bert_folder: Path
) -> None:
    data, teacher, out = _export(tmp_path / "data"), _teacher(tmp_path / "teacher.tsv"), tmp_path / "out"
    arguments = _arguments(data, teacher, out, "--model", "tk1-pieces", "--bert", str(bert_folder), "--piece-dim", "20")
    record = paper_distillation.run(paper_distillation.parse_arguments(arguments))
    assert record["start"] == f"piece vectors of {bert_folder}" and record["steps"] == 4
    cached = load_matrix(out / "piece-vectors-20d.npy")
    saved = torch.load(out / "checkpoints" / CHECKPOINT_NAME, map_location="cpu", weights_only=True)
    assert saved["model"]["embedding.weight"].shape == cached.shape == (30522, 20)
    assert not torch.equal(saved["model"]["embedding.weight"], cached), "the piece vectors were fine-tuned"
    assert not (out / "vocabulary.txt").exists(), "a pieces model needs no word vocabulary"


# --- killed and started again ------------------------------------------------------------------------

#: Long enough that the run is still training when its first checkpoints appear; no early stopping.
KILL_ARGUMENTS = ("--steps", "400", "--validate-every", "20", "--patience", "1000")


def _command_line(data: Path, teacher: Path, out: Path) -> list[str]:
    arguments = _arguments(data, teacher, out, *KILL_ARGUMENTS)
    return [sys.executable, "-m", "lib.training.paper_distillation", *arguments]


def _environment() -> dict[str, str]:
    """One thread, as the in-process run has (bit-identical arithmetic), and no torchrun variables."""
    environment = {key: value for key, value in os.environ.items() if key not in ("WORLD_SIZE", "RANK")}
    return {**environment, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}


def _kill_after_a_checkpoint(command: list[str], checkpoint: Path, log: Path, timeout: float = 120.0) -> int:
    """Start ``command`` (its stderr into ``log``), SIGKILL it as soon as ``checkpoint`` holds a step > 0; that step."""
    with log.open("wb") as stderr:
        process = subprocess.Popen(command, cwd=ROOT, env=_environment(), stdout=subprocess.DEVNULL, stderr=stderr)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and process.poll() is None:
            if checkpoint.is_file():  # written atomically (temp file + rename): always a whole checkpoint
                step = torch.load(checkpoint, map_location="cpu", weights_only=True)["step"]
                if step > 0:
                    process.send_signal(signal.SIGKILL)
                    process.wait()
                    return step
            time.sleep(0.02)
        raise AssertionError(f"no checkpoint after step 0 before the run ended: {log.read_text()[-2000:]}")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.usefixtures("one_torch_thread")
def test_a_killed_run_started_again_resumes_to_the_weights_of_an_uninterrupted_run(tmp_path: Path) -> None:
    data, teacher = _export(tmp_path / "data"), _teacher(tmp_path / "teacher.tsv")
    cut = tmp_path / "cut"
    checkpoint = cut / "checkpoints" / CHECKPOINT_NAME
    killed_at = _kill_after_a_checkpoint(_command_line(data, teacher, cut), checkpoint, tmp_path / "killed.log")
    assert 0 < killed_at < 400 and not (cut / "result.json").exists()
    assert torch.load(checkpoint, map_location="cpu", weights_only=True)["step"] >= killed_at
    again = subprocess.run(
        _command_line(data, teacher, cut), cwd=ROOT, env=_environment(), capture_output=True, text=True
    )
    assert again.returncode == 0, again.stderr[-2000:]
    first_bar = re.search(r"train:\s+\d+%\|[^|]*\|\s*(\d+)/400", again.stderr)
    assert first_bar is not None and int(first_bar.group(1)) >= killed_at, "the second run resumed, not restarted"

    whole = tmp_path / "whole"
    record = paper_distillation.run(
        paper_distillation.parse_arguments(_arguments(data, teacher, whole, *KILL_ARGUMENTS))
    )
    assert json.loads(again.stdout) == record == json.loads((cut / "result.json").read_text())
    resumed, uninterrupted = (
        torch.load(folder / "checkpoints" / CHECKPOINT_NAME, weights_only=True) for folder in (cut, whole)
    )
    assert resumed["step"] == uninterrupted["step"] == 400
    assert resumed["losses"] == uninterrupted["losses"]
    for name, tensor in uninterrupted["model"].items():
        assert torch.equal(resumed["model"][name], tensor), name  # tolerance 0
    for path in record["runs"]:
        assert (cut / path).read_text() == (whole / path).read_text(), path
    best = torch.load(whole / "checkpoints" / BEST_NAME, weights_only=True)
    for name, tensor in torch.load(cut / "checkpoints" / BEST_NAME, weights_only=True).items():
        assert torch.equal(tensor, best[name]), name


@pytest.mark.usefixtures("one_torch_thread")
def test_the_published_teacher_and_glove_42b_are_the_defaults_fetched_and_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No ``--teacher``: the paper registry's scores, md5-checked; ``glove-42b-300d`` records its file's sha256."""
    from lib.data import registry

    published = tmp_path / "mirror" / registry.TEACHER_SCORES
    published.parent.mkdir(parents=True)
    _teacher(published)
    entry = registry.RegistryEntry(registry.TEACHER_SCORES, registry.file_digest(published, "md5"), "https://x", "md5")
    monkeypatch.setattr(registry, "PAPER_REGISTRY", {registry.TEACHER_SCORES: entry})
    monkeypatch.setenv(registry.MIRROR_VARIABLE, str(tmp_path / "mirror"))
    monkeypatch.setenv("TKBOOK_DATA", str(tmp_path / "data-root"))
    glove = tmp_path / "glove.42B.300d.txt"
    words = ["the", "cat", "dog", "zebra", "and", "a"]
    rows = [" ".join([word, *(f"{(i + j) / 10:.1f}" for j in range(300))]) for i, word in enumerate(words)]
    glove.write_text("\n".join(rows) + "\n")
    monkeypatch.setenv("TKBOOK_GLOVE_42B", str(glove))
    data, out = _export(tmp_path / "data"), tmp_path / "out"
    arguments = [a for a in _arguments(data, published, out) if a not in ("--teacher", str(published))]
    arguments[arguments.index("--vectors") + 1] = "glove-42b-300d"
    record = paper_distillation.run(paper_distillation.parse_arguments(arguments))
    fetched = tmp_path / "data-root" / "paper" / registry.TEACHER_SCORES
    assert fetched.read_bytes() == published.read_bytes(), "the published scores were fetched into <data>/paper"
    assert record["triples"] == 4
    assert record["start"].startswith("glove-42b-300d") and registry.sha256_of(glove) in record["start"]
    published.write_text(published.read_text() + "1.0\t0.0\t11\tp1\tp2\n")
    fetched.unlink()
    with pytest.raises(registry.DataFetchError, match="md5 mismatch"):
        paper_distillation.run(paper_distillation.parse_arguments([*arguments, "--out", str(tmp_path / "out2")]))
