"""``python -m benchmarks.op_profile`` writes where a model's scoring time goes (no speed assertions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import op_profile


def test_writes_the_operators_of_a_model_with_its_speed(converted, tmp_path: Path) -> None:
    out = tmp_path / "tk1.txt"
    code = op_profile.main(
        ["--device", "cpu", "--model", "tk1", "--dtype", "float32", "--batch-size", "8", "--documents", "16",
         "--steps", "1", "--rows", "5", "--out", str(out)]
    )  # fmt: skip
    assert code == 0
    text = out.read_text()
    assert text.startswith("tk1 on ") and "2 batches of up to 8 (16 documents)" in text and "docs/ms" in text
    assert "aten::" in text  # the operators' table


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        op_profile.main(["--model", "bert-huge", "--out", str(tmp_path / "x.txt")])
    with pytest.raises(SystemExit):
        op_profile.main(["--steps", "0", "--out", str(tmp_path / "x.txt")])
