"""The book's one resumable training loop; every trainer plugs its objective into :func:`run_loop`.

A trainer (pairwise hinge in :mod:`lib.training.pairwise`, masked LM in :mod:`lib.training.masked_lm`,
TILDE's objectives in :mod:`lib.training.tilde`, and any new one: ARCHITECTURE.md, "How to add a
trainer") supplies

- the model and its optimizer (and an optional learning-rate schedule),
- ``loss_of_step(step)``: builds the batch of step ``step`` (from 0), runs the forward pass and
  returns the loss tensor — batches come from a seeded order such as :class:`BatchOrder`, and any
  per-step randomness from :func:`step_seed`, so the step number alone fixes what a step does,
- a **fingerprint**: everything a resumption must match (arguments, data digests, shapes),
- optionally ``on_checkpoint(state)``, called at every checkpoint before it is written: validation,
  early stopping (set ``state.finished``) and the trainer's own resumable state in ``state.extra``.

The loop owns the rest: the refusal (or, with ``mismatch="retrain"``, the replacement) of a checkpoint
with another fingerprint, seeding, the step loop with backward pass, gradient clipping and optimizer
and schedule steps, a non-finite loss as an error, the tqdm progress bar, and atomic checkpoints
(``checkpoint.pt``: model, optimizer, schedule, step, losses, the trainer's extra state, the Python,
NumPy and torch random states) every ``checkpoint_every`` steps and at the last. On CPU a run resumed
from a checkpoint ends with exactly the weights of an uninterrupted one. A trainer marks a finished
run with :func:`write_marker` (parameters and results as JSON, written last) and reuses it with
:func:`read_marker` instead of training again; :func:`check_positive`, :func:`processes_sharing` and
:func:`finish_run` are the checks and the end that the trainers share.

**Several processes** (``torchrun``; :mod:`lib.core.distributed`; the book's page "The paper path", section
"Paper scale and several GPUs"). When torchrun's environment names more than one process, the loop joins their
process group (NCCL on CUDA, gloo on CPU) and runs each step as the forward pass of a ``DistributedDataParallel``
module, so that every process's gradients are averaged before the optimizer step and all processes
keep the same weights. The trainer's ``loss_of_step`` builds only its process's
:func:`~lib.core.distributed.shard` of the step's global batch (the global batch size does not change)
and returns that shard's loss on the scale of the global batch's: a mean over examples as it is, a sum
times the number of processes. The recorded loss of a step is the mean over the processes. Rank 0
alone reads and writes the checkpoint and the markers and calls ``on_checkpoint`` (validation); the
other processes wait at a barrier and receive what it read (the checkpoint, a marker, whether the run
has finished, and at the end the trainer's ``extra`` state), so every process resumes from the same
checkpoint even where the nodes share no disk. Each process draws its own random numbers (dropout);
the checkpoint keeps every process's generator states, so a run resumed with the same number of
processes continues exactly. Without torchrun nothing of this happens: one process runs exactly the
steps it always ran.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import sys
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from tqdm import tqdm  # the plain text bar: tqdm.auto needs ipywidgets, which the book does not install

from lib.core import distributed
from lib.core.atomic import atomic_write, write_json
from lib.core.broken_files import read_or_set_aside

CHECKPOINT_NAME = "checkpoint.pt"
_FORMAT = 2


# --- what fixes a step: seeds, batch order, digests ---------------------------------------------------


def step_seed(seed: int, step: int, rank: int = 0) -> int:
    """The seed of one step: all randomness of step ``step`` (masking, dropout) comes from it.

    ``rank``: the process (:func:`lib.core.distributed.rank`) of a distributed run; each process's
    shard of the batch then draws its own masks and dropout. Rank 0's seed is the undistributed one.
    """
    if rank == 0:
        return int(np.random.SeedSequence([seed, step]).generate_state(1)[0])
    return int(np.random.SeedSequence([seed, step, rank]).generate_state(1)[0])


class BatchOrder:
    """Example indices for each step: an epoch-wise permutation of all examples, seeded by (seed, epoch)."""

    def __init__(self, count: int, batch_size: int, seed: int) -> None:
        self.count, self.batch_size, self.seed = count, batch_size, seed
        self._cache: dict[int, np.ndarray] = {}

    def _epoch(self, epoch: int) -> np.ndarray:
        if epoch not in self._cache:
            self._cache = {epoch: np.random.default_rng([self.seed, epoch, 1]).permutation(self.count)}
        return self._cache[epoch]

    def batch(self, step: int) -> list[int]:
        """The example indices of step ``step`` (batches run across epoch boundaries)."""
        first = step * self.batch_size
        return [int(self._epoch(g // self.count)[g % self.count]) for g in range(first, first + self.batch_size)]


def texts_fingerprint(texts: Sequence[str]) -> str:
    """A short sha256 of a sequence of texts (order matters), for fingerprints."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8"))
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def as_json(value: Any) -> Any:
    """``value`` as JSON reads it back (tuples become lists, keys strings): what a fingerprint is compared as."""
    return json.loads(json.dumps(value))


def differences(saved: Mapping[str, Any], current: Mapping[str, Any], prefix: str = "") -> list[str]:
    """``"key: old → new"`` for every differing entry, nested mappings as dotted keys."""
    found = []
    for key in sorted(set(saved) | set(current), key=str):
        old, new = saved.get(key), current.get(key)
        if isinstance(old, Mapping) and isinstance(new, Mapping):
            found += differences(old, new, f"{prefix}{key}.")
        elif old != new:
            found.append(f"{prefix}{key}: {old!r} → {new!r}")
    return found


def check_fingerprint(saved: Mapping[str, Any], current: Mapping[str, Any], path: Path, mismatch: str) -> bool:
    """Whether ``path`` (a checkpoint or marker with fingerprint ``saved``) belongs to this run.

    A different fingerprint is a ``ValueError`` naming the differences (``mismatch="error"``), or a
    warning naming them and ``False`` (``mismatch="retrain"``: the caller starts afresh).
    """
    if mismatch not in ("error", "retrain"):
        raise ValueError(f"parameter 'mismatch' must be 'retrain' or 'error', got {mismatch!r}")
    if saved == current:
        return True
    message = f"{path} was written by a training run with other arguments ({', '.join(differences(saved, current))})"
    if mismatch == "error":
        raise ValueError(message + "; give another output folder or delete that one to start afresh")
    warnings.warn(message + "; training again from scratch", stacklevel=3)
    return False


# --- completion markers --------------------------------------------------------------------------------


def read_marker(path: Path, fingerprint: Mapping[str, Any], mismatch: str = "error") -> dict[str, Any] | None:
    """The record of a finished run at ``path`` if it has this ``fingerprint``; ``None`` when there is none.

    A marker of another run is refused or, with ``mismatch="retrain"``, deleted (see :func:`check_fingerprint`).
    In a distributed run rank 0 reads (and deletes) it, and every process gets rank 0's answer.
    """
    if not distributed.is_distributed():
        return _read_marker(path, fingerprint, mismatch)
    outcome: tuple[str, Any] | None = None
    if distributed.is_main():
        try:
            outcome = ("record", _read_marker(path, fingerprint, mismatch))
        except ValueError as error:
            outcome = ("error", str(error))
    kind, value = distributed.broadcast_object(outcome)
    if kind == "error":
        raise ValueError(value)
    return value


def _read_marker(path: Path, fingerprint: Mapping[str, Any], mismatch: str) -> dict[str, Any] | None:
    record = read_or_set_aside(path, _read_json_object, "a finished run's marker")
    if record is None:
        return None
    if check_fingerprint(record.get("params", {}), fingerprint, path, mismatch):
        return record
    path.unlink()
    return None


def _read_json_object(path: Path) -> dict[str, Any]:
    record = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(record, dict):
        raise ValueError(f"not a JSON object but a {type(record).__name__}")
    return record


def write_marker(path: Path, fingerprint: Mapping[str, Any], record: Mapping[str, Any]) -> None:
    """Mark a run as finished (atomically, after its outputs): its fingerprint and ``record``.

    In a distributed run rank 0 writes it while the other processes wait.
    """
    if distributed.is_main():
        write_json(path, {"params": fingerprint, **record})
    distributed.barrier()


# --- a trainer's plumbing around the loop: its checks and its end ----------------------------------------


def check_positive(**values: Any) -> None:
    """A ``ValueError`` naming the first of ``values`` (a trainer's sizes) that is not a positive integer."""
    for name, value in values.items():
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"parameter {name!r} must be a positive integer, got {value!r}")


def processes_sharing(batch_size: int) -> int:
    """Join torchrun's processes (if any) and return their number, which must divide ``batch_size``: each
    process takes an equal share of every batch."""
    distributed.init_from_env()
    processes = distributed.world_size()
    if batch_size % processes:
        raise ValueError(
            f"parameter 'batch_size' ({batch_size}) must be a multiple of the number of processes ({processes})"
        )
    return processes


def finish_run(
    state: LoopState, marker: Path, fingerprint: Mapping[str, Any], record: Mapping[str, Any], save: Callable[[], None]
) -> None:
    """End a run of :func:`run_loop` whose outputs and marker live in ``marker``'s folder, as every trainer does.

    Nothing happens unless the run is finished (``stop_after``); then rank 0 writes the trained outputs
    (``save()``), the marker with ``fingerprint`` and ``record`` follows (:func:`write_marker`), and rank 0
    deletes the folder's checkpoint, which the marker has made redundant.
    """
    if not state.finished:
        return
    if distributed.is_main():
        save()
    write_marker(marker, fingerprint, record)
    if distributed.is_main():
        (marker.parent / CHECKPOINT_NAME).unlink(missing_ok=True)


# --- random states -------------------------------------------------------------------------------------


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's global generators."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def _rng_state() -> dict[str, Any]:
    name, keys, position, has_gauss, cached = np.random.get_state()
    return {
        "python": random.getstate(),
        "numpy": (name, [int(k) for k in keys], int(position), int(has_gauss), float(cached)),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def _set_rng_state(state: Mapping[str, Any]) -> None:
    random.setstate(state["python"])
    name, keys, position, has_gauss, cached = state["numpy"]
    np.random.set_state((name, np.array(keys, dtype=np.uint32), position, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    if state["cuda"] and torch.cuda.is_available() and len(state["cuda"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(state["cuda"])


# --- the loop --------------------------------------------------------------------------------------------


@dataclass
class LoopState:
    """Where a run stands: ``step`` steps done, the loss of each (from step 1), whether it is finished,
    the trainer's own resumable state (``extra``), the wall time of all its calls (``elapsed``) and what
    this call did (``resumed_from``, ``steps_run``, ``seconds``)."""

    step: int = 0
    losses: list[float] = field(default_factory=list)
    finished: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    elapsed: float = 0.0
    resumed_from: int = 0
    steps_run: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class LoopSettings:
    """How long and how a run goes: ``steps`` in all, a checkpoint every ``checkpoint_every`` steps,
    ``stop_after`` (stop as an interruption would, after this step; ``None``: run to ``steps``),
    ``grad_clip`` (global gradient norm; ``None``: none), ``seed`` (seeds the global generators at a
    fresh start; ``None``: the trainer seeds), ``mismatch`` (a checkpoint of other arguments:
    ``"error"`` or ``"retrain"``), the progress bar's ``desc`` and whether to show it."""

    steps: int
    checkpoint_every: int
    stop_after: int | None = None
    grad_clip: float | None = None
    seed: int | None = None
    mismatch: str = "error"
    desc: str = "train"
    progress: bool = True

    def __post_init__(self) -> None:
        for name in ("steps", "checkpoint_every"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"parameter {name!r} must be a positive integer, got {value!r}")


def run_loop(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    loss_of_step: Callable[[int], torch.Tensor],
    checkpoint_path: Path,
    fingerprint: Mapping[str, Any],
    settings: LoopSettings,
    schedule: torch.optim.lr_scheduler.LRScheduler | None = None,
    on_checkpoint: Callable[[LoopState], None] | None = None,
) -> LoopState:
    """Train ``model`` from its checkpoint (or afresh) to ``settings.steps`` (module doc); the final state.

    A finished run's checkpoint returns at once with the model holding its last weights. Under
    torchrun with several processes the run is distributed (module doc): ``model`` must already be
    on this process's device.
    """
    distributed.init_from_env()
    fingerprint = as_json(fingerprint)
    state = _resume(model, optimizer, schedule, checkpoint_path, fingerprint, settings)
    if state.finished:
        return state
    call_began = time.perf_counter()
    start = state.resumed_from = state.step
    if start and distributed.is_main():
        print(f"[train] {checkpoint_path}: resumed at step {start} of {settings.steps}", file=sys.stderr, flush=True)
    end = settings.steps if settings.stop_after is None else min(settings.steps, max(settings.stop_after, start))
    # Several processes: the whole step is the forward pass of one DDP module, whatever parts of the
    # model the trainer calls, so that backward averages the gradients of all processes.
    step_module = distributed.wrap(_Step(model, loss_of_step)) if distributed.is_distributed() else None
    began = time.perf_counter()
    show = settings.progress and distributed.is_main()
    bar = tqdm(total=settings.steps, initial=start, desc=settings.desc, unit="step", disable=not show)
    try:
        for step in range(start, end):
            model.train()
            loss = loss_of_step(step) if step_module is None else step_module(step)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if settings.grad_clip is not None:
                nn.utils.clip_grad_norm_(model.parameters(), settings.grad_clip)
            optimizer.step()
            if schedule is not None:
                schedule.step()
            value = distributed.mean_over_ranks(loss)
            if not math.isfinite(value):
                raise FloatingPointError(f"the training loss is {value} at step {step + 1}")
            state.losses.append(value)
            state.step = step + 1
            bar.update(1)
            bar.set_postfix(loss=f"{value:.4g}", **state.extra.get("postfix", {}), refresh=False)
            if state.step % settings.checkpoint_every == 0 or state.step == end:
                state.elapsed += time.perf_counter() - began
                began = time.perf_counter()
                if on_checkpoint is not None:
                    _on_main(on_checkpoint, state)
                state.finished = distributed.broadcast_object(state.finished or state.step >= settings.steps)
                _save(state, model, optimizer, schedule, checkpoint_path, fingerprint)
                if state.finished:
                    break
    finally:
        bar.close()
    if distributed.is_distributed():
        state.extra, state.elapsed = distributed.broadcast_object((state.extra, state.elapsed))
    state.steps_run = state.step - start
    state.seconds = time.perf_counter() - call_began
    return state


class _Step(nn.Module):
    """One training step as a module: ``forward(step)`` is the trainer's ``loss_of_step(step)``.

    Wrapped in ``DistributedDataParallel``, it lets DDP see the whole step, also where the trainer
    calls parts of its model (the masked LM's ``model.bert``, TILDE's ``model.logits``) rather than
    its ``forward``; the parameters are the model's own.
    """

    def __init__(self, model: nn.Module, loss_of_step: Callable[[int], torch.Tensor]) -> None:
        super().__init__()
        self.model = model
        self.loss_of_step = loss_of_step

    def forward(self, step: int) -> torch.Tensor:
        return self.loss_of_step(step)


def _on_main(hook: Callable[[LoopState], None], state: LoopState) -> None:
    """Call ``hook(state)`` on rank 0 only; an error there is raised on every process (none waits forever)."""
    if not distributed.is_distributed():
        hook(state)
        return
    failure = None
    if distributed.is_main():
        try:
            hook(state)
        except Exception as error:
            failure = error
    message = distributed.broadcast_object(None if failure is None else f"{type(failure).__name__}: {failure}")
    if failure is not None:
        raise failure
    if message is not None:
        raise RuntimeError(f"rank 0 failed at a checkpoint: {message}")


def _resume(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    schedule: torch.optim.lr_scheduler.LRScheduler | None,
    path: Path,
    fingerprint: Mapping[str, Any],
    settings: LoopSettings,
) -> LoopState:
    saved = None
    if distributed.is_main():
        saved = read_or_set_aside(path, _load_checkpoint, "a training checkpoint")
    saved = distributed.broadcast_object(saved)
    if saved is not None:
        if saved.get("format") != _FORMAT:
            warnings.warn(
                f"{path}: a checkpoint of an earlier training loop (format {saved.get('format')!r}, "
                f"now {_FORMAT}); training again from scratch",
                stacklevel=3,
            )
        elif check_fingerprint(saved["fingerprint"], fingerprint, path, settings.mismatch):
            model.load_state_dict(saved["model"])
            optimizer.load_state_dict(saved["optimizer"])
            if schedule is not None:
                schedule.load_state_dict(saved["schedule"])
            _restore_rng(saved, settings)
            return LoopState(saved["step"], list(saved["losses"]), saved["finished"], saved["extra"], saved["elapsed"])
        if distributed.is_main():
            path.unlink()
    if settings.seed is not None:
        seed_everything(distributed.rank_seed(settings.seed, distributed.rank()))
    state = LoopState()
    _save(state, model, optimizer, schedule, path, fingerprint)
    return state


def _load_checkpoint(path: Path) -> dict[str, Any]:
    """A checkpoint written by :func:`_write_checkpoint` (a truncated one raises, and is set aside by the caller)."""
    saved = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(saved, dict):
        raise ValueError(f"not a checkpoint dictionary but a {type(saved).__name__}")
    return saved


def _restore_rng(saved: Mapping[str, Any], settings: LoopSettings) -> None:
    """This process's generator states from a checkpoint: its own when the checkpoint has one for every
    process, else rank 0's (and, on the other ranks, a fresh stream seeded by the seed, step and rank)."""
    by_rank = saved.get("rng_by_rank")
    if by_rank is not None and len(by_rank) == distributed.world_size():
        _set_rng_state(by_rank[distributed.rank()])
        return
    _set_rng_state(saved["rng"])
    if distributed.rank() > 0:
        seed_everything(distributed.rank_seed(step_seed(settings.seed or 0, saved["step"]), distributed.rank()))


def _save(
    state: LoopState,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    schedule: torch.optim.lr_scheduler.LRScheduler | None,
    path: Path,
    fingerprint: Mapping[str, Any],
) -> None:
    rng = _rng_state()
    by_rank = distributed.gather_objects(rng) if distributed.is_distributed() else None
    if distributed.is_main():
        _write_checkpoint(state, model, optimizer, schedule, path, fingerprint, rng, by_rank)
    distributed.barrier()


def _write_checkpoint(
    state: LoopState,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    schedule: torch.optim.lr_scheduler.LRScheduler | None,
    path: Path,
    fingerprint: Mapping[str, Any],
    rng: Mapping[str, Any],
    by_rank: list[Any] | None,
) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    extra = {key: value for key, value in state.extra.items() if key != "postfix"}
    checkpoint = {
        "format": _FORMAT,
        "fingerprint": fingerprint,
        "step": state.step,
        "losses": state.losses,
        "finished": state.finished,
        "extra": extra,
        "elapsed": state.elapsed,
        "model": {name: tensor.detach().to("cpu", copy=True) for name, tensor in model.state_dict().items()},
        "optimizer": optimizer.state_dict(),
        "schedule": schedule.state_dict() if schedule is not None else None,
        "rng": rng,
    }
    if by_rank is not None:
        checkpoint["rng_by_rank"] = by_rank
    with atomic_write(path, "wb") as handle:
        torch.save(checkpoint, handle)
