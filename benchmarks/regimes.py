"""The two regimes' cost table on any device: ``python -m benchmarks.regimes``.

Chapter 3's question — what a re-ranker costs at query time when it is run *whole* and when its passage side is
*stored* at index time (TK §3; lecture 8, slides 16–27) — measured by :func:`lib.evaluation.regimes.cost_rows` for
every model named, on the BM25 candidates of the first ``--queries`` DL19 queries, on chapter 3's clock
(:mod:`lib.evaluation.clock`: bf16 autocast on a GPU, every model served in bfloat16 on a CPU with native bfloat16,
float32 on one without; the clock is recorded in the JSON). Speed does not depend on trained weights, so the models
are built as :mod:`benchmarks.gpu_check` builds them (MiniLM's real weights for the MiniLM family; a seeded random
embedding matrix of the book's width for the word and piece models): the table runs where the book's checkpoints are
not, e.g. on a lent GPU machine. Each stored index is built into a temporary folder (``--index-dir``); ``--resident``
also times it copied once into the device's memory (the regime *resident*). ``--pq M`` also times each model of
:data:`PQ_MODELS` among them as chapter 3 serves its product-quantised TK (``<model>-pq``: ``M`` one-byte codes per
stored vector, on the same clock), its
codebooks fitted on the timed candidates' own vectors — for timing only: chapter 3 fits them on training
passages. Example::

    TKBOOK_MINILM_COPY=.device/minilm python -m benchmarks.regimes --device cuda --resident --pq 64 \\
        --out benchmarks/results/regimes/nvidia-h100-$(date +%F).json
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from benchmarks.gpu_check import build
from lib.core.atomic import write_json
from lib.core.device import autocast, resolve_device
from lib.data import book_texts, load_queries, load_run
from lib.evaluation.clock import clock_header, on_the_clock
from lib.evaluation.efficiency import device_name
from lib.evaluation.regimes import TimedQueries, Timing, cost_rows
from lib.evaluation.speed_benchmark import environment
from lib.models.registry import MODELS
from lib.representations.bert import WordPieceTokenizer
from lib.representations.pretrained import minilm_folder
from lib.representations.text import DOC_MAX_LENGTH, Vocabulary
from lib.reranking.passage_index import PQ
from lib.reranking.product_quantisation import ProductQuantiser, fit_quantiser, pq_name

#: The models timed by default: BERT-cat (whole only), the MiniLM models that store passages, the TKs.
DEFAULT_MODELS = (
    "bert-cat", "prettr", "colbert", "tk-bert6", "tk-bert6-d64", "tk-bert6-d32", "bi-encoder", "tk2", "tk2-pieces",
    "tk2-sparse",
)  # fmt: skip


#: The models ``--pq`` also times product-quantised (chapter 3's ``regime_pq_model``).
PQ_MODELS = ("tk-bert6",)


def timed_queries(count: int) -> TimedQueries:
    """The first ``count`` DL19 queries (in id order) with BM25's candidates and the book's passages."""
    run = load_run("dl19", "bm25")
    qids = sorted(run)[:count]
    return TimedQueries(run, load_queries("dl19"), book_texts(), qids)


def tokenizers(timed: TimedQueries) -> dict[str, Any]:
    """The word vocabulary of the timed queries and candidates, and MiniLM's word pieces (pieces and MiniLM)."""
    texts = [timed.queries[qid] for qid in timed.qids]
    texts += [timed.texts[pid] for qid in timed.qids for pid in timed.first_stage[qid]]
    return {
        "word": Vocabulary.build(texts, min_count=1),
        "wordpiece": WordPieceTokenizer.from_vocab(minilm_folder() / "vocab.txt"),
    }


def candidates_quantiser(
    model: torch.nn.Module, tokenizer: Any, timed: TimedQueries, subspaces: int, batch_size: int = 32
) -> ProductQuantiser:
    """A product quantiser of ``model``'s stored vectors of the timed candidates themselves (timing only)."""
    pids = sorted({pid for qid in timed.qids for pid in timed.first_stage[qid]})
    device = next(model.parameters()).device
    blocks = []
    with torch.inference_mode():
        for begin in range(0, len(pids), batch_size):
            ids, mask = tokenizer.encode([timed.texts[pid] for pid in pids[begin : begin + batch_size]], DOC_MAX_LENGTH)
            vectors, stored = model.encode_passages(ids.to(device), mask.to(device))
            blocks.append(vectors[stored].float().cpu().numpy())
    return fit_quantiser(np.concatenate(blocks), subspaces, iterations=5)


def cost_table(args: argparse.Namespace) -> dict[str, Any]:
    """Every model of ``args.models`` timed in both regimes; JSON-ready, with the environment and the settings."""
    device = resolve_device(args.device)
    timed = timed_queries(args.queries)
    by_family = tokenizers(timed)
    timing = Timing(tuple(args.counts), args.batch_size, args.repetitions)
    rows = []
    with tempfile.TemporaryDirectory(dir=args.index_dir) as folder:
        for name in tqdm(args.models, desc="regimes", unit="model"):
            spec = MODELS[name]
            tokenizer = by_family["word" if spec.family == "word" else "wordpiece"]
            model = on_the_clock(build(spec, len(tokenizer), seed=0).to(device).eval(), device)
            with autocast(device):
                rows += cost_rows(
                    name, model, tokenizer, timed, timing, Path(folder), tuple(args.dtypes), args.resident
                )
                if args.pq and name in PQ_MODELS:
                    quantiser = candidates_quantiser(model, tokenizer, timed, args.pq)
                    rows += cost_rows(
                        pq_name(name), model, tokenizer, timed, timing, Path(folder), (PQ,),
                        args.resident, whole=False, quantiser=quantiser,
                    )  # fmt: skip
    return {
        "environment": environment(),
        "device": device_name(device),
        "clock": clock_header(device, timing.repetitions),
        "settings": {
            "queries": timed.qids,
            "counts": list(timing.counts),
            "batch_size": timing.batch_size,
            "repetitions": timing.repetitions,
            "dtypes": list(args.dtypes),
            "resident": args.resident,
            "pq_subspaces": args.pq,
            "weights": "untrained (timing only)",
        },  # fmt: skip
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.regimes", description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto (default)")
    parser.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS), choices=list(MODELS))
    parser.add_argument("--queries", type=int, default=10, help="DL19 queries timed (the first, in id order)")
    parser.add_argument("--counts", nargs="+", type=int, default=[10, 100, 1000], help="candidates per query")
    parser.add_argument("--batch-size", type=int, default=256, help="pairs (or stored passages) scored at once")
    parser.add_argument("--repetitions", type=int, default=3, help="timed runs per query, after one warm-up")
    parser.add_argument("--dtypes", nargs="+", default=["float16", "int8"], choices=["float16", "int8"])
    parser.add_argument(
        "--resident", action="store_true", help="also time each index held in the device's memory (regime resident)"
    )
    parser.add_argument(
        "--pq", type=int, default=0, metavar="M",
        help=f"also time {', '.join(PQ_MODELS)} product-quantised in M codes per vector, served as chapter 3 serves it",
    )  # fmt: skip
    parser.add_argument("--index-dir", type=Path, default=None, help="where the temporary indexes go")
    parser.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    args = parser.parse_args(argv)
    if args.queries < 1:
        parser.error("--queries must be >= 1")
    if args.pq < 0:
        parser.error("--pq must be >= 0 (0: no product-quantised row)")
    result = cost_table(args)
    write_json(args.out, result)
    for row in result["rows"]:
        times = "  ".join(f"{count}: {row[f'ms_{count}']:.2f} ms" for count in args.counts)
        print(
            f"{row['model']:<14} {row['regime']:<6} {row['dtype']:<7} {row['bytes_per_passage']:>9.0f} B  {times}  "
            f"peak {row['peak_memory_mb']:.0f} MiB"
        )
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
