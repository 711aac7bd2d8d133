"""Several processes training one model: torchrun's process group and each process's shard of a batch.

Paper-scale training runs one process per GPU under ``torchrun`` (the book's page "The paper path", section
"Paper scale and several GPUs"). torchrun starts the processes with ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``MASTER_ADDR`` and ``MASTER_PORT`` in their environment; :func:`init_from_env` joins them into one process group
(NCCL on CUDA, gloo on CPU) and pins each process to its GPU (``cuda:LOCAL_RANK``), so that
``device="auto"`` / ``"cuda"`` means that process's own GPU. Without torchrun (no ``WORLD_SIZE``,
or ``WORLD_SIZE=1``) nothing is initialised, and every helper here is the identity of one process:
``rank() == 0``, ``world_size() == 1``, ``shard(batch) == batch``, ``barrier()`` does nothing.

The book's one training loop (:func:`lib.training.loop.run_loop`, ARCHITECTURE.md "How to add a
trainer") uses these helpers: it wraps the step in ``DistributedDataParallel`` (:func:`wrap`), so
the gradients of all processes are averaged before each optimizer step; a trainer builds only its
process's :func:`shard` of the global batch, so the global batch size is the same whatever the
number of processes; rank 0 alone writes checkpoints and markers while the others wait at a
:func:`barrier`, and every process resumes from the checkpoint that rank 0 read and
:func:`broadcast_object` sent. Encoding passes share their batches the same way: the teacher's
vectors (:func:`lib.reranking.dense.encode`, every process gets all rows) and TILDE's indexes
(:func:`map_round_robin`, rank 0 gets the results in order and writes).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from typing import Any, TypeVar

import numpy as np
import torch
import torch.distributed as dist
from torch import nn

T = TypeVar("T")
R = TypeVar("R")

#: How long a collective (a barrier, a broadcast) waits for the slowest process. Rank 0 validates
#: alone at a checkpoint while the others wait, which can take minutes at paper scale: torch's
#: default (10 minutes for NCCL) is too short. ``TKBOOK_DIST_TIMEOUT_MINUTES`` overrides it.
DEFAULT_TIMEOUT_MINUTES = 180


def is_distributed() -> bool:
    """Whether this process belongs to an initialised process group of more than one process."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def init_from_env(backend: str | None = None, timeout_minutes: float | None = None) -> bool:
    """Join the process group that torchrun's environment describes; whether this process is now distributed.

    Does nothing (and returns ``False``) without ``WORLD_SIZE`` or with ``WORLD_SIZE=1``; returns
    ``True`` at once when a group is already initialised. ``backend`` defaults to ``"nccl"`` when CUDA
    is available and ``"gloo"`` otherwise; with NCCL the process is pinned to ``cuda:LOCAL_RANK``.
    ``timeout_minutes`` defaults to ``TKBOOK_DIST_TIMEOUT_MINUTES`` or :data:`DEFAULT_TIMEOUT_MINUTES`.
    """
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size() > 1
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return False
    if not dist.is_available():
        raise RuntimeError(f"WORLD_SIZE={world} asks for several processes, but this torch has no torch.distributed")
    missing = [name for name in ("RANK", "MASTER_ADDR", "MASTER_PORT") if name not in os.environ]
    if missing:
        raise RuntimeError(f"WORLD_SIZE={world} is set but {', '.join(missing)} not: start the processes with torchrun")
    if backend is None:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(local_rank())
    if timeout_minutes is None:
        timeout_minutes = float(os.environ.get("TKBOOK_DIST_TIMEOUT_MINUTES", DEFAULT_TIMEOUT_MINUTES))
    dist.init_process_group(backend, timeout=timedelta(minutes=timeout_minutes))
    return True


def shutdown() -> None:
    """Leave the process group (at the end of a distributed script); nothing when there is none."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def finish(record: dict[str, Any]) -> None:
    """End a distributed command line: rank 0 prints its result ``record`` as one JSON line, then every
    process leaves the group (:func:`shutdown`)."""
    if is_main():
        print(json.dumps(record))
    shutdown()


def rank() -> int:
    """This process's rank in the group (0 without one)."""
    return dist.get_rank() if is_distributed() else 0


def world_size() -> int:
    """The number of processes in the group (1 without one)."""
    return dist.get_world_size() if is_distributed() else 1


def local_rank() -> int:
    """This process's rank on its node (``LOCAL_RANK``; 0 without torchrun): the index of its GPU."""
    return int(os.environ.get("LOCAL_RANK", "0"))


def is_main() -> bool:
    """Whether this process is rank 0, the one that writes files (always ``True`` without a group)."""
    return rank() == 0


def barrier() -> None:
    """Wait until every process gets here (nothing without a group)."""
    if is_distributed():
        if dist.get_backend() == "nccl":
            dist.barrier(device_ids=[torch.cuda.current_device()])
        else:
            dist.barrier()


def local_first(function: Callable[[], R]) -> R:
    """``function()`` run first by each node's local rank 0 while the node's other processes wait, then by them.

    For a download into a folder each node sees: one process per node fetches, the others then find the
    file in place (and only verify it). Without torchrun: ``function()``.
    """
    result = function() if local_rank() == 0 else None
    barrier()
    return result if local_rank() == 0 else function()


def shard(batch: Sequence[T], part: int | None = None, parts: int | None = None) -> list[T]:
    """This process's contiguous share of a global batch: part ``r`` of ``W`` is ``batch[r·B/W : (r+1)·B/W]``.

    The global batch size ``B`` must be a multiple of ``W``: every process then averages its loss over
    the same number of examples, and ``DistributedDataParallel``'s mean of their gradients is the
    gradient of the global batch's mean loss. ``part`` and ``parts`` default to this process's
    :func:`rank` and the :func:`world_size`.
    """
    part = rank() if part is None else part
    parts = world_size() if parts is None else parts
    if parts < 1 or not 0 <= part < parts:
        raise ValueError(f"part {part} is not one of {parts} parts")
    if len(batch) % parts:
        raise ValueError(
            f"a batch of {len(batch)} cannot be split evenly over {parts} processes: "
            f"choose a batch size that is a multiple of the number of processes"
        )
    size = len(batch) // parts
    return list(batch[part * size : (part + 1) * size])


def rank_seed(seed: int, rank: int) -> int:
    """The seed of process ``rank`` for a run seeded with ``seed``: ``seed`` itself for rank 0, so one
    process draws exactly what an undistributed run draws; an independent stream for every other rank."""
    if rank == 0:
        return seed
    return int(np.random.SeedSequence([seed, rank, 7919]).generate_state(1)[0])


def broadcast_object(obj: T) -> T:
    """Rank 0's ``obj`` on every process (pickled; ``obj`` itself without a group)."""
    if not is_distributed():
        return obj
    holder = [obj if is_main() else None]
    dist.broadcast_object_list(holder, src=0)
    return holder[0]


def gather_objects(obj: Any) -> list[Any]:
    """Every process's ``obj``, in rank order, on every process (``[obj]`` without a group)."""
    if not is_distributed():
        return [obj]
    gathered: list[Any] = [None] * world_size()
    dist.all_gather_object(gathered, obj)
    return gathered


def map_round_robin(items: Sequence[T], function: Callable[[T], R]) -> Iterator[R]:
    """``function(item)`` of every item, in item order, on rank 0; the items dealt round-robin to the processes.

    Without a group: ``function`` of each item in turn. With ``W`` processes, process ``r`` computes
    items ``r, r + W, r + 2W, …``: round ``k`` is items ``kW … kW + W − 1``, one per process, and rank 0
    receives each round's results (a gather to rank 0) and yields them in item order, so it holds one
    round at a time — what a writer streaming an index larger than memory needs (TILDE's indexes,
    :mod:`lib.reranking.tilde_index`). The other processes yield nothing, but each round is a
    collective: every process must iterate to the end.
    """
    if not is_distributed():
        yield from map(function, items)
        return
    processes, me = world_size(), rank()
    for first in range(0, len(items), processes):
        mine = first + me
        result = function(items[mine]) if mine < len(items) else None
        gathered: list[Any] | None = [None] * processes if is_main() else None
        dist.gather_object(result, gathered, dst=0)
        if gathered is not None:
            yield from gathered[: len(items) - first]


def mean_over_ranks(value: torch.Tensor) -> float:
    """The mean over all processes of a scalar tensor, as a float (``float(value)`` without a group)."""
    value = value.detach()
    if not is_distributed():
        return float(value)
    total = value.float().clone().reshape(1)
    dist.all_reduce(total, op=dist.ReduceOp.SUM)
    return float(total[0]) / world_size()


def wrap(module: nn.Module, find_unused_parameters: bool = True) -> nn.Module:
    """``module`` in ``DistributedDataParallel`` when distributed (the module itself otherwise).

    The module's parameters must already be on this process's device (``cuda:LOCAL_RANK`` or the
    CPU). Construction broadcasts rank 0's parameters and buffers to all processes. Parameters that
    a step does not use are allowed (``find_unused_parameters``): TILDE's and the masked LM's steps
    call parts of their models only.
    """
    if not is_distributed():
        return module
    device = next(module.parameters()).device
    device_ids = None
    if device.type == "cuda":
        device_ids = [device.index if device.index is not None else torch.cuda.current_device()]
    return nn.parallel.DistributedDataParallel(
        module, device_ids=device_ids, find_unused_parameters=find_unused_parameters
    )


__all__ = [
    "DEFAULT_TIMEOUT_MINUTES",
    "barrier",
    "broadcast_object",
    "gather_objects",
    "init_from_env",
    "is_distributed",
    "is_main",
    "local_rank",
    "map_round_robin",
    "mean_over_ranks",
    "rank",
    "rank_seed",
    "shard",
    "shutdown",
    "world_size",
    "wrap",
]
