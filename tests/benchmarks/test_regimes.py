"""``python -m benchmarks.regimes`` writes the two regimes' cost table as JSON (no speed assertions)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import regimes


def test_writes_both_regimes_for_a_storable_model_and_whole_for_bert_cat(converted, tmp_path: Path, capsys) -> None:
    out = tmp_path / "regimes.json"
    code = regimes.main(
        ["--device", "cpu", "--models", "tk2", "bert-cat", "--queries", "1", "--counts", "3", "--repetitions", "1",
         "--index-dir", str(tmp_path), "--out", str(out)]
    )  # fmt: skip
    assert code == 0
    result = json.loads(out.read_text())
    settings = [(row["model"], row["regime"], row["dtype"]) for row in result["rows"]]
    assert settings == [
        ("tk2", "whole", "—"), ("tk2", "stored", "float16"), ("tk2", "stored", "int8"), ("bert-cat", "whole", "—"),
    ]  # fmt: skip
    stored = {row["dtype"]: row for row in result["rows"] if row["regime"] == "stored"}
    assert 0 < stored["int8"]["bytes_per_passage"] < stored["float16"]["bytes_per_passage"]
    assert all(row["ms_3"] > 0 and row["queries"] == 1 for row in result["rows"])
    assert result["settings"]["weights"].startswith("untrained")
    assert list(tmp_path.iterdir()) == [out]  # the temporary indexes are gone
    assert str(out) in capsys.readouterr().out


def test_resident_adds_the_index_held_in_device_memory(converted, tmp_path: Path) -> None:
    out = tmp_path / "regimes.json"
    regimes.main(
        ["--device", "cpu", "--models", "tk2", "--queries", "1", "--counts", "3", "--repetitions", "1",
         "--dtypes", "int8", "--resident", "--index-dir", str(tmp_path), "--out", str(out)]
    )  # fmt: skip
    result = json.loads(out.read_text())
    assert [(row["regime"], row["dtype"]) for row in result["rows"]] == [
        ("whole", "—"), ("stored", "int8"), ("resident", "int8"),
    ]  # fmt: skip
    assert result["settings"]["resident"] is True and result["rows"][2]["ms_3"] > 0


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        regimes.main(["--models", "bert-huge", "--out", str(tmp_path / "x.json")])
    with pytest.raises(SystemExit):
        regimes.main(["--queries", "0", "--out", str(tmp_path / "x.json")])


def test_every_device_benchmark_imports_without_ir_measures() -> None:
    """The lent GPU machine has torch, transformers, numpy, pandas and scipy, not ir_measures
    (benchmarks/device_checks.sh): a benchmark that imports it there fails before timing anything."""
    modules = ", ".join(f"benchmarks.{name}" for name in ("regimes", "throughput", "gpu_check", "long_documents",
                                                           "op_profile", "cold_reads"))  # fmt: skip
    code = f"import sys; sys.modules['ir_measures'] = None; import {modules}"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-2000:]


def test_pq_adds_the_product_quantised_tk_stored_only(converted, tmp_path: Path) -> None:
    out = tmp_path / "regimes.json"
    regimes.main(
        ["--device", "cpu", "--models", "tk-bert6", "--queries", "1", "--counts", "3", "--repetitions", "1",
         "--dtypes", "int8", "--pq", "64", "--index-dir", str(tmp_path), "--out", str(out)]
    )  # fmt: skip
    result = json.loads(out.read_text())
    assert [(row["model"], row["regime"], row["dtype"]) for row in result["rows"]] == [
        ("tk-bert6", "whole", "—"), ("tk-bert6", "stored", "int8"), ("tk-bert6-pq", "stored", "pq"),
    ]  # fmt: skip
    int8, pq = result["rows"][1], result["rows"][2]
    assert 0 < pq["bytes_per_passage"] < int8["bytes_per_passage"] / 5 and pq["ms_3"] > 0
    assert result["settings"]["pq_subspaces"] == 64
    with pytest.raises(SystemExit):
        regimes.main(["--pq", "-1", "--out", str(tmp_path / "x.json")])
