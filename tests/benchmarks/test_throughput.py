"""``python -m benchmarks.throughput`` writes a JSON file of complete rows (no speed assertions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import throughput


def test_writes_json_for_the_chosen_models(converted, tmp_path: Path, capsys) -> None:
    out = tmp_path / "cpu.json"
    code = throughput.main(
        ["--device", "cpu", "--models", "knrm", "tk1", "--queries", "1", "--target-seconds", "0.01",
         "--max-documents", "4", "--repetitions", "1", "--max-latency-seconds", "0", "--out", str(out),
         "--batching", "rank-order", "bucketed"]
    )  # fmt: skip
    assert code == 0
    result = json.loads(out.read_text())
    assert [(row["model"], row["bucketed"]) for row in result["results"]] == [
        ("knrm", False),
        ("tk1", False),
        ("knrm", True),
        ("tk1", True),
    ]
    assert all(0 < row["fraction_of_peak"] for row in result["results"])
    assert result["inputs"] == {"set": "dl19", "first_stage": "bm25", "queries": 1}
    assert all(row["docs_per_ms"] > 0 for row in result["results"])
    assert str(out) in capsys.readouterr().out


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(SystemExit):
        throughput.parse_args(["--models", "bert-huge"])
    with pytest.raises(SystemExit):
        throughput.parse_args(["--repetitions", "0"])
