"""The TK later chapters study (``lib.experiments.tk_choice``): chosen on validation alone, among TKs only."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from lib.experiments import tk_choice


def test_only_trained_tks_count_as_tk() -> None:
    models = ["bert-cat", "tk2", "tk2-pieces", "tk-bert2", "bi-encoder", "knrm", "tk2-sparse"]
    assert [name for name in models if tk_choice.is_tk(name)] == ["tk2", "tk2-pieces", "tk-bert2", "tk2-sparse"]


def test_the_chosen_tk_is_the_best_tk_on_validation_never_another_model() -> None:
    validation = {"bert-cat": 0.9, "tk2": 0.44, "tk2-pieces": 0.49, "tk-bert2": 0.47, "knrm": 0.6, "bi-encoder": 0.7}
    assert tk_choice.choose_tk(validation) == "tk2-pieces"
    assert tk_choice.choose_tk({**validation, "tk2-pieces": math.nan}) == "tk-bert2"
    assert tk_choice.choose_tk({**validation, "tk-bert6-sparse": 0.55}) == "tk2-pieces", "a gated TK is not chosen"
    assert tk_choice.is_sparse("tk-bert6-sparse") and tk_choice.is_sparse("tk2-sparse")
    assert not tk_choice.is_sparse("tk-bert6") and not tk_choice.is_sparse("bert-cat")
    with pytest.raises(ValueError, match="no trained TK among"):
        tk_choice.choose_tk({"bert-cat": 0.9})


def test_the_record_keeps_the_choice_the_metric_and_every_tks_value(tmp_path: Path) -> None:
    path = tmp_path / "chosen_tk.json"
    tk_choice.write_choice(path, "tk2", {"tk2": 0.5, "tk-bert2": 0.25, "bert-cat": 0.6}, "MRR@10")
    assert json.loads(path.read_text()) == {
        "model": "tk2",
        "metric": "MRR@10",
        "validation": {"tk2": 0.5, "tk-bert2": 0.25},
    }
