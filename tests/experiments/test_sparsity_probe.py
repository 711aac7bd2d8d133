"""TK-Sparse's probe on the smoke profile (``lib.experiments.sparsity_sweep.probe``): every removal target and gate
rate trained on chapter 2's protocol, validated only, its removed shares recorded. It needs chapter 2's smoke
artifacts, so ``make test`` runs it after the smoke build (Makefile, target ``nbval``; ``TKBOOK_REQUIRE_PAGES=1`` makes
their absence a failure there); the unit-test pass before any chapter is executed skips it."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest
import torch

from lib.core import paths
from lib.core.profiles import get_profile
from lib.core.run_context import RunContext
from lib.experiments import sparsity_sweep

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture
def context(tmp_path: Path) -> RunContext:
    """A smoke run context writing under ``tmp_path``, once chapter 2's smoke artifacts exist (module docstring)."""
    protocol = paths.chapter_dir("smoke", "02_training") / "protocol.csv"
    if not protocol.is_file():
        if os.environ.get("TKBOOK_REQUIRE_PAGES") == "1":
            pytest.fail(f"{protocol}: chapter 2's smoke artifacts are missing")
        pytest.skip("chapter 2's smoke artifacts are written later in `make test`")
    return RunContext("setting-probe", get_profile("smoke"), 42, torch.device("cpu"), tmp_path)


def test_the_probe_trains_every_setting_on_validation_and_records_what_the_gates_remove(
    context: RunContext, tmp_path: Path
) -> None:
    table = sparsity_sweep.probe(context, [0.1, 0.5], [1e-4, 1e-3], progress=False)
    assert table[["target", "gate_lr"]].values.tolist() == [[0.1, 1e-4], [0.5, 1e-4], [0.1, 1e-3], [0.5, 1e-3]]
    assert table["removed_at_best"].between(0, 1).all() and table["best_validation"].between(0, 1).all()
    written = pd.read_csv(tmp_path / "sparsity" / "results.csv")
    assert len(written) == 4
    history = pd.read_csv(tmp_path / "sparsity" / "gate-0.001" / "target-0.5" / "history.csv")
    assert {"removed", "eligible", "best"} <= set(history.columns)
    assert table["removed_by_validation"].iloc[-1] == " ".join(
        f"{step}: {removed:.3f}" for step, removed in zip(history["step"], history["removed"], strict=True)
    )
    assert not list(tmp_path.rglob("*.trec")), "the probe scores no test year"


def test_the_probe_takes_the_gate_on_tk_bert_on_its_own_schedule_cut_at_a_step(
    context: RunContext, tmp_path: Path
) -> None:
    table = sparsity_sweep.probe(context, [0.3], progress=False, model_name="tk-bert1-sparse", stop_at=3)
    assert table["steps"].tolist() == [3] and table["target"].tolist() == [0.3]
    assert (tmp_path / "sparsity-tk-bert1-sparse" / "results.csv").is_file()
    with pytest.raises(ValueError, match="must name a TK with TK-Sparse's gate"):
        sparsity_sweep.probe(context, [0.3], model_name="tk-bert1")
