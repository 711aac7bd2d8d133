"""Re-ranking speed: documents scored per millisecond (TK paper §5.2, Table 2's "Docs./ms") and the
latency of re-ranking one query's candidates.

Scoring time only: the inputs are tokenised and moved to the device beforehand, a warm-up pass is
excluded, CUDA work is synchronised before every clock read, and the median of several repetitions
is reported together with the device, dtype, torch version and batch size. The inputs are real:
:func:`candidate_pairs` takes (query, passage) pairs from a first-stage run in rank order and
:func:`encode_pairs` cuts them at the paper's caps (30 / 200 tokens), so the lengths, and the padding
of each batch, are those a re-ranker meets.
"""

from __future__ import annotations

import itertools
import platform
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from lib.core.types import ranking_from_run
from lib.representations.text import DOC_MAX_LENGTH, QUERY_MAX_LENGTH

Tensors = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]


@dataclass(frozen=True)
class Throughput:
    """One throughput measurement (``docs_per_ms`` is the median over ``repetitions``)."""

    docs_per_ms: float
    milliseconds_per_batch: float
    documents: int
    batch_size: int
    repetitions: int
    device: str
    dtype: str
    torch_version: str
    #: Whether the batches were bucketed by passage length (:func:`scoring_batches`).
    bucketed: bool = True
    #: How many rows the timed batches were spread over (:func:`spread_batches`; ``documents`` if all).
    sampled_from: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux), else what :mod:`platform` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_name(device: torch.device) -> str:
    """A readable device name: the GPU's name, or the CPU's with the number of torch threads."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"{cpu_model()} CPU ({torch.get_num_threads()} threads)"


def _synchronise(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def median_ms(work: Callable[[], Any], device: torch.device, repetitions: int, warmup: int) -> float:
    """The median wall time of ``work()`` in ms over ``repetitions`` runs, after ``warmup`` untimed runs — the one
    repetition rule of every latency the book compares (:mod:`lib.evaluation.clock`)."""
    if repetitions < 1 or warmup < 0:
        raise ValueError(f"parameters 'repetitions' >= 1 and 'warmup' >= 0 required, got {repetitions}, {warmup}")
    for _ in range(warmup):
        work()
    _synchronise(device)
    timings = []
    for _ in range(repetitions):
        start = time.perf_counter()
        work()
        _synchronise(device)
        timings.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(timings)


def _dtype_name(model: torch.nn.Module, dtype: torch.dtype | None) -> str:
    return str(dtype or next(model.parameters()).dtype).replace("torch.", "")


def scoring_batches(tensors: Tensors, batch_size: int, bucketed: bool = True) -> list[tuple[torch.Tensor, Tensors]]:
    """The batches a re-ranker scores: ``(rows, (query_ids, query_mask, doc_ids, doc_mask))`` per batch.

    ``bucketed`` (the book's re-ranking, :func:`lib.reranking.scoring.score_candidates`): the rows are
    sorted by passage length and each batch is cut to its own longest query and passage, so little
    padding is computed. Otherwise the rows stay in first-stage rank order and every batch keeps the
    padding of the longest passage of all (how the benchmark batched before). The lengths are known
    from the tokenizer before scoring, so this is done once, outside any timing.
    """
    if batch_size < 1:
        raise ValueError(f"parameter 'batch_size' must be >= 1, got {batch_size}")
    query_ids, query_mask, doc_ids, doc_mask = tensors
    doc_lengths = doc_mask.sum(dim=1).cpu()
    query_lengths = query_mask.sum(dim=1).cpu()
    order = torch.argsort(doc_lengths, stable=True) if bucketed else torch.arange(doc_ids.shape[0])
    batches = []
    for start in range(0, order.numel(), batch_size):
        rows = order[start : start + batch_size]
        if bucketed:
            longest_query = max(1, int(query_lengths[rows].max()))
            longest_doc = max(1, int(doc_lengths[rows].max()))
        else:
            longest_query, longest_doc = query_ids.shape[1], doc_ids.shape[1]
        on_device = rows.to(doc_ids.device)
        batch = (query_ids[on_device], query_mask[on_device], doc_ids[on_device], doc_mask[on_device])
        batches.append(
            (
                on_device,
                (
                    batch[0][:, :longest_query].contiguous(),
                    batch[1][:, :longest_query].contiguous(),
                    batch[2][:, :longest_doc].contiguous(),
                    batch[3][:, :longest_doc].contiguous(),
                ),
            )
        )
    return batches


def spread_batches(
    batches: Sequence[tuple[torch.Tensor, Tensors]], documents: int
) -> list[tuple[torch.Tensor, Tensors]]:
    """Whole batches holding about ``documents`` rows, spread evenly over ``batches`` (all of them if fewer).

    Bucketed batches are sorted by passage length, so evenly spread batches have the length
    distribution of all rows: a slow model timed on a few of them costs what it would on all of them.
    """
    if documents < 1:
        raise ValueError(f"parameter 'documents' must be >= 1, got {documents}")
    size = max(int(batches[0][0].numel()), 1)
    count = min(len(batches), -(-documents // size))
    step = len(batches) / count
    return [batches[int(i * step + step / 2)] for i in range(count)]


def timed_batches(
    tensors: Tensors, batch_size: int, bucketed: bool = True, documents: int | None = None
) -> list[tuple[torch.Tensor, Tensors]]:
    """:func:`scoring_batches` of ``tensors``, then :func:`spread_batches` to ``documents`` rows if given."""
    batches = scoring_batches(tensors, batch_size, bucketed)
    return batches if documents is None else spread_batches(batches, documents)


def score_batches(
    model: torch.nn.Module, batches: Sequence[tuple[torch.Tensor, Tensors]], dtype: torch.dtype | None = None
) -> torch.Tensor:
    """Score :func:`scoring_batches`' batches (inference mode, autocast to ``dtype``): one score per row, in row order.

    With a sample of the batches (:func:`spread_batches`), the scores of the sampled rows, in row order.
    """
    device = batches[0][1][2].device
    with torch.inference_mode(), torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
        scores = torch.cat([model(*batch).float() for _, batch in batches])
        rows = torch.cat([indices for indices, _ in batches])
        return scores[torch.argsort(rows)]


def measure_throughput(
    model: torch.nn.Module,
    tensors: Tensors,
    batch_size: int = 256,
    repetitions: int = 5,
    warmup: int = 1,
    dtype: torch.dtype | None = None,
    bucketed: bool = True,
    documents: int | None = None,
) -> Throughput:
    """Time ``model`` scoring the (already tokenised) pairs of ``tensors`` (``query_ids, query_mask, doc_ids,
    doc_mask``, as :func:`encode_pairs` gives them).

    All tensors must already be on the model's device. ``dtype`` (e.g. ``torch.bfloat16``) runs the
    scoring under autocast; ``None`` keeps the model's own precision. ``bucketed``: batches of similar
    passage lengths, each cut to its longest (:func:`scoring_batches`); else rank order, every batch
    padded to the longest passage of all rows. ``documents``: time only whole batches holding about
    that many rows, spread evenly over all (:func:`spread_batches`); ``None``: every row.
    """
    batches = timed_batches(tensors, batch_size, bucketed, documents)
    doc_ids = tensors[2]
    device = doc_ids.device
    rows = sum(int(indices.numel()) for indices, _ in batches)
    model.eval()
    milliseconds = median_ms(lambda: score_batches(model, batches, dtype), device, repetitions, warmup)
    return Throughput(
        docs_per_ms=rows / milliseconds,
        milliseconds_per_batch=milliseconds / len(batches),
        documents=rows,
        sampled_from=int(doc_ids.shape[0]),
        batch_size=batch_size,
        repetitions=repetitions,
        device=device_name(device),
        dtype=_dtype_name(model, dtype),
        torch_version=torch.__version__,
        bucketed=bucketed,
    )


@dataclass(frozen=True)
class Latency:
    """The time to re-rank one query's ``candidates``: score them all, then sort (median over ``repetitions``).

    ``measured`` is False when the time was not measured but estimated as ``candidates / docs_per_ms``
    (a model too slow to run that many candidates in the time the caller allowed); ``repeated`` is True
    when the query has fewer distinct candidates and they were repeated to reach ``candidates``.
    """

    candidates: int
    milliseconds: float
    measured: bool
    repeated: bool
    batch_size: int
    device: str
    dtype: str


def measure_latency(
    model: torch.nn.Module,
    tensors: Tensors,
    batch_size: int = 256,
    repetitions: int = 3,
    warmup: int = 1,
    dtype: torch.dtype | None = None,
    repeated: bool = False,
    bucketed: bool = True,
) -> Latency:
    """Time re-ranking one query: score every row of ``tensors`` (one query's candidates), then sort the scores.

    The rows are scored in batches of ``batch_size`` (:func:`scoring_batches`, bucketed by passage
    length unless ``bucketed`` is False) and the scores, back in candidate order, are sorted on the
    device, as a re-ranker answering one query does.
    """
    batches = scoring_batches(tensors, batch_size, bucketed)
    device = tensors[2].device
    model.eval()

    def rerank_once() -> torch.Tensor:
        return torch.argsort(score_batches(model, batches, dtype), descending=True)

    milliseconds = median_ms(rerank_once, device, repetitions, warmup)
    return Latency(
        candidates=int(tensors[2].shape[0]),
        milliseconds=milliseconds,
        measured=True,
        repeated=repeated,
        batch_size=batch_size,
        device=device_name(device),
        dtype=_dtype_name(model, dtype),
    )


def estimated_latency(candidates: int, throughput: Throughput, repeated: bool = False) -> Latency:
    """A latency not measured but estimated from a throughput: ``candidates / docs_per_ms`` (``measured=False``)."""
    if candidates < 0:
        raise ValueError(f"parameter 'candidates' must be >= 0, got {candidates}")
    return Latency(
        candidates=candidates,
        milliseconds=candidates / throughput.docs_per_ms,
        measured=False,
        repeated=repeated,
        batch_size=throughput.batch_size,
        device=throughput.device,
        dtype=throughput.dtype,
    )


def candidate_pairs(
    first_stage: Mapping[str, Mapping[str, float]],
    queries: Mapping[str, str],
    texts: Mapping[str, str],
    count: int,
    qid: str | None = None,
) -> tuple[list[tuple[str, str]], bool]:
    """``count`` real (query text, passage text) pairs in first-stage rank order, and whether pairs repeat.

    With ``qid`` the pairs are that query's candidates (one query's re-ranking); otherwise the
    candidates of every query in turn (queries in the run's order). When there are fewer pairs than
    ``count`` they are repeated in the same order, and the flag says so. A query or passage missing
    from ``queries`` / ``texts`` is a ``KeyError`` naming it.
    """
    if count < 1:
        raise ValueError(f"parameter 'count' must be >= 1, got {count}")
    if qid is not None and qid not in first_stage:
        raise KeyError(f"query {qid!r} is not in the first-stage run")
    qids = [qid] if qid is not None else list(first_stage)
    pairs = []
    for query in qids:
        if query not in queries:
            raise KeyError(f"query {query!r} of the first-stage run has no text")
        for pid in ranking_from_run(first_stage[query]):
            if pid not in texts:
                raise KeyError(f"passage {pid!r} (query {query!r}) has no text")
            pairs.append((queries[query], texts[pid]))
    if not pairs:
        raise ValueError("the first-stage run holds no candidates")
    return list(itertools.islice(itertools.cycle(pairs), count)), len(pairs) < count


def encode_pairs(
    tokenizer: Any,
    pairs: Sequence[tuple[str, str]],
    device: torch.device | str = "cpu",
    max_query_length: int = QUERY_MAX_LENGTH,
    max_doc_length: int = DOC_MAX_LENGTH,
) -> Tensors:
    """Tokenise (query, passage) pairs with the book's tokenizer contract at the paper's caps, on ``device``."""
    query_ids, query_mask = tokenizer.encode([query for query, _ in pairs], max_query_length)
    doc_ids, doc_mask = tokenizer.encode([doc for _, doc in pairs], max_doc_length)
    return tuple(tensor.to(device) for tensor in (query_ids, query_mask, doc_ids, doc_mask))
