"""One clock for every latency compared (``lib.evaluation.clock``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from lib.evaluation.clock import clock_header, cpu_flags, native_bf16, on_the_clock, precision
from lib.models.bfloat16_encoders import BFloat16Encoders, BFloat16Model
from lib.models.knrm import KNRM
from tests.reranking.test_passage_index import TEXTS, tk_and_words

CPU = torch.device("cpu")


def cpuinfo(tmp_path: Path, flags: str, key: str = "flags") -> Path:
    """A ``/proc/cpuinfo`` of two processors, the first with ``flags``."""
    path = tmp_path / f"cpuinfo-{key}-{flags.replace(' ', '-')}"
    path.write_text(f"processor\t: 0\nmodel name\t: AMD EPYC\n{key}\t\t: {flags}\n\nprocessor\t: 1\n{key}\t\t: fpu\n")
    return path


def test_the_precision_is_bf16_only_where_the_cpu_reports_native_bf16(tmp_path: Path) -> None:
    with_bf16 = cpuinfo(tmp_path, "fpu sse2 avx512f avx512_bf16")
    with_amx = cpuinfo(tmp_path, "fpu amx_bf16 amx_tile")
    without = cpuinfo(tmp_path, "fpu sse2 avx2 avx512f")
    assert cpu_flags(with_bf16) == {"fpu", "sse2", "avx512f", "avx512_bf16"}
    assert cpu_flags(cpuinfo(tmp_path, "fp asimd bf16", key="Features")) == {"fp", "asimd", "bf16"}
    assert native_bf16(CPU, with_bf16) and native_bf16(CPU, with_amx) and not native_bf16(CPU, without)
    assert native_bf16(CPU, cpuinfo(tmp_path, "fp asimd bf16", key="Features")), "an Arm CPU's BF16 extension"
    assert precision(CPU, with_bf16) == "bfloat16" and precision(CPU, without) == "float32"
    assert cpu_flags(tmp_path / "missing") == frozenset() and precision(CPU, tmp_path / "missing") == "float32"


def test_every_model_is_served_in_the_clocks_precision_and_once_only(tmp_path: Path) -> None:
    model, words = tk_and_words(TEXTS)
    knrm = KNRM(torch.randn(len(words), 8))
    with_bf16, without = cpuinfo(tmp_path, "avx512_bf16"), cpuinfo(tmp_path, "avx2")
    assert on_the_clock(model, CPU, without) is model and on_the_clock(knrm, CPU, without) is knrm
    served = on_the_clock(model, CPU, with_bf16)
    assert isinstance(served, BFloat16Encoders) and on_the_clock(served, CPU, with_bf16) is served
    assert type(on_the_clock(knrm, CPU, with_bf16)) is BFloat16Model


def test_the_header_records_device_threads_flags_torch_precision_and_rule(tmp_path: Path) -> None:
    header = clock_header(CPU, 3, cpuinfo(tmp_path, "fpu avx512_bf16 amx_bf16"))
    assert header == {
        "device": "CPU", "threads": torch.get_num_threads(), "bf16 flags": "amx_bf16 avx512_bf16",
        "torch": torch.__version__, "precision": "bfloat16",
        "rule": "per query 1 untimed warm-up, then the median of 3 timed runs; the median over queries",
    }  # fmt: skip
    one = clock_header(CPU, 1, cpuinfo(tmp_path, "fpu"))
    assert one["bf16 flags"] == "none" and one["precision"] == "float32" and "median of 1 timed run;" in one["rule"]
    with pytest.raises(ValueError, match="'repetitions' must be >= 1"):
        clock_header(CPU, 0)
