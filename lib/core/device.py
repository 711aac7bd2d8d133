"""The book's device and mixed-precision policy (ARCHITECTURE.md, "Conventions").

CUDA when available (``device="auto"``), CPU otherwise; bf16 autocast on CUDA, exact fp32 on CPU
unless asked otherwise, so CPU runs stay deterministic.
"""

from __future__ import annotations

import contextlib

import torch


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """The torch device for ``device``: ``"auto"`` is CUDA when available, else CPU.

    Any other value must name a valid torch device (``"cpu"``, ``"cuda"``, ``"cuda:1"``, …); a value
    torch does not know, or CUDA asked for where there is none, is a ``ValueError`` naming the
    parameter ``device``.
    """
    if isinstance(device, torch.device):
        resolved = device
    elif not isinstance(device, str):
        raise ValueError(f"parameter 'device' must be 'auto' or a torch device string, got {device!r}")
    elif device == "auto":
        resolved = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        try:
            resolved = torch.device(device)
        except (RuntimeError, ValueError) as error:
            raise ValueError(f"parameter 'device' is {device!r}, which is not a torch device ({error})") from None
    if resolved.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"parameter 'device' is {str(device)!r} but CUDA is not available here")
        if resolved.index is not None and resolved.index >= torch.cuda.device_count():
            raise ValueError(
                f"parameter 'device' is {str(device)!r} but there are {torch.cuda.device_count()} CUDA devices"
            )
    return resolved


def amp_enabled(device: torch.device, amp: bool | str = "auto") -> bool:
    """Whether mixed precision (bf16 autocast) is on for ``device``.

    ``"auto"``: on for CUDA devices that support bf16, off on CPU (CPU runs stay exact fp32 and
    deterministic). ``True`` turns it on anywhere (CPU bf16 autocast too); ``False`` turns it off.
    """
    if amp == "auto":
        return device.type == "cuda" and torch.cuda.is_bf16_supported()
    if isinstance(amp, bool):
        return amp
    raise ValueError(f"parameter 'amp' must be True, False or 'auto', got {amp!r}")


def autocast(device: torch.device, amp: bool | str = "auto") -> contextlib.AbstractContextManager:
    """A context manager for the forward pass: bf16 autocast when :func:`amp_enabled`, else nothing.

    bf16 keeps fp32's exponent range, so training needs no gradient scaler.
    """
    if amp_enabled(device, amp):
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def reset_peak_memory(device: torch.device) -> None:
    """Start a new peak of :func:`peak_memory_mb` on ``device`` (nothing to do off CUDA)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)


def peak_memory_mb(device: torch.device) -> float:
    """The most GPU memory torch held on ``device`` (weights and activations, MiB) since
    :func:`reset_peak_memory`; NaN off CUDA, where the process's memory is not the model's alone."""
    if device.type != "cuda":
        return float("nan")
    torch.cuda.synchronize(device)
    return torch.cuda.max_memory_allocated(device) / 2**20
