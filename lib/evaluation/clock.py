"""One clock for every latency a cost table compares: one repetition rule and one precision, both recorded.

Two timings compared are only fair when they share a harness (the TK paper's Figure 2 times every model on one GPU,
§5.1). Chapter 3's cost table and chapter 8's comparison time every model with the same rule — per query one untimed
warm-up run, then the median of ``repetitions`` timed runs (:func:`lib.evaluation.efficiency.median_ms`) — and the
same precision:

- **bfloat16** wherever the device has native bfloat16 arithmetic: a GPU that supports it (every model under bf16
  autocast, :func:`lib.core.device.autocast`), or a CPU whose flags report ``avx512_bf16``, ``amx_bf16`` (x86) or
  ``bf16`` (Arm) — every model served in bfloat16 (:func:`lib.models.bfloat16_encoders.served_in_bfloat16`: run
  whole, under bf16 autocast; stored, its query and passage encoders from a bfloat16 copy of its weights, the
  interaction in float32);
- **float32** for every model where it has none (on such a CPU bfloat16 is emulated, and slower).

:func:`clock_header` is what a table's header records: the device, its threads, the CPU's bfloat16 flags, the torch
version, the precision and the repetition rule in words.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from torch import nn

from lib.models.bfloat16_encoders import BFloat16Model, served_in_bfloat16

#: The CPU flags (``/proc/cpuinfo``) of native bfloat16 arithmetic: x86's AVX-512 BF16 and AMX, Arm's BF16.
BF16_FLAGS: tuple[str, ...] = ("avx512_bf16", "amx_bf16", "bf16")
CPUINFO = Path("/proc/cpuinfo")


def cpu_flags(cpuinfo: Path = CPUINFO) -> frozenset[str]:
    """The flags of the first processor listed in ``cpuinfo`` (empty where the file is missing, e.g. off Linux)."""
    if not cpuinfo.is_file():
        return frozenset()
    for line in cpuinfo.read_text(errors="replace").splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


def native_bf16(device: torch.device, cpuinfo: Path = CPUINFO) -> bool:
    """Whether ``device`` has native bfloat16 arithmetic: CUDA's own report, or a CPU flag of :data:`BF16_FLAGS`."""
    if device.type == "cuda":
        return bool(torch.cuda.is_bf16_supported())
    return bool(cpu_flags(cpuinfo) & set(BF16_FLAGS))


def precision(device: torch.device, cpuinfo: Path = CPUINFO) -> str:
    """The clock's precision on ``device``: ``"bfloat16"`` where it is native, else ``"float32"``."""
    return "bfloat16" if native_bf16(device, cpuinfo) else "float32"


def on_the_clock(model: nn.Module, device: torch.device, cpuinfo: Path = CPUINFO) -> nn.Module:
    """``model`` as the clock times it on ``device``: on a CPU with native bfloat16, served in bfloat16 (module
    docstring; a model already served so is kept as it is); otherwise ``model`` itself (on a GPU the caller's bf16
    autocast, :func:`lib.core.device.autocast`)."""
    if device.type == "cpu" and native_bf16(device, cpuinfo) and not isinstance(model, BFloat16Model):
        return served_in_bfloat16(model)
    return model


def clock_header(device: torch.device, repetitions: int, cpuinfo: Path = CPUINFO) -> dict[str, Any]:
    """What a cost table's header records about its clock (module docstring)."""
    if repetitions < 1:
        raise ValueError(f"parameter 'repetitions' must be >= 1, got {repetitions}")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    return {
        "device": name,
        "threads": torch.get_num_threads() if device.type == "cpu" else os.cpu_count(),
        "bf16 flags": " ".join(sorted(cpu_flags(cpuinfo) & set(BF16_FLAGS))) or "none",
        "torch": torch.__version__,
        "precision": precision(device, cpuinfo),
        "rule": f"per query 1 untimed warm-up, then the median of {repetitions} timed run{'s' * (repetitions > 1)}; "
        "the median over queries",
    }


__all__ = [
    "BF16_FLAGS", "clock_header", "cpu_flags", "native_bf16", "on_the_clock", "precision",
]  # fmt: skip
