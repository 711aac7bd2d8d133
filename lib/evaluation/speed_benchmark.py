"""The speed benchmark of chapter 3 and ``python -m benchmarks.throughput``: every architecture on real inputs.

For each architecture of :mod:`lib.models.paper_size` (random weights, the paper's sizes) this measures,
with :mod:`lib.evaluation.efficiency`,

- **documents per millisecond** (TK paper Table 2, "Docs./ms") over real (query, passage) pairs of a
  first-stage run in rank order, at the paper's caps (30 / 200 tokens). How many documents are timed
  adapts to the model's speed: a probe on ``probe_documents`` estimates it, then enough documents for
  about ``target_seconds`` per repetition are timed (at least ``min_documents``, at most
  ``max_documents``), so that BERT-Large on a CPU takes seconds rather than hours;
- the **latency of re-ranking one query** (scoring and sorting) for each count of ``latency_counts``
  (100 and 1,000): the candidates of the run's first query, repeated when it has fewer (flagged).
  A latency whose measurement would take longer than ``max_latency_seconds`` is estimated from the
  throughput instead and flagged as such.
"""

from __future__ import annotations

import datetime as dt
import math
import platform
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

import torch
from tqdm import tqdm  # the plain text bar: tqdm.auto needs ipywidgets, which the book does not install

from lib.core import paths
from lib.core.profiles import SpeedSettings
from lib.core.types import Run
from lib.evaluation.efficiency import (
    candidate_pairs,
    cpu_model,
    device_name,
    encode_pairs,
    estimated_latency,
    measure_latency,
    measure_throughput,
)
from lib.models.paper_size import architecture, build_timing_model, parameter_count
from lib.representations.bert import WordPieceTokenizer
from lib.representations.text import Vocabulary

#: torch dtypes by the names the benchmark accepts (``float32`` runs without autocast).
DTYPES: dict[str, torch.dtype | None] = {"float32": None, "bfloat16": torch.bfloat16, "float16": torch.float16}


def environment() -> dict[str, Any]:
    """Where and when a benchmark ran: date (UTC), device names, torch / Python versions, threads, git commit."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=paths.REPO_ROOT, capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "cpu": cpu_model(),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "threads": torch.get_num_threads(),
        "commit": commit or None,
    }


def _documents_to_time(docs_per_ms: float, settings: SpeedSettings) -> int:
    wanted = math.ceil(docs_per_ms * settings.target_seconds * 1000.0)
    return max(settings.min_documents, min(settings.max_documents, wanted))


def time_architecture(
    name: str,
    first_stage: Run,
    queries: Mapping[str, str],
    texts: Mapping[str, str],
    tokenizers: Mapping[str, Any],
    device: torch.device,
    dtype: str = "float32",
    settings: SpeedSettings | None = None,
    compile_model: bool = False,
    seed: int = 0,
) -> dict[str, Any]:
    """One row of the benchmark: architecture ``name``'s throughput and latencies (see the module docstring).

    ``tokenizers`` maps a tokenizer family (``word``, ``wordpiece``) to its tokenizer.
    """
    settings = settings or SpeedSettings()
    if dtype not in DTYPES:
        raise ValueError(f"parameter 'dtype' must be one of {sorted(DTYPES)}, got {dtype!r}")
    spec = architecture(name)
    tokenizer = tokenizers[spec.family]
    model = build_timing_model(name, vocab_size=len(tokenizer), seed=seed).to(device)
    parameters = parameter_count(model)
    runnable = torch.compile(model) if compile_model else model
    batch_size = settings.batch_sizes[spec.family]
    autocast_dtype = DTYPES[dtype]

    def throughput(count: int):
        pairs, _repeated = candidate_pairs(first_stage, queries, texts, count)
        tensors = encode_pairs(tokenizer, pairs, device)
        return measure_throughput(
            runnable, *tensors, batch_size=batch_size, repetitions=settings.repetitions, warmup=settings.warmup,
            dtype=autocast_dtype,
        )  # fmt: skip

    probe = throughput(settings.probe_documents)
    documents = _documents_to_time(probe.docs_per_ms, settings)
    result = throughput(documents) if documents != settings.probe_documents else probe
    row: dict[str, Any] = {
        "model": name,
        "label": spec.label,
        "parameters": parameters,
        "compiled": compile_model,
        **result.as_dict(),
    }
    first_query = next(iter(first_stage))
    timed_runs = settings.repetitions + settings.warmup
    for count in settings.latency_counts:
        pairs, repeated = candidate_pairs(first_stage, queries, texts, count, qid=first_query)
        if count / result.docs_per_ms * timed_runs <= settings.max_latency_seconds * 1000.0:
            tensors = encode_pairs(tokenizer, pairs, device)
            latency = measure_latency(
                runnable, tensors, batch_size=batch_size, repetitions=settings.repetitions, warmup=settings.warmup,
                dtype=autocast_dtype, repeated=repeated,
            )  # fmt: skip
        else:
            latency = estimated_latency(count, result, repeated=repeated)
        row[f"latency_{count}_ms"] = latency.milliseconds
        row[f"latency_{count}_measured"] = latency.measured
        row[f"latency_{count}_repeated"] = latency.repeated
    row["latency_query"] = first_query
    return row


def default_tokenizers(texts: Sequence[str]) -> dict[str, Any]:
    """Two tokenizers: a word :class:`~lib.representations.text.Vocabulary` of ``texts`` and the real WordPiece one."""
    return {"word": Vocabulary.build(texts), "wordpiece": WordPieceTokenizer.from_vocab()}


def run_benchmark(
    names: Sequence[str],
    first_stage: Run,
    queries: Mapping[str, str],
    texts: Mapping[str, str],
    device: torch.device,
    dtypes: Sequence[str] = ("float32",),
    settings: SpeedSettings | None = None,
    batch_sizes: Sequence[int] | None = None,
    compile_model: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """Time every architecture of ``names`` under every dtype (and batch size, when given for all families).

    Returns ``{"environment": …, "device": …, "settings": …, "results": [row, …]}`` (JSON-ready).
    """
    settings = settings or SpeedSettings()
    for name in names:
        architecture(name)
    used = [pid for qid in first_stage for pid in first_stage[qid]]
    tokenizers = default_tokenizers([texts[pid] for pid in used if pid in texts])
    variants = [settings] if not batch_sizes else [
        SpeedSettings(**{**asdict(settings), "batch_sizes": {"word": size, "wordpiece": size}})
        for size in batch_sizes
    ]  # fmt: skip
    jobs = [(name, dtype, variant) for variant in variants for dtype in dtypes for name in names]
    rows = []
    for name, dtype, variant in tqdm(jobs, desc="timing", disable=not progress):
        rows.append(
            time_architecture(
                name, first_stage, queries, texts, tokenizers, device, dtype, variant, compile_model=compile_model
            )
        )
    return {
        "environment": environment(),
        "device": device_name(device),
        "settings": {**asdict(settings), "batch_sizes": dict(settings.batch_sizes)},
        "results": rows,
    }
