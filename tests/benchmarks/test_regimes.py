"""``python -m benchmarks.regimes`` writes the two regimes' cost table as JSON (no speed assertions)."""

from __future__ import annotations

import json
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


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        regimes.main(["--models", "bert-huge", "--out", str(tmp_path / "x.json")])
    with pytest.raises(SystemExit):
        regimes.main(["--queries", "0", "--out", str(tmp_path / "x.json")])
