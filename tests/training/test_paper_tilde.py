"""TILDE's paper-scale entry point on tiny files in the exported MS MARCO formats (one process, CPU)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from transformers import BertForMaskedLM

from lib.data import read_run
from lib.models.tilde import Tilde
from lib.representations.bert import WordPieceTokenizer, small_bert_config
from lib.reranking.tilde_index import LOG_PROBS_NAME, load_index
from lib.reranking.tilde_scoring import score_run
from lib.training import paper_tilde
from tests.training.test_paper_distillation import PASSAGES, _export

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _paper_data(folder: Path) -> Path:
    """The distillation test's export plus the training qrels and DL19's BM25 candidates."""
    _export(folder)
    (folder / "qrels.train.txt").write_text("11 0 p1 1\n12 0 p4 1\n12 0 p2 1\n12 0 p9 1\n")  # p9 has no text
    run = [f"{q} Q0 {p} {r} {10 - r} bm25\n" for q, pids in (("31", "p1 p2 p3 p6"), ("32", "p6 p5")) for r, p in
           enumerate(pids.split(), start=1)]  # fmt: skip
    (folder / "runs" / "dl19__bm25.trec").write_text("".join(run))
    return folder


def _bert(folder: Path) -> Path:
    """A tiny random BERT with the LM head, positions for TILDE's 200-piece passages, and bert-base's vocab.txt."""
    config = small_bert_config(vocab_size=30522, layers=1, hidden=32, heads=2, intermediate=64, max_position=256)
    BertForMaskedLM(config).save_pretrained(folder)
    WordPieceTokenizer.from_vocab().save_files(folder)
    return folder


def test_tilde_trains_on_the_training_judgments_and_indexes_the_candidates(tmp_path: Path, capsys) -> None:
    data, out, bert = _paper_data(tmp_path / "data"), tmp_path / "out", _bert(tmp_path / "bert")
    arguments = ["--data", str(data), "--out", str(out), "--bert", str(bert), "--epochs", "2", "--batch-size", "2",
                 "--checkpoint-every", "2", "--index-set", "dl19", "--index-depth", "3", "--device", "cpu",
                 "--no-progress"]  # fmt: skip
    paper_tilde.main(arguments)
    record = json.loads(capsys.readouterr().out)
    assert record == json.loads((out / "result.json").read_text())
    assert record["pairs"] == 3 and record["steps"] == 3 and record["processes"] == 1  # 2 epochs of 3 pairs
    assert record["dropped_test_queries"] == 0
    index = load_index(out / "index-dl19")
    assert sorted(index.pids) == ["p1", "p2", "p3", "p5", "p6"] and record["indexed_passages"] == 5
    model = Tilde.load(out / "model")
    expected = model.log_probs(WordPieceTokenizer.from_vocab(), [PASSAGES[pid] for pid in index.pids], "passage")
    assert np.array_equal(np.asarray(index.log_probs), expected.numpy().astype(np.float16))
    assert record["run"] == "runs/dl19__tilde-ql.trec"
    run = read_run(out / record["run"])
    candidates = {"31": ["p1", "p2", "p3"], "32": ["p6", "p5"]}  # the BM25 top 3
    assert {qid: sorted(scores) for qid, scores in run.items()} == {qid: sorted(p) for qid, p in candidates.items()}
    queries = {"31": "dog and cat", "32": "zebra stripes"}
    expected = score_run(index, WordPieceTokenizer.from_vocab(), queries, run).ql
    assert all(run[qid] == pytest.approx(expected[qid], rel=1e-5) for qid in run), "the run holds the index's TILDE-QL"
    written = (out / "index-dl19" / LOG_PROBS_NAME).stat().st_mtime_ns
    assert paper_tilde.run(paper_tilde.parse_arguments(arguments)) == record
    assert (out / "index-dl19" / LOG_PROBS_NAME).stat().st_mtime_ns == written, "the index is reused, not rebuilt"


def test_a_training_query_of_a_test_year_is_dropped(tmp_path: Path) -> None:
    data, bert = _paper_data(tmp_path / "data"), _bert(tmp_path / "bert")
    (data / "queries.dl19.tsv").write_text("31\tZebra and dog.\n")  # training query 12's text
    arguments = ["--data", str(data), "--out", str(tmp_path / "out"), "--bert", str(bert), "--epochs", "1",
                 "--batch-size", "1", "--device", "cpu", "--no-progress"]  # fmt: skip
    record = paper_tilde.run(paper_tilde.parse_arguments(arguments))
    assert record["dropped_test_queries"] == 1 and record["pairs"] == 1, "only query 11's pair (p1) is left"


def test_no_training_pair_is_an_error_naming_the_folder(tmp_path: Path) -> None:
    data = _paper_data(tmp_path / "data")
    (data / "qrels.train.txt").write_text("11 0 p9 1\n")
    arguments = ["--data", str(data), "--out", str(tmp_path / "out"), "--bert", str(tmp_path / "bert")]
    with pytest.raises(ValueError, match="no training query has a passage judged >= 1 with text"):
        paper_tilde.run(paper_tilde.parse_arguments(arguments))
