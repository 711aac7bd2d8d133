"""How close a re-ranker comes to the machine's arithmetic limit: a roofline reading of the speed benchmark.

A roofline (Williams, Waterman, Patterson, CACM 2009) bounds a program's speed by the machine's peak
floating-point rate and its memory bandwidth. The book reads the compute roof only:

- :func:`matmul_peak_gflops` measures the peak that the machine reaches in practice, the best of
  large square matrix products in the given dtype (the operation BERT and TK spend their arithmetic in);
- :func:`flops_per_document` counts the floating-point work a model does per (query, passage) pair
  on the timed batches themselves (padding included, so bucketing shows), with
  :class:`torch.utils.flop_counter.FlopCounterMode` (matrix products and attention; element-wise
  work such as kernel pooling, layer norms and softmax is not counted: it is the part that runs far
  below the roof);
- :func:`roofline_row` turns a measured throughput into achieved GFLOP/s and the fraction of the peak;
- :func:`roofline_table` gathers the benchmark's rows into a table: per architecture and dtype, GFLOP per document,
  docs/ms, achieved GFLOP/s and % of the peak.

A model far below the roof spends its time on memory traffic, element-wise operations and overheads
rather than arithmetic: that is where a faster implementation can gain, and why a small model is not
as much faster than a large one as their FLOPs say (TK paper §3.3 and Table 2).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import torch
from torch.utils.flop_counter import FlopCounterMode, register_flop_formula, sdpa_flop_count

from lib.evaluation.efficiency import Tensors, score_batches

#: Sides of the square matrices whose products measure the peak.
PEAK_MATRIX_SIZES = (1024, 2048)


def _register_cpu_attention() -> None:
    """Count the CPU flash-attention kernel as attention (torch registers only the CUDA ones)."""
    operator = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    if operator in torch.utils.flop_counter.flop_registry:
        return

    @register_flop_formula(operator)
    def _cpu_attention_flops(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
        return sdpa_flop_count(query_shape, key_shape, value_shape)


_register_cpu_attention()


def _synchronise(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_peak_gflops(
    device: torch.device,
    dtype: torch.dtype | None = None,
    sizes: Sequence[int] = PEAK_MATRIX_SIZES,
    repetitions: int = 5,
) -> float:
    """The best GFLOP/s of square matrix products in ``dtype`` (float32 for ``None``) over ``sizes`` and repetitions.

    ``2·n³`` floating-point operations per ``n × n`` product (one multiply and one add per term). The
    best rather than the median: a peak is what the machine *can* reach.
    """
    if not sizes or min(sizes) < 1 or repetitions < 1:
        raise ValueError(
            f"parameters 'sizes' (>= 1 each) and 'repetitions' (>= 1) required, got {sizes}, {repetitions}"
        )
    best = 0.0
    generator = torch.Generator(device=device).manual_seed(0)
    with torch.inference_mode():
        for size in sizes:
            left = torch.randn(size, size, device=device, generator=generator).to(dtype or torch.float32)
            right = torch.randn(size, size, device=device, generator=generator).to(dtype or torch.float32)
            left @ right
            _synchronise(device)
            for _ in range(repetitions):
                start = time.perf_counter()
                left @ right
                _synchronise(device)
                best = max(best, 2 * size**3 / (time.perf_counter() - start) / 1e9)
    return best


def flops_per_document(
    model: torch.nn.Module, batches: Sequence[tuple[torch.Tensor, Tensors]], dtype: torch.dtype | None = None
) -> float:
    """Floating-point operations per scored row of ``batches`` (:func:`lib.evaluation.efficiency.scoring_batches`).

    Counted by running the batches once under :class:`~torch.utils.flop_counter.FlopCounterMode`.
    """
    rows = sum(int(indices.numel()) for indices, _ in batches)
    if rows == 0:
        raise ValueError("parameter 'batches' holds no rows")
    with FlopCounterMode(display=False) as counter:
        score_batches(model, batches, dtype)
    return counter.get_total_flops() / rows


def roofline_row(flops_per_doc: float, docs_per_ms: float, peak_gflops: float) -> dict[str, float]:
    """GFLOP per document, achieved GFLOP/s (``flops × docs/ms × 1,000``) and its fraction of ``peak_gflops``."""
    if peak_gflops <= 0:
        raise ValueError(f"parameter 'peak_gflops' must be positive, got {peak_gflops}")
    achieved = flops_per_doc * docs_per_ms * 1e3 / 1e9
    return {
        "gflop_per_document": flops_per_doc / 1e9,
        "achieved_gflops": achieved,
        "peak_gflops": peak_gflops,
        "fraction_of_peak": achieved / peak_gflops,
    }


def roofline_table(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Per timed architecture and dtype: GFLOP per document, docs/ms, achieved GFLOP/s and % of the matmul peak."""
    records = [
        {
            "architecture": row["label"],
            "model": row["model"],
            "dtype": row["dtype"],
            "GFLOP / document": row["gflop_per_document"],
            "docs/ms": row["docs_per_ms"],
            "achieved GFLOP/s": row["achieved_gflops"],
            "matmul peak GFLOP/s": row["peak_gflops"],
            "% of peak": 100.0 * row["fraction_of_peak"],
        }
        for row in rows
        if "fraction_of_peak" in row
    ]
    if not records:
        raise ValueError("no benchmark row has roofline fields: run the benchmark with SpeedSettings.roofline")
    return pd.DataFrame(records).set_index("architecture")
