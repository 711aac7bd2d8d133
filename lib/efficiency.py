"""Re-ranking throughput: documents scored per millisecond, measured as the TK paper does (§5.2).

Scoring time only: the inputs are tokenised and moved to the device beforehand, a warm-up pass is
excluded, CUDA work is synchronised before every clock read, and the median of several repetitions
is reported together with the device, dtype, torch version and batch size.
"""

from __future__ import annotations

import platform
import statistics
import time
from dataclasses import asdict, dataclass

import torch


@dataclass(frozen=True)
class Throughput:
    """One throughput measurement (``docs_per_ms`` is the median over ``repetitions``)."""

    docs_per_ms: float
    milliseconds_per_batch: float
    documents: int
    batch_size: int
    repetitions: int
    device: str
    dtype: str
    torch_version: str

    def as_dict(self) -> dict:
        return asdict(self)


def device_name(device: torch.device) -> str:
    """A readable device name: the GPU's name, or the CPU's with the number of torch threads."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"{platform.processor() or platform.machine()} CPU ({torch.get_num_threads()} threads)"


def _synchronise(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure_throughput(
    model: torch.nn.Module,
    query_ids: torch.Tensor,
    query_mask: torch.Tensor,
    doc_ids: torch.Tensor,
    doc_mask: torch.Tensor,
    batch_size: int = 256,
    repetitions: int = 5,
    warmup: int = 1,
    dtype: torch.dtype | None = None,
) -> Throughput:
    """Time ``model`` scoring every row of the given (already tokenised) pairs.

    All tensors must already be on the model's device. ``dtype`` (e.g. ``torch.bfloat16``) runs the
    scoring under autocast; ``None`` keeps the model's own precision.
    """
    if batch_size < 1 or repetitions < 1 or warmup < 0:
        raise ValueError("parameters 'batch_size' and 'repetitions' must be >= 1 and 'warmup' >= 0")
    device = doc_ids.device
    rows = doc_ids.shape[0]
    model.eval()

    def one_pass() -> None:
        with torch.inference_mode(), torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
            for start in range(0, rows, batch_size):
                end = start + batch_size
                model(query_ids[start:end], query_mask[start:end], doc_ids[start:end], doc_mask[start:end])

    for _ in range(warmup):
        one_pass()
    _synchronise(device)
    timings = []
    for _ in range(repetitions):
        start = time.perf_counter()
        one_pass()
        _synchronise(device)
        timings.append((time.perf_counter() - start) * 1000.0)
    median_ms = statistics.median(timings)
    batches = -(-rows // batch_size)
    return Throughput(
        docs_per_ms=rows / median_ms,
        milliseconds_per_batch=median_ms / batches,
        documents=rows,
        batch_size=batch_size,
        repetitions=repetitions,
        device=device_name(device),
        dtype=str(dtype or next(model.parameters()).dtype).replace("torch.", ""),
        torch_version=torch.__version__,
    )
