"""The speed benchmark on a slice of the real data: every row is complete, positive and finite."""

from __future__ import annotations

import math

import pytest
import torch

from lib import data
from lib.core.profiles import SpeedSettings
from lib.evaluation import speed_benchmark
from lib.evaluation.speed_benchmark import (
    BenchmarkInputs,
    ratio_table,
    run_benchmark,
    setting_of,
    speed_ratios,
    timed_setting,
)

TINY = SpeedSettings(
    probe_documents=2, min_documents=2, max_documents=8, target_seconds=0.01, repetitions=1, warmup=0,
    latency_counts=(3, 150), max_latency_seconds=30.0,
)  # fmt: skip


@pytest.fixture(scope="module")
def slice_of_dl19(converted) -> BenchmarkInputs:
    run = data.load_run("dl19", "bm25")
    first_stage = {qid: run[qid] for qid in list(run)[:2]}
    return BenchmarkInputs(first_stage, data.load_queries("dl19"), data.load_collection("v1"))


def test_rows_are_complete_positive_and_finite(slice_of_dl19) -> None:
    inputs = slice_of_dl19
    result = run_benchmark(["knrm", "bert-cat-book"], inputs, torch.device("cpu"), TINY, progress=False)
    assert set(result) == {"environment", "device", "settings", "peak_gflops", "results", "ratios"}
    assert result["peak_gflops"]["float32"] > 0 and result["ratios"] == []
    assert result["environment"]["torch"] == torch.__version__ and "CPU" in result["device"]
    rows = result["results"]
    assert [row["model"] for row in rows] == ["knrm", "bert-cat-book"]
    for row in rows:
        assert row["docs_per_ms"] > 0 and math.isfinite(row["docs_per_ms"])
        assert 2 <= row["documents"] <= 8
        assert row["latency_3_ms"] > 0 and row["latency_3_measured"] and not row["latency_3_repeated"]
        assert row["latency_150_repeated"], "a query has 100 candidates: 150 repeats them"
        assert row["bucketed"] and row["execution"] == "eager" and not row["compiled"]
        assert row["gflop_per_document"] > 0 and row["peak_gflops"] == result["peak_gflops"]["float32"]
        assert row["fraction_of_peak"] == pytest.approx(row["achieved_gflops"] / row["peak_gflops"])
    assert rows[0]["batch_size"] == 256 and rows[1]["batch_size"] == 32


def test_too_slow_latencies_are_estimated_and_batch_sizes_apply(slice_of_dl19) -> None:
    inputs = slice_of_dl19
    settings = TINY.replace(max_latency_seconds=0.0)
    result = run_benchmark(["tk1"], inputs, torch.device("cpu"), settings, batch_sizes=[4, 8], progress=False)
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
    inputs = slice_of_dl19
    with pytest.raises(ValueError, match="unknown architecture"):
        run_benchmark(["bert-huge"], inputs, torch.device("cpu"), progress=False)


def test_rank_order_and_bucketed_rows_and_the_tk2_bert_base_ratio(slice_of_dl19) -> None:
    inputs = slice_of_dl19
    result = run_benchmark(["tk2", "bert-base"], inputs, torch.device("cpu"), TINY.replace(roofline=False),
                           batch_sizes=[4], bucketings=[False, True], progress=False)  # fmt: skip
    assert [(row["model"], row["bucketed"]) for row in result["results"]] == [
        ("tk2", False),
        ("bert-base", False),
        ("tk2", True),
        ("bert-base", True),
    ]
    assert result["peak_gflops"] == {} and "fraction_of_peak" not in result["results"][0]
    speeds = {(row["model"], row["bucketed"]): row["docs_per_ms"] for row in result["results"]}
    assert [(ratio["bucketed"], ratio["ratio"]) for ratio in result["ratios"]] == [
        (False, speeds[("tk2", False)] / speeds[("bert-base", False)]),
        (True, speeds[("tk2", True)] / speeds[("bert-base", True)]),
    ]


def test_ratios_pair_only_rows_timed_alike() -> None:
    def row(model: str, dtype: str, docs_per_ms: float) -> dict:
        return {"model": model, "dtype": dtype, "batch_size": 8, "bucketed": True, "execution": "eager",
                "docs_per_ms": docs_per_ms}  # fmt: skip

    rows = [row("tk2", "float32", 4.0), row("bert-base", "float32", 0.1), row("tk2", "bfloat16", 8.0)]
    assert [(ratio["dtype"], ratio["ratio"]) for ratio in speed_ratios(rows)] == [("float32", pytest.approx(40.0))]
    assert (speed_ratios(rows)[0]["fast_docs_per_ms"], speed_ratios(rows)[0]["slow_docs_per_ms"]) == (4.0, 0.1)
    defaults = [{**rows[0], "batch_size": 256}, {**rows[1], "batch_size": 32}]  # each family's default batch
    assert [(ratio["batch_size"], ratio["ratio"]) for ratio in speed_ratios(defaults)] == [("256/32", 40.0)]
    sweep = [{**rows[0], "batch_size": size} for size in (64, 256)] + [{**rows[1], "batch_size": 64}]
    assert [ratio["batch_size"] for ratio in speed_ratios(sweep)] == [64]


def test_a_compiler_failure_falls_back_to_eager(monkeypatch) -> None:
    def broken_compile(model, **_):
        def fail(*_args):
            raise RuntimeError("no C++ compiler")

        return fail

    monkeypatch.setattr(speed_benchmark.torch, "compile", broken_compile)
    model = torch.nn.Linear(2, 1)
    probe = (torch.ones(1, 2),)
    runnable, how = speed_benchmark._compiled_or_eager(model, True, probe)
    assert runnable is model and how == "eager (compile failed: RuntimeError)"
    assert speed_benchmark._compiled_or_eager(model, False, probe) == (model, "eager")


def test_rows_of_older_files_count_as_rank_order_and_eager_or_compiled() -> None:
    assert timed_setting({"dtype": "float32"}) == ("float32", False, "eager")
    assert timed_setting({"dtype": "float32", "compiled": True}) == ("float32", False, "compiled")
    assert timed_setting({"dtype": "bfloat16", "bucketed": True, "execution": "eager"}) == ("bfloat16", True, "eager")


def file_row(model: str, docs_per_ms: float, **setting) -> dict:
    """A row of a committed benchmark file: float32, batch 256, older fields unless ``setting`` says otherwise."""
    label = {"tk2": "TK-2", "bert-base": "BERT-Base"}.get(model, model)
    base = {"model": model, "label": label, "dtype": "float32", "batch_size": 256, "docs_per_ms": docs_per_ms,
            "file": "new.json", "device": "CPU", "date": "2026-11-23"}  # fmt: skip
    return {**base, **setting}


def benchmark_file(rows: list[dict], device: str = "CPU") -> dict:
    """A committed benchmark file's JSON content with ``rows`` as its results."""
    return {"device": device, "environment": {"date": "2026-11-23T10:00:00Z"}, "results": rows}


#: An older file (rank order, eager, each family's default batch size) and a newer one (bucketed, compiled, bf16).
OLD = [file_row("tk2", 0.13), file_row("bert-base", 0.0038, batch_size=32)]
NEW = [
    file_row("tk2", 0.40, bucketed=True, execution="compiled", dtype="bfloat16"),
    file_row("bert-base", 0.008, bucketed=True, execution="compiled", dtype="bfloat16"),
    file_row("knrm", 3.0, bucketed=True),
    file_row("tk2", 0.2, bucketed=True),  # no BERT-Base timed alike: no ratio
]


def test_old_rows_read_as_rank_order_and_eager_or_compiled() -> None:
    assert setting_of(file_row("tk2", 1.0)) == {
        "dtype": "float32", "batch": 256, "batching": "rank order", "execution": "eager"
    }  # fmt: skip
    assert setting_of(file_row("tk2", 1.0, compiled=True))["execution"] == "compiled"
    new = setting_of(file_row("tk2", 1.0, bucketed=True, execution="eager (compile failed: X)"))
    assert new["batching"] == "bucketed" and new["execution"] == "eager (compile failed: X)"


def test_the_ratio_table_pairs_tk2_and_bert_base_timed_alike_in_every_file() -> None:
    table = ratio_table({"old.json": benchmark_file(OLD), "new.json": benchmark_file(NEW)})
    assert list(table["file"]) == ["new.json", "old.json"]
    assert list(table["batch"]) == ["256", "256/32"]
    assert list(table["TK-2 docs/ms"]) == [0.40, 0.13] and list(table["BERT-Base docs/ms"]) == [0.008, 0.0038]
    assert list(table["TK-2 / BERT-Base"]) == [pytest.approx(0.40 / 0.008), pytest.approx(0.13 / 0.0038)]
    assert ratio_table({"knrm.json": benchmark_file([file_row("knrm", 3.0)])}).empty
    assert ratio_table({}).empty
