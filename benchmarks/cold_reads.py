"""The stored regime with its index out of memory: ``python -m benchmarks.cold_reads``.

Does the stored regime still win when its index no longer sits in memory? Chapter 3's stored regime
(:mod:`lib.evaluation.regimes`) reads the candidates' vectors from an index of the timed queries' candidates alone,
which the page cache holds after the warm-up. This benchmark times the same query-time work
(:func:`lib.evaluation.regimes.stored_rerank`: the read, the query encoded once, the scoring, the sort) against an
index of a collection's size on disk:

- **the index**: the passages of the first ``--queries`` DL19 queries' BM25 candidates encoded for real by the model
  (:func:`lib.reranking.passage_index.build_indexes`), then **padded with copies, for timing only** to exactly
  ``--passages`` passages (default 1,000,000): their stored bytes streamed again under new ids ``<pid>#copy<k>``
  (:func:`lib.reranking.passage_index.repeat_index`), nothing encoded twice. The copies are the same passages: the
  index has a collection's bytes and layout, not a collection's contents;
- **the candidates**: each query's first 100 and 1,000 candidates (``--counts``; the book has 100 per query, so
  1,000 repeats them as chapter 3 does), each candidate mapped to a copy of itself drawn at random (``--seed``,
  every repeat of a passage its own copy where there are enough) so that a query's reads land on pages scattered
  over the whole index as a collection's candidates would; one mapping for both states;
- **warm**: the pages in memory — :func:`lib.evaluation.regimes.regime_latencies`, per query one untimed warm-up run
  and the median of ``--repetitions`` timed runs; timed after the cold states, minutes after the index was written,
  so that nothing left of the writing (a write-back; on a virtual disk, the host's) shares the machine with the warm
  runs (timed first, right after writing ColBERT's 10.7 GiB, its warm runs at 100 candidates came out slower than
  its cold, prefetched ones);
- **cold**: before *each* timed run the index is closed (its memory maps dropped: the kernel does not evict a page
  mapped by a live process), every index file is written back and evicted from the page cache with
  ``os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)``, and the index is opened again (the header, pids and
  offsets read back, as a server keeps them in memory; the vectors mapped, not read), in one of three ways
  (:data:`lib.reranking.passage_index.READS`). Eviction is checked with ``mincore(2)`` (through ``ctypes``): the
  share of the vector files' pages still resident when the timed run starts is recorded, and so is the time to read
  one 4 KiB page of the index evicted and resident (the disk's own latency: on a virtual disk a page the guest
  evicted may still sit in the host's cache). The three ways, each a state:

  - **cold** (``read-around``): the kernel's default map — a page fault may read the kernel's read-around window,
    the disk's ``read_ahead_kb`` (recorded; 8 MiB on the book's virtual disk), around the page it needs;
  - **cold-random** (``random``): mapped ``madvise(MADV_RANDOM)`` — a fault reads its page alone, one fault after
    the other;
  - **cold-prefetched** (``prefetched``, the library's serving): mapped for random reads, and every candidate's rows
    asked for at once (``madvise(MADV_WILLNEED)``, :meth:`lib.reranking.passage_index.PassageIndex.prefetch`) before
    the query is encoded, so that the disk reads them in parallel, under the query's encoding.

Three models by default, built with untrained weights as :mod:`benchmarks.regimes` builds them (speed does not depend
on the weights) and served on chapter 3's clock (:func:`lib.evaluation.clock.on_the_clock`): TK-BERT-6 from a
product-quantised index (``tk-bert6-pq``: ``--pq`` one-byte codes per vector, the quantiser fitted on the
candidates' own vectors as :func:`benchmarks.regimes.candidates_quantiser` fits it), TK-BERT-6 from an int8 index
(``tk-bert6``) and ColBERT from an int8 index (``colbert``); ``--models`` names any storable model of the registry,
``<name>-pq`` for its product-quantised index. Each model's padded index is built, timed and deleted before the
next one's (a temporary folder under ``--index-dir``): at a million passages TK-BERT-6's int8 index alone is about
33 GB.

The JSON records the environment, the clock, the settings (``--note``: what else ran on the machine) and per model:
the index's bytes on disk and per passage, its build (the real passages' encoding, the copies' writing), each
state's median latency at each count with its spread (max / min of the per-query medians), cold / warm, what the
served read's requests alone cost warm (``prefetch_ms_<count>``: the warm state's share of prefetching), and the
index's size projected to MS MARCO's 8,841,823 passages beside ColBERTv2's published 25 GiB at 2 bits per dimension
(Santhanam et al., NAACL 2022: :data:`lib.evaluation.cold_reads.COLBERTV2_MSMARCO`). Chapter 3 reads every committed
file with :func:`lib.evaluation.cold_reads.committed_cold_reads`. Example::

    python -m benchmarks.cold_reads --device cpu --out benchmarks/results/cold/amd-epyc-cpu-2-threads-$(date +%F).json
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import functools
import mmap
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from benchmarks.gpu_check import build
from benchmarks.regimes import candidates_quantiser, timed_queries, tokenizers
from lib.core.atomic import write_json
from lib.core.device import autocast, resolve_device
from lib.evaluation.clock import clock_header, on_the_clock
from lib.evaluation.cold_reads import COLBERTV2_MSMARCO, GIB, MSMARCO_PASSAGES, projected_bytes
from lib.evaluation.efficiency import device_name, median_ms
from lib.evaluation.regimes import TimedQueries, Timing, candidates_of, regime_latencies, stored_rerank
from lib.evaluation.speed_benchmark import environment
from lib.evaluation.stored_latency import is_precomputable
from lib.models.registry import MODELS
from lib.representations.text import QUERY_MAX_LENGTH
from lib.reranking.passage_index import PQ, READS, ROW_FILES, PassageIndex, build_indexes, load_index, repeat_index
from lib.reranking.product_quantisation import pq_name

#: The models timed by default: the product-quantised TK-BERT-6, TK-BERT-6 int8, ColBERT int8.
DEFAULT_MODELS = ("tk-bert6-pq", "tk-bert6", "colbert")
#: The stored dtype of a model named without ``-pq``.
PLAIN_DTYPE = "int8"
#: How the JSON labels the padded index.
PADDING = (
    "padded with copies, for timing only: the real passages' stored vectors written again under new ids "
    "(<pid>#copy<k>); the index has a collection's size and layout, not a collection's contents"
)
#: How the JSON describes the eviction before a cold run.
EVICTION = (
    "before each cold timed run: the index closed (memory maps dropped), every index file fsync'ed and evicted with "
    "os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED), the index opened again (header, pids, offsets read; vectors "
    "mapped, not read); residency checked with mincore(2)"
)
#: The cold states and how each maps the index (:data:`lib.reranking.passage_index.READS`).
COLD_STATES = {"cold": "read-around", "cold-random": "random", "cold-prefetched": "prefetched"}
#: The states timed, as the JSON describes them.
STATES = {
    "warm": "the index's pages in memory, served as the library serves it (prefetched), timed after the cold states: "
    "per query 1 untimed warm-up run, then the timed runs",
    **{state: f"every timed run after the eviction, {reads}: {READS[reads]}" for state, reads in COLD_STATES.items()},
}
#: The largest share of an index's vector pages resident after an eviction that still counts as cold (else warned).
EVICTED_AT_MOST = 0.01
#: Disk space kept free beyond a padded index's size.
SPARE_BYTES = 2 * GIB
PAGE = mmap.PAGESIZE


def served(name: str) -> tuple[str, str]:
    """A ``--models`` name as ``(registry name, stored dtype)``: ``<name>-pq`` a product-quantised index, any other
    name an int8 one (argparse's type: an unknown model is a usage error)."""
    model, dtype = (name[: -len(pq_name(""))], PQ) if name.endswith(pq_name("")) else (name, PLAIN_DTYPE)
    if model not in MODELS:
        raise argparse.ArgumentTypeError(f"unknown model {name!r}: a registry name or <name>-pq, one of {list(MODELS)}")
    return model, dtype


def evict(folder: Path) -> None:
    """Every file of the index ``folder`` written back and dropped from the page cache (``POSIX_FADV_DONTNEED``).
    A page mapped by a live process is not dropped: close the index first."""
    for path in folder.iterdir():
        descriptor = os.open(path, os.O_RDONLY)
        try:
            os.fsync(descriptor)
            os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(descriptor)


def resident_share(paths: Sequence[Path]) -> float | None:
    """The share of ``paths``' pages in the page cache, from ``mincore(2)`` over a read-only map of each (no page is
    read); ``None`` where ``mincore`` cannot be called (not Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
    except (OSError, AttributeError):
        return None
    resident = pages = 0
    for path in (path for path in paths if path.is_file() and path.stat().st_size):
        size = path.stat().st_size
        flags = np.zeros(-(-size // PAGE), dtype=np.uint8)
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), size, prot=mmap.PROT_READ) as mapped:
            view = np.frombuffer(mapped, dtype=np.uint8)
            code = libc.mincore(view.ctypes.data, size, flags.ctypes.data_as(ctypes.POINTER(ctypes.c_ubyte)))
            del view  # the map closes only once no array points into it
        if code != 0:
            return None
        resident, pages = resident + int((flags & 1).sum()), pages + len(flags)
    return resident / pages if pages else 0.0


def read_ahead_kb(folder: Path) -> int | None:
    """The read-ahead window (KiB) of the disk holding ``folder`` (``/sys/dev/block/<major>:<minor>``, its own queue
    or, for a partition, its disk's): what a fault in a memory map reads around its page. ``None`` where unknown."""
    device = os.stat(folder).st_dev
    block = Path(f"/sys/dev/block/{os.major(device)}:{os.minor(device)}")
    for queue in (block / "queue", block / ".." / "queue"):
        if (queue / "read_ahead_kb").is_file():
            return int((queue / "read_ahead_kb").read_text())
    return None


def page_read_us(path: Path, reads: int = 256, seed: int = 0) -> dict[str, float]:
    """The disk's own latency under the index: the median µs of reading one 4 KiB page of ``path`` at ``reads``
    random places, evicted first, then the same pages again, resident."""
    offsets = np.random.default_rng(seed).integers(0, max(path.stat().st_size // PAGE, 1), reads) * PAGE
    evict(path.parent)
    descriptor = os.open(path, os.O_RDONLY)
    try:
        timings = {}
        for state in ("evicted", "resident"):
            each = []
            for offset in offsets.tolist():
                start = time.perf_counter()
                os.pread(descriptor, PAGE, offset)
                each.append((time.perf_counter() - start) * 1e6)
            timings[state] = statistics.median(each)
        return timings
    finally:
        os.close(descriptor)


def spread_candidates(timed: TimedQueries, index: PassageIndex, real: int, count: int, seed: int) -> dict[str, Any]:
    """Each timed query's first ``count`` candidates (:func:`lib.evaluation.regimes.candidates_of`) mapped to copies of
    themselves in the padded ``index`` (whose first ``real`` passages are the real ones, repeated in that order),
    drawn at random with ``seed`` — distinct copies for the repeats of a passage where it has enough — as a run
    whose scores keep the candidates' order: ``{qid: {copy: score}}``."""
    rng = np.random.default_rng(seed)
    run = {}
    for qid in timed.qids:
        slots = candidates_of(timed.first_stage, qid, count)
        picks = {}
        for pid, needed in collections.Counter(slots).items():
            row = index.row_of[pid]
            available = (len(index) - 1 - row) // real + 1  # copy k of row r is row k * real + r
            picks[pid] = [int(copy) * real + row for copy in rng.choice(available, needed, replace=needed > available)]
        run[qid] = {index.pids[picks[pid].pop()]: float(count - slot) for slot, pid in enumerate(slots)}
    return run


def cold_run(model: torch.nn.Module, query: tuple[torch.Tensor, torch.Tensor], folder: Path, pids: Sequence[str],
             batch_size: int, reads: str) -> tuple[float, float | None]:  # fmt: skip
    """One cold timed run (ms) of ``pids`` from the index ``folder``, and the share of its vector files' pages still
    resident when it started: the index evicted (:func:`evict`), opened again with its rows mapped as ``reads``
    says (:func:`lib.reranking.passage_index.load_index`), then timed. The caller holds no open copy of the index (a
    live map keeps its pages)."""
    evict(folder)
    index = load_index(folder, reads)
    share = resident_share([folder / name for name in ROW_FILES])
    device = next(model.parameters()).device
    return median_ms(functools.partial(stored_rerank, model, query, index, pids, batch_size), device, 1, 0), share


def cold_latencies(
    model: torch.nn.Module, tokenizer: Any, timed: TimedQueries, timing: Timing, folder: Path, reads: str
) -> tuple[dict[int, dict[str, Any]], float | None]:
    """Per count: :func:`lib.evaluation.regimes.regime_latencies`' summary with every timed run cold
    (:func:`cold_run`; no warm-up run: it would warm the pages), and the largest resident share any run started
    with."""
    device = next(model.parameters()).device
    results, shares = {}, []
    for count in sorted(timing.counts):
        per_query = []
        for qid in timed.qids:
            ids, mask = tokenizer.encode([timed.queries[qid]], QUERY_MAX_LENGTH)
            pids = candidates_of(timed.first_stage, qid, count)
            runs = [
                cold_run(model, (ids.to(device), mask.to(device)), folder, pids, timing.batch_size, reads)
                for _ in range(timing.repetitions)
            ]
            per_query.append(statistics.median(ms for ms, _ in runs))
            shares += [share for _, share in runs if share is not None]
        results[count] = {
            "ms": statistics.median(per_query), "spread": max(per_query) / max(min(per_query), 1e-9),
            "queries": len(per_query), "measured": True,
        }  # fmt: skip
    return results, max(shares, default=None)


def prefetch_ms(index: PassageIndex, timed: TimedQueries, timing: Timing) -> dict[str, float]:
    """What the served read's requests cost with the index in memory, the warm state's share of prefetching: per
    count, ``prefetch_ms_<count>``, the median over the timed queries of
    :meth:`lib.reranking.passage_index.PassageIndex.prefetch`'s time for their candidates (one untimed run, then the
    median of the repetitions: the clock's rule)."""
    cpu = torch.device("cpu")
    return {
        f"prefetch_ms_{count}": statistics.median(
            median_ms(functools.partial(index.prefetch, candidates_of(timed.first_stage, qid, count)), cpu,
                      timing.repetitions, 1)
            for qid in timed.qids
        )
        for count in sorted(timing.counts)
    }  # fmt: skip


def _state(latencies: dict[int, dict[str, Any]], warm: dict[int, dict[str, Any]] | None = None) -> dict[str, Any]:
    """A state's latencies as JSON: ``ms_<count>`` and ``spread_<count>`` per count, the queries, and against the
    ``warm`` state's (when given) ``over_warm_<count>``, the ratio of the medians."""
    state: dict[str, Any] = {"queries": next(iter(latencies.values()))["queries"]}
    for count, values in latencies.items():
        state[f"ms_{count}"], state[f"spread_{count}"] = values["ms"], values["spread"]
        if warm is not None:
            state[f"over_warm_{count}"] = values["ms"] / warm[count]["ms"]
    return state


def check_space(source: PassageIndex, folder: Path, passages: int) -> None:
    """Refuse a padded index the disk under ``folder`` cannot hold (with :data:`SPARE_BYTES` to spare)."""
    needed = source.bytes_per_passage * passages + SPARE_BYTES
    free = shutil.disk_usage(folder).free
    if needed > free:
        raise SystemExit(
            f"--passages {passages:,}: the padded {source.dtype} index needs about {needed / GIB:.1f} GiB, "
            f"{free / GIB:.1f} GiB are free under {folder}: lower --passages or choose another --index-dir"
        )


def time_padded(
    model: torch.nn.Module, tokenizer: Any, timed: TimedQueries, timing: Timing, source: PassageIndex,
    folder: Path, args: argparse.Namespace,
) -> dict[str, Any]:  # fmt: skip
    """One model's entry: ``source`` (the real passages' index) padded to ``args.passages`` in ``folder``, its
    candidates spread over it, timed warm and cold, its sizes and the disk's page latency; the padded index deleted."""
    check_space(source, folder.parent, args.passages)
    padded = repeat_index(source, folder, args.passages)
    start = time.perf_counter()
    evict(folder)  # the writes on disk before any timing (no write-back under the clock); the warm-up reads them back
    written = padded.header["seconds"] + time.perf_counter() - start
    run = spread_candidates(timed, padded, len(source), max(timing.counts), args.seed)
    spread = TimedQueries(run, timed.queries, timed.texts, timed.qids)
    entry = {
        "passages": len(padded), "copies": padded.header["copies"], "encoded_passages": len(source),
        "encode_seconds": source.header["seconds"], "write_seconds": written,
        "index_bytes": sum(path.stat().st_size for path in folder.iterdir()),
        "bytes_per_passage": padded.bytes_per_passage, "codebook_bytes": padded.codebook_bytes,
    }  # fmt: skip
    del padded  # its maps closed: the cold runs' eviction must not find them
    colds = {
        state: cold_latencies(model, tokenizer, spread, timing, folder, reads) for state, reads in COLD_STATES.items()
    }
    served = load_index(folder)  # warm last, minutes after the writing: no write-back of it shares the warm runs
    warm = regime_latencies(model, tokenizer, spread, timing, served)
    entry["warm"] = {
        **_state(warm), "resident_share": resident_share([folder / name for name in ROW_FILES]),
        **prefetch_ms(served, spread, timing),
    }  # fmt: skip
    del served
    for state, (cold, share) in colds.items():
        entry[state] = {**_state(cold, warm), "resident_share": share}
        if share is not None and share > EVICTED_AT_MOST:
            print(f"warning: {share:.0%} of the index's pages stayed in memory after the eviction (a memory-backed "
                  f"--index-dir such as tmpfs?): state {state!r} is not cold", file=sys.stderr)  # fmt: skip
    entry.update({
        "page_read_us": page_read_us(folder / "vectors.bin", seed=args.seed),
        "projected_msmarco_bytes": projected_bytes(entry["bytes_per_passage"], entry["codebook_bytes"]),
    })  # fmt: skip
    entry["projected_msmarco_gib"] = entry["projected_msmarco_bytes"] / GIB
    shutil.rmtree(folder)
    return entry


def model_entries(
    name: str, dtypes: Sequence[str], timed: TimedQueries, timing: Timing, folder: Path, args: argparse.Namespace
) -> list[dict[str, Any]]:
    """Registry model ``name``'s entries, one per stored dtype of ``dtypes``: one encoding of the real passages
    written in each dtype, each padded, timed and deleted in turn."""
    device = resolve_device(args.device)
    spec = MODELS[name]
    tokenizer = tokenizers(timed)["word" if spec.family == "word" else "wordpiece"]
    model = on_the_clock(build(spec, len(tokenizer), seed=0).to(device).eval(), device)
    if not is_precomputable(model):
        raise SystemExit(f"--models: {name!r} cannot store its passages, so it has no index to read")
    real = sorted({pid for qid in timed.qids for pid in timed.first_stage[qid]})
    entries = []
    with autocast(device):
        quantiser = candidates_quantiser(model, tokenizer, timed, args.pq) if PQ in dtypes else None
        folders = {dtype: folder / f"{name}-{dtype}-real" for dtype in dtypes}
        built = build_indexes(model, tokenizer, timed.texts, real, folders, progress=False, quantiser=quantiser)
        for dtype in dtypes:
            entry = time_padded(model, tokenizer, timed, timing, built[dtype], folder / f"{name}-{dtype}", args)
            entries.append({"name": pq_name(name) if dtype == PQ else name, "model": name, "dtype": dtype, **entry})
    return entries


def cold_reads(args: argparse.Namespace, timed: TimedQueries) -> dict[str, Any]:
    """Every model of ``args.models`` timed warm and cold; JSON-ready, with the environment and the settings."""
    device = resolve_device(args.device)
    timing = Timing(tuple(args.counts), args.batch_size, args.repetitions)
    by_model: dict[str, list[str]] = {}
    for model, dtype in args.models:
        by_model.setdefault(model, []).append(dtype)
    entries = []
    with tempfile.TemporaryDirectory(dir=args.index_dir) as folder:
        read_ahead = read_ahead_kb(Path(folder))
        for name, dtypes in tqdm(by_model.items(), desc="cold reads", unit="model"):
            entries += model_entries(name, dtypes, timed, timing, Path(folder), args)
    real = len({pid for qid in timed.qids for pid in timed.first_stage[qid]})
    return {
        "environment": environment(),
        "device": device_name(device),
        "clock": clock_header(device, timing.repetitions),
        "settings": {
            "queries": list(timed.qids), "counts": list(timing.counts), "passages": args.passages,
            "real_passages": real, "copies": -(-args.passages // real), "padding": PADDING,
            "repetitions": timing.repetitions, "batch_size": timing.batch_size, "pq_subspaces": args.pq,
            "eviction": EVICTION, "states": STATES, "read_ahead_kb": read_ahead,
            "seed": args.seed, "weights": "untrained (timing only)", "note": args.note,
        },
        "reference": {"msmarco_passages": MSMARCO_PASSAGES, "colbertv2": dict(COLBERTV2_MSMARCO)},
        "models": entries,
    }  # fmt: skip


def parser() -> argparse.ArgumentParser:
    """The command line (module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cold_reads", description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto (default)")
    parser.add_argument("--models", nargs="+", type=served, default=[served(name) for name in DEFAULT_MODELS],
                        metavar="MODEL", help="storable registry models (int8 index) or <model>-pq (pq index); "
                        f"default {' '.join(DEFAULT_MODELS)}")  # fmt: skip
    parser.add_argument("--passages", type=int, default=1_000_000, help="passages of the padded index")
    parser.add_argument("--queries", type=int, default=10, help="DL19 queries timed (the first, in id order)")
    parser.add_argument("--counts", nargs="+", type=int, default=[100, 1000], help="candidates per query")
    parser.add_argument("--batch-size", type=int, default=256, help="stored passages scored at once")
    parser.add_argument("--repetitions", type=int, default=3, help="timed runs per query and state")
    parser.add_argument("--pq", type=int, default=64, metavar="M", help="codes per vector of a <model>-pq index")
    parser.add_argument("--seed", type=int, default=0, help="the draw of each candidate's copy")
    parser.add_argument("--note", default="", help="what else ran on the machine, recorded in the settings")
    parser.add_argument("--index-dir", type=Path, default=None, help="where the temporary indexes go")
    parser.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    return parser


def main(argv: list[str] | None = None) -> int:
    command = parser()
    args = command.parse_args(argv)
    if args.queries < 1 or args.pq < 1 or args.repetitions < 1 or min(args.counts) < 1:
        command.error("--queries, --pq, --repetitions and --counts must be >= 1")
    if args.passages < 1:
        command.error(f"--passages must be >= 1, got {args.passages}")
    if args.index_dir is not None and not args.index_dir.is_dir():
        command.error(f"--index-dir {args.index_dir} is not a folder (the temporary indexes are made inside it)")
    timed = timed_queries(args.queries)
    real = len({pid for qid in timed.qids for pid in timed.first_stage[qid]})
    if args.passages < real:
        command.error(f"--passages ({args.passages:,}) must be at least the {real:,} real passages it pads")
    result = cold_reads(args, timed)
    write_json(args.out, result)
    for entry in result["models"]:
        times = "  ".join(
            f"{count}: warm {entry['warm'][f'ms_{count}']:.1f} / "
            + " / ".join(f"{state} {entry[state][f'ms_{count}']:.1f}" for state in COLD_STATES)
            + " ms"
            for count in args.counts
        )
        print(f"{entry['name']:<12} {entry['index_bytes'] / GIB:6.2f} GiB  {times}  "
              f"MS MARCO {entry['projected_msmarco_gib']:.1f} GiB")  # fmt: skip
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
