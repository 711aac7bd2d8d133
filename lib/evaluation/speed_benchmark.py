"""The speed benchmark of chapter 3 and ``python -m benchmarks.throughput``: every architecture on real inputs.

For each architecture of :mod:`lib.models.paper_size` (random weights, the paper's sizes) this measures,
with :mod:`lib.evaluation.efficiency`,

- **documents per millisecond** (TK paper Table 2, "Docs./ms") over the same real (query, passage)
  pairs for every model: the first ``max_documents`` of a first-stage run in rank order, at the
  paper's caps (30 / 200 tokens), in batches bucketed by passage length (or in rank order, padded to
  the longest of all; ``bucketed``). How many of them are timed adapts to the model's speed: a probe
  on one batch estimates it, then whole batches holding enough documents for about
  ``target_seconds`` per repetition (at least ``min_documents``), spread evenly over all batches so
  that they keep the length distribution of all pairs
  (:func:`lib.evaluation.efficiency.spread_batches`): BERT-Large on a CPU takes seconds rather
  than hours, and a slow model is not timed on shorter (or longer) passages than a fast one;
- the **latency of re-ranking one query** (scoring and sorting) for each count of ``latency_counts``
  (100 and 1,000): the candidates of the run's first query, repeated when it has fewer (flagged).
  A latency whose measurement would take longer than ``max_latency_seconds`` is estimated from the
  throughput instead and flagged as such.

It also reads benchmark rows back (this build's, or the JSON files committed under ``benchmarks/results/``):
:func:`timed_setting` and :func:`setting_of` say how a row was timed (older files lack ``bucketed`` and
``execution``: rank order, eager unless ``compiled``), :func:`speed_ratios` pairs TK-2 and BERT-Base timed alike,
and :func:`ratio_table` gathers those ratios over every file.
"""

from __future__ import annotations

import datetime as dt
import math
import platform
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd
import torch
from tqdm import tqdm  # the plain text bar: tqdm.auto needs ipywidgets, which the book does not install

from lib.core import paths
from lib.core.profiles import SpeedSettings
from lib.core.types import Run
from lib.evaluation.efficiency import (
    Tensors,
    candidate_pairs,
    cpu_model,
    device_name,
    encode_pairs,
    estimated_latency,
    measure_latency,
    measure_throughput,
    timed_batches,
)
from lib.evaluation.roofline import flops_per_document, matmul_peak_gflops, roofline_row
from lib.models.paper_size import architecture, build_timing_model, parameter_count
from lib.representations.bert import WordPieceTokenizer
from lib.representations.text import Vocabulary

#: torch dtypes by the names the benchmark accepts (``float32`` runs without autocast).
DTYPES: dict[str, torch.dtype | None] = {"float32": None, "bfloat16": torch.bfloat16, "float16": torch.float16}
#: The pair of :func:`ratio_table`: the TK paper's TK-2 against BERT-Base (§3.3).
FAST, SLOW = "tk2", "bert-base"


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


def _compiled_or_eager(model: torch.nn.Module, compile_model: bool, probe: Tensors) -> tuple[torch.nn.Module, str]:
    """``torch.compile(model)`` if asked and it compiles and runs on ``probe`` (a batch), else ``model``.

    Returns the model to time and what happened: ``"eager"``, ``"compiled"`` or ``"eager (compile failed: …)"``
    (no C++ compiler, an unsupported operation, …), so a benchmark never stops on a compiler problem.
    """
    if not compile_model:
        return model, "eager"
    compiled = torch.compile(model, dynamic=True)
    try:
        with torch.inference_mode():
            compiled(*probe)
    except Exception as error:  # noqa: BLE001 — any compiler failure falls back to eager, recorded in the row
        return model, f"eager (compile failed: {type(error).__name__})"
    return compiled, "compiled"


@dataclass(frozen=True)
class BenchmarkInputs:
    """The real pairs a benchmark times: a first stage's candidates, in rank order, and the texts of their
    queries and passages (:func:`lib.evaluation.efficiency.candidate_pairs`)."""

    first_stage: Run
    queries: Mapping[str, str]
    texts: Mapping[str, str]

    def pairs(self, count: int, qid: str | None = None) -> tuple[list[tuple[str, str]], bool]:
        """:func:`lib.evaluation.efficiency.candidate_pairs` of these inputs."""
        return candidate_pairs(self.first_stage, self.queries, self.texts, count, qid=qid)


def time_architecture(
    name: str,
    inputs: BenchmarkInputs,
    tokenizers: Mapping[str, Any],
    device: torch.device,
    dtype: str = "float32",
    settings: SpeedSettings | None = None,
    seed: int = 0,
    peak_gflops: float | None = None,
) -> dict[str, Any]:
    """One row of the benchmark: architecture ``name``'s throughput and latencies (see the module docstring),
    compiled first if ``settings.compile_model``.

    ``tokenizers`` maps a tokenizer family (``word``, ``wordpiece``) to its tokenizer. With
    ``peak_gflops`` (the machine's matmul peak in ``dtype``, :func:`lib.evaluation.roofline.matmul_peak_gflops`)
    the row also gets the model's GFLOP per document, its achieved GFLOP/s and their fraction of the peak.
    """
    settings = settings or SpeedSettings()
    if dtype not in DTYPES:
        raise ValueError(f"parameter 'dtype' must be one of {sorted(DTYPES)}, got {dtype!r}")
    spec = architecture(name)
    tokenizer = tokenizers[spec.family]
    model = build_timing_model(name, vocab_size=len(tokenizer), seed=seed).to(device)
    parameters = parameter_count(model)
    batch_size = settings.batch_sizes[spec.family]
    autocast_dtype = DTYPES[dtype]

    pairs, _repeated = inputs.pairs(settings.max_documents)
    tensors = encode_pairs(tokenizer, pairs, device)
    with torch.autocast(device.type, dtype=autocast_dtype, enabled=autocast_dtype is not None):
        probe_batch = timed_batches(tensors, batch_size, settings.bucketed, settings.probe_documents)[0][1]
        runnable, how = _compiled_or_eager(model, settings.compile_model, probe_batch)

    def throughput(documents: int):
        return measure_throughput(
            runnable, tensors, batch_size=batch_size, repetitions=settings.repetitions, warmup=settings.warmup,
            dtype=autocast_dtype, bucketed=settings.bucketed, documents=documents,
        )  # fmt: skip

    probe = throughput(settings.probe_documents)
    documents = _documents_to_time(probe.docs_per_ms, settings)
    result = throughput(documents)
    row: dict[str, Any] = {
        "model": name,
        "label": spec.label,
        "parameters": parameters,
        "compiled": how == "compiled",
        "execution": how,
        **result.as_dict(),
    }
    if peak_gflops is not None:
        flops = flops_per_document(
            model, timed_batches(tensors, batch_size, settings.bucketed, documents), autocast_dtype
        )
        row.update(roofline_row(flops, result.docs_per_ms, peak_gflops))
    first_query = next(iter(inputs.first_stage))
    timed_runs = settings.repetitions + settings.warmup
    for count in settings.latency_counts:
        pairs, repeated = inputs.pairs(count, qid=first_query)
        if count / result.docs_per_ms * timed_runs <= settings.max_latency_seconds * 1000.0:
            tensors = encode_pairs(tokenizer, pairs, device)
            latency = measure_latency(
                runnable, tensors, batch_size=batch_size, repetitions=settings.repetitions, warmup=settings.warmup,
                dtype=autocast_dtype, repeated=repeated, bucketed=settings.bucketed,
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


def timed_setting(row: Mapping[str, Any]) -> tuple[str, bool, str]:
    """How a benchmark row was timed: ``(dtype, bucketed, execution)``. Rows without ``bucketed`` /
    ``execution`` (older files) count as rank order and eager (or compiled, if ``compiled``)."""
    execution = row.get("execution", "compiled" if row.get("compiled") else "eager")
    return row["dtype"], bool(row.get("bucketed", False)), execution


def speed_ratios(rows: Sequence[Mapping[str, Any]], fast: str = "tk2", slow: str = "bert-base") -> list[dict[str, Any]]:
    """``fast``'s docs/ms over ``slow``'s for every setting (:func:`timed_setting`) that timed both.

    TK paper §3.3: "TK with 2 layers [is] 40 times faster than BERT-Base" — measured here in one run.
    Rows of equal batch size are paired; a setting with one row per model pairs those two, whatever
    their batch sizes (each family has its own default: 256 word pairs, 32 BERT pairs). ``batch_size``
    of a ratio is then ``"256/32"``. Each ratio keeps both docs/ms (``fast_docs_per_ms``, ``slow_docs_per_ms``).
    """
    ratios = []
    settings = dict.fromkeys(timed_setting(row) for row in rows)
    for key in settings:
        alike = [row for row in rows if timed_setting(row) == key]
        by_model = {
            model: {row["batch_size"]: row["docs_per_ms"] for row in alike if row["model"] == model}
            for model in (fast, slow)
        }
        shared = sorted(set(by_model[fast]) & set(by_model[slow]))
        if shared:
            pairs = [(size, by_model[fast][size], by_model[slow][size]) for size in shared]
        elif len(by_model[fast]) == 1 and len(by_model[slow]) == 1:
            [(fast_size, fast_speed)] = by_model[fast].items()
            [(slow_size, slow_speed)] = by_model[slow].items()
            pairs = [(f"{fast_size}/{slow_size}", fast_speed, slow_speed)]
        else:
            pairs = []
        dtype, bucketed, execution = key
        ratios.extend(
            {"fast": fast, "slow": slow, "dtype": dtype, "batch_size": size, "bucketed": bucketed,
             "execution": execution, "fast_docs_per_ms": fast_speed, "slow_docs_per_ms": slow_speed,
             "ratio": fast_speed / slow_speed}
            for size, fast_speed, slow_speed in pairs
        )  # fmt: skip
    return ratios


def setting_of(row: Mapping[str, Any]) -> dict[str, Any]:
    """How a row was timed (:func:`lib.evaluation.speed_benchmark.timed_setting`), as the tables show it:
    ``dtype``, ``batch``, ``batching`` (bucketed / rank order) and ``execution``."""
    dtype, bucketed, execution = timed_setting(row)
    return {"dtype": dtype, "batch": row["batch_size"], "batching": _batching(bucketed), "execution": execution}


def _batching(bucketed: bool) -> str:
    return "bucketed" if bucketed else "rank order"


def ratio_table(results: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """TK-2's and BERT-Base's docs/ms and their ratio, for every setting of every benchmark file that timed both.

    ``results`` maps a file name to its JSON content; the pairs are those of
    :func:`lib.evaluation.speed_benchmark.speed_ratios`.
    """
    records = [
        {
            "file": file,
            "device": result["device"],
            "date": result["environment"]["date"][:10],
            "dtype": ratio["dtype"],
            "batch": str(ratio["batch_size"]),
            "batching": _batching(ratio["bucketed"]),
            "execution": ratio["execution"],
            "TK-2 docs/ms": ratio["fast_docs_per_ms"],
            "BERT-Base docs/ms": ratio["slow_docs_per_ms"],
            "TK-2 / BERT-Base": ratio["ratio"],
        }
        for file, result in results.items()
        for ratio in speed_ratios(result["results"], FAST, SLOW)
    ]
    columns = ["file", "device", "date", "dtype", "batch", "batching", "execution"]
    if not records:
        return pd.DataFrame(columns=[*columns, "TK-2 docs/ms", "BERT-Base docs/ms", "TK-2 / BERT-Base"])
    return pd.DataFrame(records).sort_values(["device", "date", "file", *columns[3:]], ignore_index=True)


def run_benchmark(
    names: Sequence[str],
    inputs: BenchmarkInputs,
    device: torch.device,
    settings: SpeedSettings | None = None,
    batch_sizes: Sequence[int] | None = None,
    bucketings: Sequence[bool] | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Time every architecture of ``names`` on ``inputs`` under every dtype of ``settings.dtypes`` (and batch size
    of ``batch_sizes``, one for every family, and bucketing of ``bucketings``; by default the settings' own).

    Returns ``{"environment", "device", "settings", "peak_gflops", "results": [row, …], "ratios"}``
    (JSON-ready): with ``settings.roofline``, the matmul peak of each dtype (:mod:`lib.evaluation.roofline`)
    and each row's fraction of it; ``ratios`` are TK-2 / BERT-Base where both were timed alike.
    """
    settings = settings or SpeedSettings()
    for name in names:
        architecture(name)
    used = [pid for qid in inputs.first_stage for pid in inputs.first_stage[qid]]
    tokenizers = default_tokenizers([inputs.texts[pid] for pid in used if pid in inputs.texts])
    sizes = (
        [dict(settings.batch_sizes)] if not batch_sizes else [{"word": size, "wordpiece": size} for size in batch_sizes]
    )
    variants = [
        settings.replace(batch_sizes=size, bucketed=bucketed)
        for size in sizes
        for bucketed in (bucketings if bucketings is not None else [settings.bucketed])
    ]
    dtypes = settings.dtypes
    peaks = {dtype: matmul_peak_gflops(device, DTYPES[dtype]) for dtype in dtypes} if settings.roofline else {}
    jobs = [(name, dtype, variant) for variant in variants for dtype in dtypes for name in names]
    rows = [
        time_architecture(name, inputs, tokenizers, device, dtype, variant, peak_gflops=peaks.get(dtype))
        for name, dtype, variant in tqdm(jobs, desc="timing", disable=not progress)
    ]
    return {
        "environment": environment(),
        "device": device_name(device),
        "settings": {**asdict(settings), "batch_sizes": dict(settings.batch_sizes)},
        "peak_gflops": peaks,
        "results": rows,
        "ratios": speed_ratios(rows),
    }
