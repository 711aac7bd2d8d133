"""Re-ranking speed of the paper-size architectures: ``python -m benchmarks.throughput``.

Measures documents per millisecond (TK paper Table 2, "Docs./ms") and the latency of re-ranking one
query's 100 and 1,000 candidates for TK-1/2/3, KNRM, Conv-KNRM and BERT-cat of BERT-Base / BERT-Large
sizes (random weights: speed does not depend on them; :mod:`lib.models.paper_size`), on real TREC DL
candidates (:mod:`lib.evaluation.speed_benchmark`), and writes one JSON file. Examples::

    python -m benchmarks.throughput --device cpu                       # this machine, float32
    python -m benchmarks.throughput --device cuda --dtype float32 bfloat16 float16 \\
        --batch-sizes 64 256 1024 --out benchmarks/results/h100-$(date +%F).json

Batches are bucketed by passage length (as the book re-ranks; ``--batching rank-order`` times the
rank-order, fully padded batches too, for a before/after in one run). Each row also gets the model's
GFLOP per document and the fraction of the machine's matmul peak it reaches in that dtype (a roofline
reading, :mod:`lib.evaluation.roofline`), and the JSON gets TK-2 / BERT-Base for every setting timing
both. The data must be converted first (``make data``). Results go under ``benchmarks/results/`` with
the device and date in the file name; chapter 3 shows every JSON file found there.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
from pathlib import Path

import torch

from lib.core.atomic import write_json
from lib.core.device import resolve_device
from lib.core.profiles import SpeedSettings
from lib.data import book_texts, load_queries, load_run
from lib.evaluation.speed_benchmark import DTYPES, BenchmarkInputs, run_benchmark
from lib.models.paper_size import ARCHITECTURES

#: Where committed results live (chapter 3 reads them).
RESULTS_DIR = Path(__file__).resolve().parent / "results"
#: The paper-size architectures timed by default (the book's small BERT only on request).
DEFAULT_MODELS = ("knrm", "conv-knrm", "tk1", "tk2", "tk3", "bert-base", "bert-large")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.throughput", description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto (default)")
    parser.add_argument("--dtype", nargs="+", default=["float32"], choices=sorted(DTYPES), help="autocast dtypes")
    parser.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS), choices=sorted(ARCHITECTURES))
    parser.add_argument("--batch-sizes", nargs="+", type=int, help="batch sizes for every model (default 256/32)")
    parser.add_argument("--set", default="dl19", help="query set whose first-stage candidates are the inputs")
    parser.add_argument("--first-stage", default="bm25", help="the first-stage run whose candidates are timed")
    parser.add_argument("--queries", type=int, default=43, help="how many of the set's queries to draw pairs from")
    parser.add_argument("--target-seconds", type=float, default=2.0, help="time per repetition to aim for")
    parser.add_argument("--max-documents", type=int, default=4096)
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--max-latency-seconds", type=float, default=60.0, help="longer latencies are estimated")
    parser.add_argument("--compile", action="store_true", help="torch.compile each model (warm-up compiles)")
    parser.add_argument(
        "--batching", nargs="+", default=["bucketed"], choices=["bucketed", "rank-order"],
        help="batches bucketed by passage length (default) and/or in rank order, fully padded",
    )  # fmt: skip
    parser.add_argument("--threads", type=int, help="torch CPU threads (default: torch's)")
    parser.add_argument("--out", type=Path, help="JSON file (default: benchmarks/results/<device>-<date>.json)")
    args = parser.parse_args(argv)
    for name in ("queries", "max_documents", "repetitions"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    run = load_run(args.set, args.first_stage)
    first_stage = {qid: run[qid] for qid in list(run)[: args.queries]}
    defaults = SpeedSettings()
    settings = SpeedSettings(
        probe_documents=min(defaults.probe_documents, args.max_documents),
        min_documents=min(defaults.min_documents, args.max_documents),
        max_documents=args.max_documents,
        target_seconds=args.target_seconds,
        repetitions=args.repetitions,
        max_latency_seconds=args.max_latency_seconds,
        dtypes=tuple(args.dtype),
        compile_model=args.compile,
    )
    result = run_benchmark(
        args.models,
        BenchmarkInputs(first_stage, load_queries(args.set), book_texts()),
        device,
        settings=settings,
        batch_sizes=args.batch_sizes,
        bucketings=[batching == "bucketed" for batching in args.batching],
    )
    result["inputs"] = {"set": args.set, "first_stage": args.first_stage, "queries": len(first_stage)}
    out = args.out or RESULTS_DIR / f"{_slug(result['device'])}-{dt.date.today().isoformat()}.json"
    write_json(out, result)
    for row in result["results"]:
        estimated = "" if row["latency_1000_measured"] else " (estimated)"
        batching = "bucketed" if row["bucketed"] else "rank order"
        print(
            f"{row['label']:<28} {row['dtype']:<9} batch {row['batch_size']:>4} {batching:<10} {row['execution']}: "
            f"{row['docs_per_ms']:10.4f} docs/ms ({row['fraction_of_peak']:.0%} of the matmul peak), "
            f"1,000 candidates {row['latency_1000_ms']:10.1f} ms{estimated}"
        )
    for ratio in result["ratios"]:
        print(f"TK-2 / BERT-Base, {ratio['dtype']}, batch {ratio['batch_size']}: {ratio['ratio']:.1f}x")
    print(f"written: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
