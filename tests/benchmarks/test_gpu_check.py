"""``python -m benchmarks.gpu_check`` on the CPU against the CPU: complete rows, and checks that can fail."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks import gpu_check


def test_models_checked_on_real_pairs_write_complete_rows(converted, tmp_path: Path, capsys) -> None:
    out = tmp_path / "check.json"
    code = gpu_check.main(
        ["--device", "cpu", "--models", "tk1", "knrm-pieces", "bert-cat", "--pairs", "8", "--out", str(out)]
    )
    assert code == 0
    result = json.loads(out.read_text())
    assert [row["model"] for row in result["results"]] == ["tk1", "knrm-pieces", "bert-cat"]
    assert result["all_ok"] and result["device"]
    for row in result["results"]:
        assert row["pairs"] == 8 and row["fp32_max_difference"] == 0.0 and row["fp32_spearman"] == pytest.approx(1.0)
        step = row["training_step"]
        assert step["trainable_tensors"] > 0 and not step["without_gradient"] and step["scores_moved"] > 0
    assert "all ok" in capsys.readouterr().out


def test_a_zero_shot_model_is_scored_but_not_trained(converted) -> None:
    pairs = gpu_check.real_pairs(4)
    result = gpu_check.run_checks(["bi-encoder"], pairs, gpu_check.resolve_device("cpu"))
    assert "training_step" not in result["results"][0] and result["results"][0]["ok"]


def test_a_device_that_scores_differently_fails_its_row(converted, monkeypatch: pytest.MonkeyPatch) -> None:
    real_scores = gpu_check.scores
    calls = []

    def drifting(model, inputs, device, amp):  # the second call is the "device" float32 pass
        calls.append(amp)
        values = real_scores(model, inputs, device, amp)
        return values[::-1].copy() if len(calls) == 2 else values

    monkeypatch.setattr(gpu_check, "scores", drifting)
    row = gpu_check.run_checks(["tk1"], gpu_check.real_pairs(8), gpu_check.resolve_device("cpu"))["results"][0]
    assert not row["fp32_ok"] and not row["ok"]


def test_a_model_that_raises_gets_a_failed_row_and_the_others_still_run(
    converted, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    real_check = gpu_check.check_model

    def broken(name, *args, **kwargs):
        if name == "knrm":
            raise RuntimeError("no kernel image is available")
        return real_check(name, *args, **kwargs)

    monkeypatch.setattr(gpu_check, "check_model", broken)
    out = tmp_path / "check.json"
    assert gpu_check.main(["--device", "cpu", "--models", "knrm", "tk1", "--pairs", "4", "--out", str(out)]) == 1
    rows = json.loads(out.read_text())["results"]
    assert rows[0] == {
        "model": "knrm",
        "label": "KNRM",
        "ok": False,
        "error": "RuntimeError: no kernel image is available",
    }
    assert rows[1]["ok"] and np.isfinite(rows[1]["training_step"]["loss"])


def test_bad_pair_counts_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        gpu_check.main(["--pairs", "5", "--out", str(tmp_path / "x.json")])


def test_the_models_outside_the_registry_are_scored_on_documents_and_triples(converted, tmp_path: Path) -> None:
    out = tmp_path / "extra.json"
    models = list(gpu_check.EXTRA_MODELS)
    assert gpu_check.main(["--device", "cpu", "--models", *models, "--pairs", "4", "--out", str(out)]) == 0
    rows = json.loads(out.read_text())["results"]
    assert [row["model"] for row in rows] == models
    assert all(row["ok"] and row["pairs"] == 4 and "training_step" not in row for row in rows)
    wordpiece = gpu_check.WordPieceTokenizer.from_vocab(gpu_check.minilm_folder() / "vocab.txt")
    pairs = gpu_check.real_pairs(4)
    documents = gpu_check.extra_inputs("maxp", wordpiece, pairs)
    assert documents[2].shape[1] > 400  # eight passages joined: a document, not a passage
    assert len(gpu_check.extra_inputs("duo-bert", wordpiece, pairs)) == 6
