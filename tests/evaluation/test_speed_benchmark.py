"""The speed benchmark on a slice of the real data: every row is complete, positive and finite."""

from __future__ import annotations

import math

import pytest
import torch

from lib import data
from lib.core.profiles import SpeedSettings
from lib.evaluation.speed_benchmark import run_benchmark

TINY = SpeedSettings(
    probe_documents=2, min_documents=2, max_documents=8, target_seconds=0.01, repetitions=1, warmup=0,
    latency_counts=(3, 150), max_latency_seconds=30.0,
)  # fmt: skip


@pytest.fixture(scope="module")
def slice_of_dl19(converted) -> tuple[dict, dict, dict]:
    run = data.load_run("dl19", "bm25")
    first_stage = {qid: run[qid] for qid in list(run)[:2]}
    return first_stage, data.load_queries("dl19"), data.load_collection("v1")


def test_rows_are_complete_positive_and_finite(slice_of_dl19) -> None:
    first_stage, queries, texts = slice_of_dl19
    result = run_benchmark(["knrm", "bert-cat-book"], first_stage, queries, texts, torch.device("cpu"),
                           settings=TINY, progress=False)  # fmt: skip
    assert set(result) == {"environment", "device", "settings", "results"}
    assert result["environment"]["torch"] == torch.__version__ and "CPU" in result["device"]
    rows = result["results"]
    assert [row["model"] for row in rows] == ["knrm", "bert-cat-book"]
    for row in rows:
        assert row["docs_per_ms"] > 0 and math.isfinite(row["docs_per_ms"])
        assert 2 <= row["documents"] <= 8
        assert row["latency_3_ms"] > 0 and row["latency_3_measured"] and not row["latency_3_repeated"]
        assert row["latency_150_repeated"], "a query has 100 candidates: 150 repeats them"
    assert rows[0]["batch_size"] == 256 and rows[1]["batch_size"] == 32


def test_too_slow_latencies_are_estimated_and_batch_sizes_apply(slice_of_dl19) -> None:
    first_stage, queries, texts = slice_of_dl19
    settings = SpeedSettings(**{**TINY.__dict__, "max_latency_seconds": 0.0})
    result = run_benchmark(["tk1"], first_stage, queries, texts, torch.device("cpu"), settings=settings,
                           batch_sizes=[4, 8], progress=False)  # fmt: skip
    rows = result["results"]
    assert [row["batch_size"] for row in rows] == [4, 8]
    for row in rows:
        assert not row["latency_150_measured"]
        assert row["latency_150_ms"] == pytest.approx(150 / row["docs_per_ms"])


def test_bad_settings_and_names_are_refused(slice_of_dl19) -> None:
    with pytest.raises(ValueError, match="min_documents"):
        SpeedSettings(min_documents=10, max_documents=5)
    with pytest.raises(ValueError, match="batch_sizes"):
        SpeedSettings(batch_sizes={"word": 0, "wordpiece": 1})
    first_stage, queries, texts = slice_of_dl19
    with pytest.raises(ValueError, match="unknown architecture"):
        run_benchmark(["bert-huge"], first_stage, queries, texts, torch.device("cpu"), progress=False)
