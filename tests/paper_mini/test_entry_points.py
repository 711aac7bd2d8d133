"""Both torchrun entry points of the paper's scale with 2 CPU processes on the paper-shaped miniature (issue 43).

Each must train on the export's files (gloo on the CPU), write its result record and its run files, and the
runs must evaluate against the miniature's judgments. all-MiniLM-L6-v2 stands in for bert-base-uncased (``--bert``),
the miniature's MiniLM teacher file for the published one (``--teacher``): the ``paper-mini`` profile's named
substitutions (:data:`lib.core.profiles.PAPER_MINI_SUBSTITUTIONS`).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from lib.core import paths
from lib.core.profiles import MINIATURE_TEACHER
from lib.core.types import ranking_from_run, top_of_run
from lib.data import read_qrels, read_run
from lib.evaluation.comparison import compare
from lib.representations.pretrained import minilm_folder
from tests.paper_mini.conftest import require

MINI = paths.converted_dir("paper-mini")


def _torchrun(module: str, out: Path, *arguments: str) -> dict[str, Any]:
    """``torchrun --standalone --nproc_per_node=2 -m module --data MINI --out out …`` on the CPU; its record."""
    require((MINI / "manifest.json").is_file(), f"the miniature {MINI}")
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m", module,
               "--data", str(MINI), "--out", str(out), "--device", "cpu", *arguments]  # fmt: skip
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(paths.REPO_ROOT)}
    done = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads((out / "result.json").read_text(encoding="utf-8"))
    assert record["processes"] == 2
    return record


def _evaluates(run_file: Path, name: str, depth: int) -> None:
    """``run_file`` re-ranks exactly the official top ``depth`` of every query of ``name`` and evaluates."""
    run, official = read_run(run_file), top_of_run(read_run(MINI / "runs" / f"{name}__bm25.trec"), depth)
    assert set(run) == set(official)
    assert all(sorted(run[qid]) == sorted(ranking_from_run(official[qid])) for qid in run), "the same candidates"
    table = compare({"model": run}, read_qrels(MINI / f"qrels.{name}.txt"), ["nDCG@10", "MRR@10"])
    assert all(0.0 <= value <= 1.0 and not math.isnan(value) for value in table.loc["model"].tolist()), table


def test_paper_distillation_trains_on_two_processes_and_its_test_runs_evaluate(tmp_path: Path) -> None:
    out = tmp_path / "tk2"
    record = _torchrun(
        "lib.training.paper_distillation", out, "--teacher", str(MINI / MINIATURE_TEACHER), "--steps", "4",
        "--validate-every", "2", "--batch-size", "8", "--validation-queries", "8", "--rerank-depth", "20",
        "--test-depth", "100",
    )  # fmt: skip
    teacher_lines = (MINI / MINIATURE_TEACHER).read_text(encoding="utf-8").splitlines()
    assert record["steps"] == 4 and record["triples"] == len(teacher_lines) and record["dropped_test_queries"] == 0
    assert (out / "checkpoints" / "best.pt").is_file() and record["best_step"] in (2, 4)
    assert record["runs"] == ["runs/dl19__tk2.trec", "runs/dl20__tk2.trec"]
    for name, relative in zip(("dl19", "dl20"), record["runs"], strict=True):
        _evaluates(out / relative, name, 100)


def test_paper_tilde_trains_on_two_processes_indexes_and_its_run_evaluates(tmp_path: Path) -> None:
    out = tmp_path / "tilde"
    record = _torchrun(
        "lib.training.paper_tilde", out, "--bert", str(minilm_folder()), "--steps", "2", "--batch-size", "4",
        "--checkpoint-every", "1", "--index-set", "dl19", "--index-depth", "20", "--no-progress",
    )  # fmt: skip
    assert record["steps"] == 2 and record["pairs"] > 0 and record["dropped_test_queries"] == 0
    assert (out / "model").is_dir() and record["indexed_passages"] > 0
    assert record["run"] == "runs/dl19__tilde-ql.trec"
    _evaluates(out / record["run"], "dl19", 20)
