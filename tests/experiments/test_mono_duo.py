"""Chapter 8's mono-duo experiment (``lib.experiments.mono_duo``): its table and the starting weights' digest."""

from __future__ import annotations

import pytest
import torch

from lib.core.types import JudgedSet
from lib.experiments.mono_duo import RUN_NAME, MonoDuo, mono_duo_table, weights_digest


def test_the_table_tests_mono_duo_against_mono_per_year() -> None:
    qrels = {f"q{i}": {"good": 2, "bad": 0} for i in range(6)}
    mono = {qid: {"bad": 2.0, "good": 1.0} for qid in qrels}  # mono has every query wrong
    duo = {qid: ({"good": 2.0, "bad": 1.0} if qid != "q0" else {"bad": 2.0, "good": 1.0}) for qid in qrels}
    test = JudgedSet("dl19", {qid: "text" for qid in qrels}, qrels, mono)
    result = MonoDuo(None, {"dl19": {"mono": mono, RUN_NAME: duo}}, {"dl19": {"q0": 0.2, "q1": 0.4, "q2": 0.3}}, 3)
    row = mono_duo_table(result, {"dl19": test}).iloc[0]
    assert row["year"] == "DL19" and row["mono-duo nDCG@10"] > row["mono nDCG@10"] and row["delta"] > 0
    assert row["significant"] and row["p"] < 0.05 and row["queries"] == 6
    assert row["duo passes / query"] == 6 and row["duo ms / query"] == pytest.approx(300.0)


def test_the_digest_changes_with_any_weight() -> None:
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    before = weights_digest(model)
    assert weights_digest(model) == before
    with torch.no_grad():
        model.bias[0] += 1e-3
    assert weights_digest(model) != before
