"""Chapter 3's cost table of the book's trained models, and the costs the budgets are drawn from."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from lib.core.profiles import get_profile
from lib.experiments import regime_costs
from lib.models.bfloat16_encoders import BFloat16Encoders
from lib.reranking.product_quantisation import fit_quantiser
from tests.experiments.test_artifacts import _save_trained, artifacts_root  # noqa: F401 — the fixture

TABLE = pd.DataFrame(
    [
        {"model": "tk2", "regime": "whole", "dtype": "—", "ms_10": 12.0, "ms_100": 102.0, "ms_1000": 1000.0},
        {"model": "tk2", "regime": "stored", "dtype": "float16", "ms_10": 3.0, "ms_100": 12.0, "ms_1000": 100.0},
        {"model": "tk2", "regime": "stored", "dtype": "int8", "ms_10": 4.0, "ms_100": 13.0, "ms_1000": 90.0},
        {"model": "bert-cat", "regime": "whole", "dtype": "—", "ms_10": 100.0, "ms_100": 1000.0, "ms_1000": 1e4},
    ]
)


def test_each_regime_gets_a_fixed_cost_and_a_speed_and_stored_the_cheapest_index_or_whole() -> None:
    costs = regime_costs.regime_costs(TABLE, [10, 100, 1000])
    assert set(costs) == {"whole", "stored"}
    whole, stored = costs["whole"]["tk2"], costs["stored"]["tk2"]
    assert whole.fixed_ms == pytest.approx(2.0) and whole.docs_per_ms == pytest.approx(1.0) and whole.dtype == "—"
    assert stored.dtype == "int8" and stored.regime == "stored"  # cheaper at 1,000 candidates
    assert stored.fixed_ms == pytest.approx(3.0) and stored.docs_per_ms == pytest.approx(10.0)
    bert = costs["stored"]["bert-cat"]
    assert bert.regime == "whole" and bert == costs["whole"]["bert-cat"]  # no index: it runs whole in both


def test_a_model_timed_stored_only_has_a_stored_cost_and_none_whole() -> None:
    compact = TABLE.assign(model=TABLE["model"].replace({"tk2": "tk-bert6-d32"}))
    costs = regime_costs.regime_costs(compact[compact["regime"] != "whole"].pipe(lambda t: pd.concat([t, TABLE[3:]])),
                                      [10, 100, 1000])  # fmt: skip
    assert "tk-bert6-d32" not in costs["whole"] and costs["stored"]["tk-bert6-d32"].dtype == "int8"
    with pytest.raises(ValueError, match="neither a 'whole' nor a 'stored' row for model 'x'"):
        regime_costs.regime_costs(pd.DataFrame([{"model": "x", "regime": "resident", "ms_10": 1.0, "ms_100": 2.0}]),
                                  [10, 100])  # fmt: skip


def test_the_table_times_a_trained_model_in_both_regimes_and_leaves_no_index(
    artifacts_root: Path,  # noqa: F811 — the fixture
    tmp_path: Path,
    converted,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    saved, _ = _save_trained("smoke", "tk2")
    profile = get_profile("smoke")
    speed = profile.speed.replace(regime_queries=1, regime_counts=(2, 5), regime_max_seconds=60)
    profile = dataclasses.replace(profile, speed=speed)
    folder = tmp_path / "work"
    folder.mkdir()
    table = regime_costs.regime_table(profile, ["tk2"], torch.device("cpu"), folder)
    assert [(row.regime, row.dtype) for row in table.itertuples()] == [
        ("whole", "—"), ("stored", "float16"), ("stored", "int8")
    ]  # fmt: skip
    assert (table["queries"] == 1).all() and (table["ms_5"] > 0).all() and table["measured_5"].all()
    assert list(folder.iterdir()) == []
    vectors = np.random.default_rng(0).normal(size=(300, 8)).astype(np.float32)  # the saved TK-2's width
    quantiser = fit_quantiser(vectors, 4, iterations=2)
    pq = regime_costs.PQVariant("tk2", quantiser, BFloat16Encoders(saved), {}, 0.0, 0, 0, {}, 0)
    with_pq = regime_costs.regime_table(profile, ["tk2"], torch.device("cpu"), folder, [pq])
    assert [(row.model, row.regime, row.dtype) for row in with_pq.itertuples()][2:] == [
        ("tk2", "stored", "int8"), ("tk2-pq", "stored", "pq")
    ]  # fmt: skip
    assert 0 < with_pq["bytes_per_passage"].iloc[3] < with_pq["bytes_per_passage"].iloc[2] and pq.name == "tk2-pq"
    monkeypatch.setattr(regime_costs, "COMPACT_TKS", ("tk2",))  # a compact TK is timed stored only
    stored_only = regime_costs.regime_table(profile, ["tk2"], torch.device("cpu"), folder)
    assert list(stored_only["regime"]) == ["stored", "stored"]
    assert regime_costs.is_compact("tk-bert6-sparse") and regime_costs.sparse_of("tk-bert6") == "tk-bert6-sparse"
    assert not regime_costs.is_compact("tk-bert6") and not regime_costs.is_compact("tk-bert1")


def test_query_time_takes_the_cheapest_index_or_the_whole_model_with_its_bytes() -> None:
    table = TABLE.assign(bytes_per_passage=[0.0, 6000.0, 3100.0, 0.0])
    rows = regime_costs.query_time(table, [10, 100]).set_index(["model", "candidates"])
    assert rows.loc[("tk2", 100), "ms"] == 12.0 and rows.loc[("tk2", 100), "dtype"] == "float16"  # cheaper at 100
    assert rows.loc[("tk2", 10), "mode"] == "passages stored" and rows.loc[("tk2", 10), "bytes_per_passage"] == 6000
    assert rows.loc[("bert-cat", 100), "mode"] == "whole at query time" and rows.loc[("bert-cat", 10), "ms"] == 100


def test_the_pq_model_is_labelled_with_the_clocks_precision_and_the_header_records_the_clock() -> None:
    assert regime_costs.pq_label("TK-BERT-6", "bfloat16") == "TK-BERT-6 (PQ, bf16)"
    assert regime_costs.pq_label("TK-BERT-6", "float32") == "TK-BERT-6 (PQ)"
    header = regime_costs.clock(get_profile("smoke"), torch.device("cpu"))
    assert header["torch"] == torch.__version__ and header["precision"] in ("bfloat16", "float32")
    assert f"median of {get_profile('smoke').speed.regime_repetitions} timed run" in header["rule"]
