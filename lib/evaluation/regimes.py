"""The two regimes of query-time cost: a model run *whole* at query time, and with its passage side *stored*.

The TK paper's thesis is about time budgets (§5.1), and TK is built so that the passage side can be computed at
index time (§3; lecture 8, slides 16–27): at query time only the query is encoded, the stored passage vectors are
read and the interaction and kernels are paid. This module measures both regimes with one clock:

- *whole*: everything at query time, the pairs run through the model in length-bucketed batches
  (:func:`lib.evaluation.efficiency.measure_latency`);
- *stored*: the candidates' passage vectors read from an on-disk index (:mod:`lib.reranking.passage_index`,
  memory-mapped float16 or int8) — **the read is timed** — the query encoded **once per query**
  (``model.encode_query``), then ``model.score_stored`` over chunks of candidates, then the sort;
- *resident* (asked for, on a GPU): the same index copied once into the device's memory before the clock starts
  (:class:`lib.reranking.passage_index.ResidentIndex`), so the read is an indexed gather there — how a server keeps
  ColBERT's or PreTTR's index on its accelerator; on a CPU the stored regime's pages are already in memory after the
  warm-up, so it would measure the same thing.

:func:`regime_latencies` times one model at several candidate counts over real queries: per query, ``repetitions``
timed runs after one untimed warm-up run, the median per query, and over the queries the median and the spread
(max / min of the per-query medians). A count whose timing would take longer than ``Timing.max_seconds`` (BERT-cat
run whole on 1,000 candidates on 2 CPU cores) is estimated from the smaller counts' measurements instead and flagged.
:func:`cost_rows` gives a model's rows of the cost table, one per regime and index precision, with the index's bytes
per passage and its build time; :func:`query_cost` reads a row as a fixed cost per query plus a cost per candidate,
the form :mod:`lib.evaluation.time_budget` draws budgets from.

From the cost table: :func:`ladder_verdict` (chapter 2's :data:`SPEED_BAR` for each TK, run whole and stored),
:func:`compact_table` (the compact TK indexes beside the full one: size, stored latency, nDCG@10 with paired tests
against BM25 and the full TK) and :func:`compact_costs` (what each costs against the full TK and a rival).
:func:`committed_regimes` reads the cost tables ``python -m benchmarks.regimes`` committed (a GPU's, say) into one
frame, :func:`gpu_memory` takes each model's peak GPU memory from it and :func:`resident_table` sets each model's
three regimes side by side where the resident one was timed.
"""

from __future__ import annotations

import functools
import json
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from torch import nn
from tqdm import tqdm

from lib.core.device import peak_memory_mb, reset_peak_memory
from lib.core.types import ranking_from_run
from lib.evaluation.efficiency import candidate_pairs, encode_pairs, measure_latency, median_ms
from lib.evaluation.stored_latency import is_precomputable
from lib.models.kernels import cosine_rows
from lib.representations.text import DOC_MAX_LENGTH, QUERY_MAX_LENGTH
from lib.reranking.passage_index import PQ, PassageIndex, ResidentIndex, build_indexes
from lib.reranking.product_quantisation import ProductQuantiser, cosine_table, stored_cosines

#: The first columns of the cost table (``regimes.csv``); ``ms_<count>`` and ``spread_<count>`` follow, per count.
COLUMNS: tuple[str, ...] = (
    "model", "regime", "dtype", "bytes_per_passage", "vectors_per_passage", "index_seconds", "queries"
)  # fmt: skip


def candidates_of(first_stage: Mapping[str, Mapping[str, float]], qid: str, count: int) -> list[str]:
    """``count`` candidate pids of ``qid`` in first-stage order, repeated in that order when the list is shorter (the
    book has at most 100 candidates per query; 1,000 repeats them, as the whole regime's pairs do)."""
    ranked = ranking_from_run(first_stage[qid])
    if not ranked:
        raise ValueError(f"query {qid!r} has no candidates")
    return [ranked[i % len(ranked)] for i in range(count)]


def stored_scores(
    model: nn.Module,
    query: tuple[torch.Tensor, torch.Tensor],
    index: PassageIndex | ResidentIndex,
    pids: Sequence[str],
    batch_size: int,
) -> torch.Tensor:
    """The stored regime's scoring of one query: ask the disk for ``pids``' stored rows (``index.prefetch``: read in
    parallel while the query is encoded, where they are not in memory), encode the query once, read ``pids``' vectors
    from ``index`` chunk by chunk and score each chunk, ``[len(pids)]`` in ``pids``' order. The chunks take the
    candidates shortest first (their lengths read off the index's offsets), each read padded to its own longest
    passage, so that little of what is read, padded and matched is padding. A model that scores from eq. 4's cosines
    alone (a TK: ``scores_from_match``) reads its chunks unpadded instead: the stored vectors' cosines with the query
    (:func:`lib.models.kernels.cosine_rows`) pooled without padding (``score_rows``), whatever the index's dtype; a
    ``pq`` index is then never decoded: the query's table of dot products with every centroid is computed once and
    each chunk's cosines summed from its codes (Jégou et al.'s asymmetric distance computation,
    :func:`lib.reranking.product_quantisation.stored_cosines`) — the same scores to float rounding (TK-Sparse too: its
    index holds only the terms its gate keeps, scored as TK scores them)."""
    device = next(model.parameters()).device
    from_cosines = getattr(model, "scores_from_match", False)
    with torch.inference_mode():
        index.prefetch(pids)
        query_vectors, query_mask = model.encode_query(query[0], query[1])
        codebooks = None if index.dtype != PQ or not from_cosines else _codebooks(index)
        table = None if codebooks is None else cosine_table(query_vectors, codebooks.to(device))
        order = torch.argsort(torch.as_tensor(index.lengths(pids)), stable=True)
        scores = torch.empty(len(pids), dtype=torch.float32, device=device)
        for start in range(0, len(pids), batch_size):
            chunk_pids = [pids[row] for row in order[start : start + batch_size].tolist()]
            if table is not None:
                codes, lengths = (part.to(device) for part in index.gather_codes(chunk_pids))
                scored = model.score_rows(stored_cosines(table, codes), lengths, query_mask.reshape(-1))
            elif from_cosines:
                rows, lengths = (part.to(device) for part in index.gather_rows(chunk_pids))
                scored = model.score_rows(cosine_rows(query_vectors, rows), lengths, query_mask.reshape(-1))
            else:
                chunk, chunk_mask = index.gather(chunk_pids)
                scored = model.score_stored(query_vectors, query_mask, chunk.to(device), chunk_mask.to(device))
            scores[order[start : start + batch_size].to(device)] = scored.float()
        return scores


def _codebooks(index: PassageIndex | ResidentIndex) -> torch.Tensor:
    """A ``pq`` index's codebooks as a tensor (a resident index's, on its device)."""
    if isinstance(index, ResidentIndex):
        return index.codebooks
    return torch.from_numpy(index.quantiser.codebooks)


def stored_rerank(
    model: nn.Module,
    query: tuple[torch.Tensor, torch.Tensor],
    index: PassageIndex | ResidentIndex,
    pids: Sequence[str],
    batch_size: int,
) -> torch.Tensor:
    """The stored regime's query-time work for one query: :func:`stored_scores`, then the sort; the ranking's order
    of ``pids``."""
    return torch.argsort(stored_scores(model, query, index, pids, batch_size), descending=True)


def stored_run(
    model: nn.Module,
    tokenizer: Any,
    queries: Mapping[str, str],
    first_stage: Mapping[str, Mapping[str, float]],
    index: PassageIndex,
    batch_size: int,
    progress: bool = True,
) -> dict[str, dict[str, float]]:
    """Every candidate of ``first_stage`` scored from ``index`` (:func:`stored_scores`), ``{qid: {pid: score}}``:
    what a stored index ranks, for an index whose vectors differ from the model's own (a ``pq`` index's). A query
    without text or a candidate not in the index is an error naming it."""
    device = next(model.parameters()).device
    scores = {}
    for qid in tqdm(sorted(first_stage), desc="stored scoring", unit="query", disable=not progress):
        if qid not in queries:
            raise KeyError(f"query {qid!r} of the first-stage run has no text")
        pids = sorted(first_stage[qid])
        ids, mask = tokenizer.encode([queries[qid]], QUERY_MAX_LENGTH)
        values = stored_scores(model, (ids.to(device), mask.to(device)), index, pids, batch_size)
        scores[qid] = dict(zip(pids, values.cpu().tolist(), strict=True))
    return scores


@dataclass(frozen=True)
class TimedQueries:
    """What is timed: the queries ``qids`` of ``first_stage`` (their candidates), with their texts and the passages'
    (``texts``: the whole collection, whose size scales an index's build time)."""

    first_stage: Mapping[str, Mapping[str, float]]
    queries: Mapping[str, str]
    texts: Mapping[str, str]
    qids: Sequence[str]


@dataclass(frozen=True)
class Timing:
    """How it is timed: the candidate ``counts``, the scoring ``batch_size``, the timed runs per query
    (``repetitions``, after one untimed warm-up run: :mod:`lib.evaluation.clock`'s rule), the longest a count's
    timing may take (``max_seconds``, projected from the count below it; a longer one is estimated,
    :func:`regime_latencies`) and the candidates' token cap (``max_doc_length``: the paper's 200 for passages;
    chapter 9's documents are longer)."""

    counts: Sequence[int]
    batch_size: int = 256
    repetitions: int = 3
    max_seconds: float = math.inf
    max_doc_length: int = DOC_MAX_LENGTH

    def __post_init__(self) -> None:
        if not self.counts or min(self.counts) < 1 or min(self.batch_size, self.repetitions, self.max_doc_length) < 1:
            raise ValueError(f"timing needs positive counts, batch size, repetitions and token cap, got {self}")
        if not self.max_seconds > 0:
            raise ValueError(f"timing needs max_seconds > 0, got {self}")


def _query_latency(
    model: nn.Module,
    tokenizer: Any,
    timed: TimedQueries,
    timing: Timing,
    index: PassageIndex | ResidentIndex | None,
    qid: str,
    count: int,
) -> float:
    """One query's median latency (ms) over ``count`` candidates: *stored* with ``index``, else *whole*."""
    device = next(model.parameters()).device
    if index is None:
        pairs, repeated = candidate_pairs(timed.first_stage, timed.queries, timed.texts, count, qid)
        tensors = encode_pairs(tokenizer, pairs, device, max_doc_length=timing.max_doc_length)
        return measure_latency(model, tensors, timing.batch_size, timing.repetitions, 1, repeated=repeated).milliseconds
    ids, mask = tokenizer.encode([timed.queries[qid]], QUERY_MAX_LENGTH)
    query = (ids.to(device), mask.to(device))
    pids = candidates_of(timed.first_stage, qid, count)
    work = functools.partial(stored_rerank, model, query, index, pids, timing.batch_size)
    return median_ms(work, device, timing.repetitions, 1)


def _estimate(measured: Mapping[int, float], count: int) -> float:
    """``count``'s latency on the line through the two largest measured counts (proportional from one)."""
    known = sorted(measured)
    if len(known) == 1:
        return measured[known[0]] * count / known[0]
    low, high = known[-2], known[-1]
    slope = max((measured[high] - measured[low]) / (high - low), 0.0)
    return measured[high] + slope * (count - high)


def regime_latencies(
    model: nn.Module,
    tokenizer: Any,
    timed: TimedQueries,
    timing: Timing,
    index: PassageIndex | ResidentIndex | None = None,
) -> dict[int, dict[str, Any]]:
    """Per candidate count: the median over the timed queries of each query's median latency (ms), the spread (max /
    min of those per-query medians), the number of queries and whether it was ``measured`` — the *stored* regime when
    ``index`` is given, else *whole*. One untimed warm-up run precedes each query's timed ones (a cold first run is
    another measurement). Counts run smallest first; a count whose timing would exceed ``timing.max_seconds``
    (projected in proportion from the largest count measured) is estimated on the line through the two largest
    measured counts, with a spread of NaN."""
    if not timed.qids:
        raise ValueError("parameter 'timed' names no query")
    model.eval()
    results: dict[int, dict[str, Any]] = {}
    measured: dict[int, float] = {}
    for count in sorted(timing.counts):
        if measured:
            largest = max(measured)
            per_run = measured[largest] * count / largest
            projected = per_run * (timing.repetitions + 1) * len(timed.qids) / 1000.0
            if projected > timing.max_seconds:
                ms = _estimate(measured, count)
                results[count] = {"ms": ms, "spread": math.nan, "queries": len(timed.qids), "measured": False}
                continue
        per_query = [_query_latency(model, tokenizer, timed, timing, index, qid, count) for qid in timed.qids]
        measured[count] = statistics.median(per_query)
        results[count] = {
            "ms": measured[count],
            "spread": max(per_query) / max(min(per_query), 1e-9),
            "queries": len(per_query),
            "measured": True,
        }
    return results


def query_cost(row: Mapping[str, Any], counts: Sequence[int]) -> tuple[float, float]:
    """A cost-table row as ``(fixed_ms, docs_per_ms)``: the line through its latencies at the two smallest of
    ``counts`` (``ms_<count>`` columns), its intercept the fixed cost per query (encoding the query; at least 0),
    its slope the cost per candidate — :mod:`lib.evaluation.time_budget`'s ``fixed_ms`` and speed."""
    low, high = sorted(counts)[:2]
    slope = (float(row[f"ms_{high}"]) - float(row[f"ms_{low}"])) / (high - low)
    if not slope > 0:  # a flat measurement (noise): all of the cost per candidate, none fixed
        return 0.0, high / float(row[f"ms_{high}"])
    return max(float(row[f"ms_{low}"]) - slope * low, 0.0), 1.0 / slope


def cost_rows(
    name: str,
    model: nn.Module,
    tokenizer: Any,
    timed: TimedQueries,
    timing: Timing,
    folder: Path,
    dtypes: Sequence[str] = ("float16",),
    resident: bool = False,
    whole: bool = True,
    quantiser: ProductQuantiser | None = None,
) -> list[dict[str, Any]]:
    """``name``'s rows of the cost table: *whole*, and for a storable model *stored* in each of ``dtypes`` (and, if
    ``resident``, that index held in the model's device memory: regime *resident*), its index of the timed queries'
    candidates built into ``folder/<name>-<dtype>`` (one encoding for every precision): its bytes and vectors per
    passage, its build time scaled to the whole collection (``index_seconds``: seconds per indexed passage × the
    passages of ``timed.texts``), and on a GPU the peak memory torch held while the regime was timed
    (``peak_memory_mb``: the weights, the activations of a batch and the stored vectors read; NaN on a CPU). Columns
    :data:`COLUMNS`, then ``ms_<count>``, ``spread_<count>`` and ``measured_<count>`` per count. ``whole=False``
    leaves the *whole* row
    out (a storable model whose run-whole cost another row already measures: a compact TK is its full TK run whole
    plus one projection). A ``pq`` index among ``dtypes`` needs the fitted ``quantiser``."""
    if not whole and not is_precomputable(model):
        raise ValueError(f"model {name!r} cannot store passages: its one regime is 'whole' (parameter 'whole')")
    stored = ["stored", "resident"] if resident else ["stored"]
    settings = [("whole", None)] + [(regime, dtype) for dtype in dtypes for regime in stored]
    settings = settings if is_precomputable(model) else settings[:1]
    settings = settings if whole else settings[1:]
    pids = sorted({pid for qid in timed.qids for pid in timed.first_stage[qid]})
    device = next(model.parameters()).device
    rows = []
    built = {}
    if any(regime != "whole" for regime, _ in settings):  # one encoding of the passages, written in each precision
        folders = {dtype: folder / f"{name}-{dtype}" for dtype in dtypes}
        built = build_indexes(model, tokenizer, timed.texts, pids, folders, progress=False,
                              max_length=timing.max_doc_length, quantiser=quantiser)  # fmt: skip
    for regime, dtype in settings:
        index: PassageIndex | ResidentIndex | None = None
        if regime == "stored":
            index = built[dtype]
        elif regime == "resident":
            index = built[dtype].resident(device)
        row = {
            "model": name,
            "regime": regime,
            "dtype": dtype or "—",
            "bytes_per_passage": index.bytes_per_passage if index is not None else 0.0,
            "vectors_per_passage": index.header["vectors"] / max(len(index), 1) if index is not None else 0.0,
            "index_seconds": index.header["seconds"] / max(len(index), 1) * len(timed.texts) if index else 0.0,
            "queries": len(timed.qids),
        }
        reset_peak_memory(device)
        for count, values in regime_latencies(model, tokenizer, timed, timing, index).items():
            row[f"ms_{count}"], row[f"spread_{count}"] = values["ms"], values["spread"]
            row[f"measured_{count}"] = values["measured"]
        row["peak_memory_mb"] = peak_memory_mb(device)
        rows.append(row)
    return rows


def committed_regimes(folder: Path, labels: Mapping[str, str]) -> pd.DataFrame:
    """Every cost table committed under ``folder`` (``benchmarks/results/regimes/*.json``) as one frame: the file's
    device and date, then each row's model (labelled), regime, index, bytes per passage, latencies and, where the
    file measured it, the peak GPU memory torch held while the row was timed ("peak GPU MiB"). Empty (with those
    columns) when none is committed."""
    frames = []
    for path in sorted(folder.glob("*.json")):
        result = json.loads(path.read_text())
        rows = pd.DataFrame(result["rows"])
        counts = result["settings"]["counts"]
        memory = rows["peak_memory_mb"].round() if "peak_memory_mb" in rows else float("nan")
        frames.append(
            pd.DataFrame({
                "device": result["device"], "date": result["environment"]["date"][:10],
                "model": [labels.get(name, name) for name in rows["model"]], "regime": rows["regime"],
                "index": rows["dtype"], "bytes / passage": rows["bytes_per_passage"].round().astype(int),
                **{f"ms for {count:,}": rows[f"ms_{count}"].round(2) for count in counts},
                "peak GPU MiB": memory,
            })
        )  # fmt: skip
    columns = ["device", "date", "model", "regime", "index", "bytes / passage"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def gpu_memory(committed: pd.DataFrame, shown: Mapping[str, str], stored: Sequence[str]) -> pd.DataFrame:
    """Per device of :func:`committed_regimes`' frame, a column "peak GPU MiB (<device>)" for the rows of chapter 8's
    comparison table (``shown``: model → its row's label): a model of ``stored`` in its stored regime (its cheaper
    index's peak), the others run whole; empty where the device did not time it."""
    columns = {}
    for device, rows in committed.groupby("device", sort=True):
        peaks = {}
        for name, row_label in shown.items():
            regime = rows[(rows["model"] == row_label) & (rows["regime"] == ("stored" if name in stored else "whole"))]
            peaks[row_label] = float(regime["peak GPU MiB"].min()) if len(regime) else math.nan
        columns[f"peak GPU MiB ({device})"] = pd.Series(peaks)
    return pd.DataFrame(columns, index=list(shown.values()))


def resident_table(committed: pd.DataFrame, reference: str) -> pd.DataFrame:
    """Per device and date of :func:`committed_regimes`' frame that timed the *resident* regime: each model stored
    there, its latency at the largest count run whole, stored (the cheaper index) and resident (the cheaper index,
    named), and how many times faster resident is than ``reference`` (a label: BERT-cat) run whole."""
    column = [c for c in committed.columns if c.startswith("ms for ")][-1]
    rows = []
    for (device, date), group in committed.groupby(["device", "date"], sort=True):
        reference_ms = group[(group["model"] == reference) & (group["regime"] == "whole")][column]
        for model, by_model in group.groupby("model", sort=False):
            resident = by_model[by_model["regime"] == "resident"]
            if resident.empty:
                continue
            best = resident.loc[resident[column].idxmin()]
            speedup = float(reference_ms.min()) / float(best[column]) if len(reference_ms) else math.nan
            rows.append({
                "device": device, "date": date, "model": model,
                f"whole ({column})": float(by_model[by_model["regime"] == "whole"][column].min()),
                f"stored ({column})": float(by_model[by_model["regime"] == "stored"][column].min()),
                f"resident ({column})": float(best[column]), "resident index": best["index"],
                f"× {reference} whole": speedup,
            })  # fmt: skip
    return pd.DataFrame(rows)


def compact_table(
    table: pd.DataFrame,
    values: Mapping[str, Mapping[str, pd.Series]],
    names: Sequence[str],
    reference: str,
    labels: Mapping[str, str],
    rivals: Sequence[str] = (),
) -> pd.DataFrame:
    """One row per model of ``names``: its index's bytes per passage in each precision, the vectors it stores per
    passage (``vectors / passage``: a sparse TK's kept terms), its stored latency (cheapest index) at the two largest
    counts, and per test year its nDCG@10 re-ranking every candidate with paired tests
    against BM25, against ``reference`` (the full TK) and against each of ``rivals`` (BERT-cat; Bonferroni over the
    pairs of the year): ``<YEAR> p vs <label>`` (``*``: significant) and ``<YEAR> vs <label>``, the test read with
    its sign (:func:`lib.evaluation.speedup_steps.verdict`: "above", "below" or "no difference").

    ``table`` is the cost table; ``values`` maps a test year to per-query nDCG@10 series by model, ``"bm25"`` and the
    ``rivals`` included."""
    from lib.evaluation import comparison  # here: the cost table's measurement runs where ir_measures is not (a GPU)
    from lib.evaluation.speedup_steps import verdict

    counts = sorted(int(column.split("_")[1]) for column in table.columns if column.startswith("ms_"))[-2:]
    tests = {
        year: comparison.pairwise_tests({name: by_model[name] for name in ["bm25", *rivals, *names]})
        for year, by_model in values.items()
    }
    rows = []
    for name in names:
        stored = table[(table["model"] == name) & (table["regime"] == "stored")].sort_values(f"ms_{counts[-1]}")
        row: dict[str, object] = {"model": labels.get(name, name)}
        for _, index in stored.sort_values("dtype").iterrows():
            row[f"bytes / passage ({index['dtype']})"] = int(round(index["bytes_per_passage"]))
        if "vectors_per_passage" in stored:
            row["vectors / passage"] = round(float(stored["vectors_per_passage"].iloc[0]), 1)
        for count in counts:
            row[f"stored ms for {count:,}"] = round(float(stored.iloc[0][f"ms_{count}"]), 1)
        for year, by_model in values.items():
            row[f"{year.upper()} nDCG@10"] = round(float(by_model[name].mean()), 4)
            for against in ("bm25", reference, *rivals):
                if against == name:
                    continue
                pair = tests[year][
                    ((tests[year]["run"] == against) & (tests[year]["against"] == name))
                    | ((tests[year]["run"] == name) & (tests[year]["against"] == against))
                ]
                significant = bool(pair["significant"].iloc[0])
                shown = labels.get(against, against)
                row[f"{year.upper()} p vs {shown}"] = f"{float(pair['p_bonferroni'].iloc[0]):.3f}{'*' * significant}"
                delta = float(by_model[name].mean() - by_model[against].mean())
                row[f"{year.upper()} vs {shown}"] = verdict(delta, significant)
        rows.append(row)
    return pd.DataFrame(rows)


def _smallest_index(row: pd.Series) -> tuple[int, str]:
    """The smallest index of a :func:`compact_table` row: its bytes per passage and dtype."""
    sizes = {column.split("(")[1].rstrip(")"): row[column] for column in row.index if column.startswith("bytes /")}
    sizes = {dtype: size for dtype, size in sizes.items() if not pd.isna(size)}
    dtype = min(sizes, key=sizes.get)
    return int(sizes[dtype]), dtype


def compact_costs(
    frame: pd.DataFrame, reference: str, rival_ms: float, count: int, rival: str | None = None
) -> pd.DataFrame:
    """What each compact index of a :func:`compact_table` frame costs against its full TK (the row labelled
    ``reference``), a row each: its smallest index (``bytes``, ``dtype``) and the full TK's (``full bytes``, ``full
    dtype``), its stored latency for ``count`` candidates (``ms``) and how many times ``rival_ms`` (a rival run whole)
    that is (``× rival``); per year its nDCG@10, the difference from the full TK's (``<YEAR> delta``), the paired
    test's p (``<YEAR> p``) and verdict (``<YEAR> differs``), whether it is significantly above BM25 (the test read
    with its sign) and, with a ``rival`` (a label :func:`compact_table` tested against), how it compares to it
    (``<YEAR> vs rival``: "above", "below" or "no difference", with the p)."""
    rows = frame.set_index("model")
    full_bytes, full_dtype = _smallest_index(rows.loc[reference])
    years = [column.split()[0] for column in frame.columns if column.endswith(" nDCG@10")]
    costs = []
    for label, row in rows.drop(index=reference).iterrows():
        size, dtype = _smallest_index(row)
        ms = float(row[f"stored ms for {count:,}"])
        item = {"model": label, "bytes": size, "dtype": dtype, "full bytes": full_bytes, "full dtype": full_dtype,
                "count": count, "ms": ms, "rival ms": rival_ms, "× rival": rival_ms / ms}  # fmt: skip
        if "vectors / passage" in row.index and rows.loc[reference, "vectors / passage"] > 0:
            item["vectors share"] = float(row["vectors / passage"]) / float(rows.loc[reference, "vectors / passage"])
        for year in years:
            against = str(row[f"{year} p vs {reference}"])
            item |= {
                f"{year} nDCG@10": float(row[f"{year} nDCG@10"]),
                f"{year} delta": float(row[f"{year} nDCG@10"]) - float(rows.loc[reference, f"{year} nDCG@10"]),
                f"{year} p": against.rstrip("*"), f"{year} differs": against.endswith("*"),
                f"{year} above BM25": row[f"{year} vs BM25"] == "above",
            }  # fmt: skip
            if rival is not None:
                item[f"{year} vs rival"] = f"{row[f'{year} vs {rival}']} (p {row[f'{year} p vs {rival}']})"
        costs.append(item)
    return pd.DataFrame(costs)


def estimated(table: pd.DataFrame, labels: Mapping[str, str]) -> list[str]:
    """The latencies of a cost table that were estimated, not measured (:func:`regime_latencies`): ``"<label>
    <regime> [<index dtype>] at <count>"`` per row and count whose ``measured_<count>`` is False, in table order."""
    counts = sorted(int(column.split("_")[1]) for column in table.columns if column.startswith("measured_"))
    return [
        f"{labels.get(row['model'], row['model'])} {row['regime']}"
        + (f" {row['dtype']}" if row.get("dtype", "—") != "—" else "")
        + f" at {count:,}"
        for _, row in table.iterrows()
        for count in counts
        if not bool(row[f"measured_{count}"])
    ]


#: Chapter 2's bar: a TK is worth having beside BERT-cat when it re-ranks at least this many times as fast.
SPEED_BAR = 5.0


def ladder_verdict(table: pd.DataFrame, tks: Sequence[str], reference: str, labels: Mapping[str, str]) -> pd.DataFrame:
    """Per TK of ``tks``: its latency at 100 candidates run whole and stored (its cheaper index), how many times
    faster than ``reference`` run whole each is, and whether that reaches :data:`SPEED_BAR` ("—" where the table has
    no such row: a compact TK is timed stored only)."""
    count = (
        100 if "ms_100" in table.columns else max(int(c.split("_")[1]) for c in table.columns if c.startswith("ms_"))
    )
    column = f"ms_{count}"
    base = float(table[(table["model"] == reference) & (table["regime"] == "whole")][column].iloc[0])
    rows = []
    for name in tks:
        own = table[table["model"] == name]
        whole_rows, stored_rows = own[own["regime"] == "whole"], own[own["regime"] == "stored"]
        whole = float(whole_rows[column].min()) if not whole_rows.empty else math.nan
        stored = float(stored_rows[column].min()) if not stored_rows.empty else math.nan
        row = {"TK": labels.get(name, name), f"whole ms for {count}": whole, f"stored ms for {count}": stored}
        for regime, ms in (("whole", whole), ("stored", stored)):
            ratio = base / ms if ms > 0 else math.nan
            row[f"{regime}: × {labels.get(reference, reference)}"] = round(ratio, 1)
            row[f"{regime}: ≥ {SPEED_BAR:g}×"] = "—" if math.isnan(ratio) else "yes" if ratio >= SPEED_BAR else "no"
        rows.append(row)
    return pd.DataFrame(rows)


__all__ = [
    "COLUMNS", "SPEED_BAR", "TimedQueries", "Timing", "candidates_of", "committed_regimes", "compact_costs",
    "compact_table", "cost_rows", "estimated", "gpu_memory", "ladder_verdict", "query_cost", "regime_latencies",
    "stored_rerank", "stored_run", "stored_scores",
]  # fmt: skip
