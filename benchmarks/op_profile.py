"""Where a paper-size architecture's scoring time goes: ``python -m benchmarks.op_profile``.

:mod:`benchmarks.throughput` says how fast a model scores; this says why. It scores the same real pairs (BM25's
DL19 candidates, length-bucketed batches, :mod:`lib.evaluation.speed_benchmark`) with the same random-weight model
(:mod:`lib.models.paper_size`) under autocast, optionally compiled, warms up, then records ``--steps`` passes over
the batches with ``torch.profiler`` and writes the operators sorted by their own device time (the kernels on a
GPU, the operators on a CPU) as a text table, plus the total wall time per pass and per document. Example::

    python -m benchmarks.op_profile --device cuda --model tk2 --dtype bfloat16 --batch-size 1024 \\
        --out benchmarks/results/profiles/tk2-nvidia-h100.txt
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from lib.core.atomic import write_text
from lib.core.device import resolve_device
from lib.data import book_texts, load_queries, load_run
from lib.evaluation.efficiency import device_name, encode_pairs, score_batches, scoring_batches
from lib.evaluation.speed_benchmark import DTYPES, BenchmarkInputs, default_tokenizers
from lib.models.paper_size import ARCHITECTURES, architecture, build_timing_model


def _synchronise(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def profile_table(args: argparse.Namespace) -> str:
    """The profiler's table of ``args.model`` scoring ``args.documents`` real pairs, with a header of timings."""
    device = resolve_device(args.device)
    run = load_run("dl19", "bm25")
    first_stage = {qid: run[qid] for qid in list(run)[:43]}
    inputs = BenchmarkInputs(first_stage, load_queries("dl19"), book_texts())
    tokenizer = default_tokenizers([inputs.texts[pid] for qid in first_stage for pid in first_stage[qid]])[
        architecture(args.model).family
    ]
    pairs, _ = inputs.pairs(args.documents)
    batches = scoring_batches(encode_pairs(tokenizer, pairs, device), args.batch_size)
    model = build_timing_model(args.model, vocab_size=len(tokenizer)).to(device)
    runnable = torch.compile(model) if args.compile else model
    dtype = DTYPES[args.dtype]
    for _ in range(3):  # warm-up (and compilation)
        score_batches(runnable, batches, dtype)
    _synchronise(device)
    start = time.perf_counter()
    for _ in range(args.steps):
        score_batches(runnable, batches, dtype)
    _synchronise(device)
    seconds = (time.perf_counter() - start) / args.steps
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as recorded:
        for _ in range(args.steps):
            score_batches(runnable, batches, dtype)
        _synchronise(device)
    sort_by = "self_cuda_time_total" if device.type == "cuda" else "self_cpu_time_total"
    documents = sum(int(rows.numel()) for rows, _ in batches)
    header = (
        f"{args.model} on {device_name(device)}, {args.dtype}, {'compiled' if args.compile else 'eager'}, "
        f"{len(batches)} batches of up to {args.batch_size} ({documents} documents): "
        f"{seconds * 1000:.2f} ms per pass, {documents / (seconds * 1000):.1f} docs/ms "
        f"(unprofiled; the table covers {args.steps} passes)\n\n"
    )
    return header + recorded.key_averages().table(sort_by=sort_by, row_limit=args.rows, max_name_column_width=70)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.op_profile", description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto (default)")
    parser.add_argument("--model", default="tk2", choices=sorted(ARCHITECTURES))
    parser.add_argument("--dtype", default="bfloat16", choices=sorted(DTYPES))
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--documents", type=int, default=4096, help="real pairs scored per pass")
    parser.add_argument("--steps", type=int, default=5, help="passes timed, and passes profiled")
    parser.add_argument("--rows", type=int, default=30, help="operators in the table")
    parser.add_argument("--compile", action="store_true", help="torch.compile the model first")
    parser.add_argument("--out", type=Path, required=True, help="the text file to write")
    args = parser.parse_args(argv)
    for name in ("batch_size", "documents", "steps", "rows"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    table = profile_table(args)
    write_text(args.out, table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
