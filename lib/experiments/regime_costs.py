"""Chapter 3's cost table: the book's trained models timed in both regimes, and the costs budgets are drawn from.

:func:`regime_table` times every model chapter 2 trained (:func:`lib.experiments.artifacts.trained_model`) with
:func:`lib.evaluation.regimes.cost_rows` on the first ``regime_queries`` DL19 queries (in query order) and their
BM25 candidates, with the profile's ``regime_*`` speed settings (:class:`lib.core.profiles.SpeedSettings`), each
model in its own scoring batch size, on one clock (:mod:`lib.evaluation.clock`: the same repetition rule, and bfloat16
for every model where the device has it natively, float32 for every model where it has not; :func:`clock` is the
table's header). Its stored indexes
are built into a temporary folder that is removed afterwards: the table keeps their sizes and build times.
:func:`model_rows` times one model the same way (chapter 8 times the models it trains itself with it, so that its
comparison and chapter 3's table share one clock).

:func:`regime_costs` reads the table as each model's cost in each regime — ``whole``: run whole at query time;
``stored``: its cheapest stored index (float16 or int8, by the latency at the largest measured count), or run whole
when its design cannot store passages (BERT-cat, KNRM, Conv-KNRM) — as a fixed cost per query and a speed
(:func:`lib.evaluation.regimes.query_cost`), the form :mod:`lib.evaluation.time_budget` takes; a model timed
stored only (a compact TK) has no *whole* cost.

:func:`pq_variant` is a TK with its stored vectors product-quantised (the profile's ``regime_pq_model``, and its
sparse twin with TK-Sparse's gate, :func:`sparse_of`, when chapter 2 trained it; :mod:`lib.experiments.compact_tk`)
served in the clock's precision: its quantiser fitted on the vectors the served
model gives training passages, and every candidate of each test year scored from its index as it is served, written as
``<set>__<model>-pq-all.trec`` in the runs folder; :func:`regime_table` times it stored only, under
:func:`lib.reranking.product_quantisation.pq_name`.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from tqdm import tqdm

from lib.core import paths
from lib.core.atomic import write_text
from lib.core.device import autocast
from lib.core.profiles import Profile
from lib.core.types import JudgedSet, Run, query_order
from lib.data import book_texts, load_queries
from lib.evaluation.clock import clock_header, on_the_clock
from lib.evaluation.measures import evaluate, write_trec_run
from lib.evaluation.regimes import TimedQueries, Timing, cost_rows, query_cost
from lib.experiments import artifacts, first_stage_runs
from lib.experiments.compact_tk import fit_vectors, index_runs, passages_outside, smallest_within, training_passages
from lib.experiments.tk_choice import is_sparse
from lib.models.registry import model_spec
from lib.reranking.passage_index import PQ
from lib.reranking.product_quantisation import ProductQuantiser, fit_quantiser, pq_name

#: The ids of the passages the product quantiser is fitted on, one a line, in the chapter's folder (:func:`pq_variant`).
PQ_FIT_PASSAGES = "pq_fit_passages.txt"

#: The regimes, in the order chapters show them.
REGIMES: tuple[str, ...] = ("whole", "stored")
#: TK-BERT-6 with its vectors projected to 64 and 32 dimensions before the kernels: a compact stored index.
COMPACT_TKS: tuple[str, ...] = ("tk-bert6-d64", "tk-bert6-d32")


def is_compact(name: str) -> bool:
    """Whether registry model ``name`` is a compact TK, timed stored only: a projected TK (:data:`COMPACT_TKS`) or a
    TK with TK-Sparse's stopword gate (:func:`lib.experiments.tk_choice.is_sparse`) — run whole, each is its full TK
    plus one projection or one small gate."""
    return name in COMPACT_TKS or is_sparse(name)


def sparse_of(name: str) -> str:
    """The registry name of TK ``name`` with TK-Sparse's stopword gate (``tk-bert6`` → ``tk-bert6-sparse``)."""
    return f"{name}-sparse"


def timed_queries(profile: Profile) -> TimedQueries:
    """The first ``profile.speed.regime_queries`` DL19 queries (query order) with BM25's candidates."""
    run = first_stage_runs.bm25_run(profile, "dl19")
    qids = sorted(run, key=query_order)[: profile.speed.regime_queries]
    return TimedQueries(run, load_queries("dl19"), book_texts(), qids)


def model_rows(
    profile: Profile,
    name: str,
    model: torch.nn.Module,
    tokenizer: Any,
    device: torch.device,
    folder: Path,
    whole: bool = True,
    quantiser: ProductQuantiser | None = None,
) -> list[dict[str, Any]]:
    """Registry model ``name`` (``model`` with its ``tokenizer``, on ``device``) timed in both regimes with the
    profile's settings (module docstring; ``whole=False``: stored only): its rows of the cost table. ``folder`` (it
    must exist) holds the temporary indexes while they are timed. With a ``quantiser``: the model's ``pq`` index
    alone, stored only, under :func:`lib.reranking.product_quantisation.pq_name`."""
    settings = profile.speed
    timing = Timing(
        settings.regime_counts, model_spec(name).eval_batch_size, settings.regime_repetitions,
        settings.regime_max_seconds,
    )  # fmt: skip
    dtypes, shown = (settings.regime_dtypes, name) if quantiser is None else ((PQ,), pq_name(name))
    with tempfile.TemporaryDirectory(dir=folder) as indexes, autocast(device):
        timed = on_the_clock(model.to(device), device)
        return cost_rows(shown, timed, tokenizer, timed_queries(profile), timing, Path(indexes), dtypes,
                         whole=whole and quantiser is None, quantiser=quantiser)  # fmt: skip


def regime_table(
    profile: Profile, models: Sequence[str], device: torch.device, folder: Path, pqs: Sequence[PQVariant] = ()
) -> pd.DataFrame:
    """Every model of ``models``, as chapter 2 trained it, timed in both regimes (:func:`model_rows`), one frame —
    the compact TKs (:func:`is_compact`) stored only: run whole, each is its full TK plus one small projection or
    gate, and timing it whole (about a minute each on 2 CPU cores) measured TK-BERT-6 again. With ``pqs``
    (:func:`pq_variant`): each one's TK's ``pq`` index too, stored only, right after that TK's rows."""
    rows = []
    for name in tqdm(models, desc="two regimes", unit="model"):
        trained = artifacts.trained_model(profile, name, device)
        rows += model_rows(profile, name, trained.model, trained.tokenizer, device, folder, not is_compact(name))
        for pq in (pq for pq in pqs if pq.source == name):
            rows += model_rows(profile, name, pq.model, trained.tokenizer, device, folder, False, pq.quantiser)
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class PQVariant:
    """The profile's TK with its stored vectors product-quantised (:func:`pq_variant`): the registry TK ``source``,
    its fitted ``quantiser`` (``quantiser.subspaces`` codes, chosen on validation: ``validation`` maps each number of
    subspaces tried, and ``"float16"`` the unquantised index, to its validation nDCG@10), the ``model`` as it is served
    (in the clock's precision, :func:`lib.evaluation.clock.on_the_clock`), every candidate of each test year scored
    from its index in each of the profile's ``regime_dtypes``, ``pq`` and ``pq-outside`` (``index_runs``, by index
    then set; ``runs``: the ``pq`` index's; ``pq-outside``: the same number of codes fitted on passages no test year
    re-ranks), the seconds the fit and the scoring took, how many passages the codebooks were fitted on and how many of
    those a test year also re-ranks (their ids: :data:`PQ_FIT_PASSAGES` in the chapter's folder), and how many the
    robustness check's codebooks were fitted on (``fit_outside``)."""

    source: str
    quantiser: ProductQuantiser
    model: torch.nn.Module
    index_runs: dict[str, dict[str, Run]]
    seconds: float
    fit_passages: int
    fit_in_test_pools: int
    validation: dict[str, float]
    fit_outside: int

    @property
    def name(self) -> str:
        return pq_name(self.source)

    @property
    def runs(self) -> dict[str, Run]:
        """Each test year's run scored from the ``pq`` index, by set."""
        return self.index_runs[PQ]


#: The robustness index's key in :attr:`PQVariant.index_runs`: codebooks fitted outside every test pool.
PQ_OUTSIDE = "pq-outside"


def clock(profile: Profile, device: torch.device) -> dict[str, Any]:
    """The header of the profile's cost table on ``device``: its clock (:func:`lib.evaluation.clock.clock_header`)."""
    return clock_header(device, profile.speed.regime_repetitions)


def pq_label(label: str, precision: str) -> str:
    """The PQ row's label from its TK's ``label`` and the clock's ``precision``: "TK-BERT-6 (PQ, bf16)" or
    "TK-BERT-6 (PQ)"."""
    return f"{label} (PQ{', bf16' if precision == 'bfloat16' else ''})"


def pq_variant(profile: Profile, source: str, trained_models: Sequence[str], device: torch.device, folder: Path,
               progress: bool = True, robustness: bool = True) -> PQVariant | None:  # fmt: skip
    """Registry TK ``source`` (the profile's ``regime_pq_model``, or its :func:`sparse_of`) with its vectors
    product-quantised (module docstring), or ``None`` when ``source`` is empty or not among ``trained_models``
    (chapter 2's). A quantiser is fitted on chapter 2's
    training passages for each of ``regime_pq_subspaces``, and the number chosen on validation: the smallest whose
    nDCG@10 on the validation set's top ``validation_depth`` BM25 candidates is within ``regime_pq_tolerance`` of the
    unquantised (float16) index's (:func:`lib.experiments.compact_tk.smallest_within`). The test years' candidates
    are then indexed, from one encoding, in each of the profile's ``regime_dtypes`` and ``pq`` in a temporary folder
    under ``folder`` and scored from each index (the steps of :mod:`lib.evaluation.speedup_steps`), and from the
    float16 index read through a quantiser of as many codes fitted on training passages outside every test pool
    (:data:`PQ_OUTSIDE`, where ``robustness``); each year's run from the ``pq`` index is written to the runs
    folder. A sparse TK's indexes hold the kept terms only
    (:meth:`lib.models.tk_sparse.GatedPassages.encode_passages`)."""
    if not source or source not in trained_models:
        return None
    start = time.perf_counter()
    trained = artifacts.trained_model(profile, source, device)
    _, _, protocol = artifacts.training_protocol(profile)
    speed, batch = profile.speed, model_spec(source).eval_batch_size
    served = on_the_clock(trained.model, device)
    fitted = training_passages(protocol)
    write_text(folder / PQ_FIT_PASSAGES, "".join(f"{pid}\n" for pid in fitted))
    pools = {pid for test in protocol.tests.values() for ranked in test.run.values() for pid in ranked}
    vectors = fit_vectors(served, trained.tokenizer, protocol, fitted, progress)
    quantisers = {m: fit_quantiser(vectors, m) for m in tqdm(speed.regime_pq_subspaces, desc="pq codebooks",
                                                            disable=not progress)}  # fmt: skip
    validation = _validation_values(profile, protocol, served, trained.tokenizer, quantisers, folder, batch, progress)
    chosen = quantisers[smallest_within({m: validation[str(m)] for m in quantisers}, validation["float16"],
                                        speed.regime_pq_tolerance)]  # fmt: skip
    outside = passages_outside(protocol, pools) if robustness else []
    requantised = {}
    if outside:
        requantised[PQ_OUTSIDE] = fit_quantiser(fit_vectors(served, trained.tokenizer, protocol, outside, progress),
                                                chosen.subspaces)  # fmt: skip
    with tempfile.TemporaryDirectory(dir=folder) as indexes:
        dtypes = (*speed.regime_dtypes, PQ)
        runs = index_runs(served, trained.tokenizer, protocol.tests, protocol.texts, Path(indexes), dtypes, chosen,
                          requantised, batch, progress)  # fmt: skip
    for query_set, run in runs[PQ].items():
        write_trec_run(run, paths.run_path(profile.name, query_set, f"{pq_name(source)}-all"), tag=pq_name(source))
    in_pools = sum(pid in pools for pid in fitted)
    seconds = time.perf_counter() - start
    return PQVariant(source, chosen, served, runs, seconds, len(fitted), in_pools, validation, len(outside))


def _validation_values(
    profile: Profile,
    protocol: Any,
    served: torch.nn.Module,
    tokenizer: Any,
    quantisers: dict[int, ProductQuantiser],
    folder: Path,
    batch_size: int,
    progress: bool,
) -> dict[str, float]:
    """Validation nDCG@10 of the float16 index and of it read through each of ``quantisers`` (:func:`pq_variant`),
    keyed ``"float16"`` and ``str(m)``, re-ranking each validation query's top ``validation_depth`` BM25 candidates."""
    depth = profile.training.validation_depth
    validation = protocol.validation
    top = {
        qid: dict(sorted(ranked.items(), key=lambda item: -item[1])[:depth]) for qid, ranked in validation.run.items()
    }
    judged = {validation.name: JudgedSet(validation.name, validation.queries, validation.qrels, top)}
    with tempfile.TemporaryDirectory(dir=folder) as indexes:
        runs = index_runs(served, tokenizer, judged, protocol.texts, Path(indexes), ("float16",),
                          requantised={str(m): q for m, q in quantisers.items()}, batch_size=batch_size,
                          progress=progress)  # fmt: skip
    return {key: evaluate(by_set[validation.name], validation.qrels, ["nDCG@10"])["nDCG@10"] for key, by_set in
            runs.items()}  # fmt: skip


@dataclass(frozen=True)
class RegimeCost:
    """One model's cost in one regime: a fixed cost per query (ms), a speed (documents per ms) and the table row's
    regime and index precision it comes from (``stored`` with ``dtype`` "—": the model runs whole)."""

    fixed_ms: float
    docs_per_ms: float
    regime: str
    dtype: str


def regime_costs(table: pd.DataFrame, counts: Sequence[int]) -> dict[str, dict[str, RegimeCost]]:
    """``{regime: {model: RegimeCost}}`` from a :func:`regime_table` (module docstring); ``counts`` its counts."""
    largest = max(counts)
    costs: dict[str, dict[str, RegimeCost]] = {regime: {} for regime in REGIMES}
    for name, rows in table.groupby("model", sort=False):
        whole_rows = rows[rows["regime"] == "whole"]
        stored = rows[rows["regime"] == "stored"].sort_values(f"ms_{largest}")
        if whole_rows.empty and stored.empty:
            raise ValueError(f"the cost table has neither a 'whole' nor a 'stored' row for model {name!r}")
        if not whole_rows.empty:
            costs["whole"][name] = RegimeCost(*query_cost(whole_rows.iloc[0], counts), "whole", "—")
        cheapest = stored.iloc[0] if not stored.empty else whole_rows.iloc[0]
        costs["stored"][name] = RegimeCost(
            *query_cost(cheapest, counts), str(cheapest["regime"]), str(cheapest["dtype"])
        )
    return costs


def query_time(table: pd.DataFrame, counts: Sequence[int]) -> pd.DataFrame:
    """What a re-ranker costs a query, from a cost table: per model, its cheapest stored index's latency at each of
    ``counts`` (or its whole latency when it stores nothing), a row per (model, count): ``model, candidates, mode,
    dtype, ms, measured, bytes_per_passage`` (the index's; 0 when run whole). The cheapest index is chosen as in
    :func:`regime_costs`."""
    largest = max(counts)
    rows = []
    for name, group in table.groupby("model", sort=False):
        stored = group[group["regime"] == "stored"].sort_values(f"ms_{largest}")
        chosen = stored.iloc[0] if not stored.empty else group[group["regime"] == "whole"].iloc[0]
        mode = "passages stored" if chosen["regime"] == "stored" else "whole at query time"
        for count in counts:
            rows.append({
                "model": name, "candidates": count, "mode": mode, "dtype": chosen["dtype"], "ms": chosen[f"ms_{count}"],
                "measured": bool(chosen.get(f"measured_{count}", True)),
                "bytes_per_passage": float(chosen["bytes_per_passage"]),
            })  # fmt: skip
    return pd.DataFrame(rows)


__all__ = [
    "COMPACT_TKS", "PQ_FIT_PASSAGES", "PQ_OUTSIDE", "REGIMES", "PQVariant", "RegimeCost", "clock", "is_compact",
    "model_rows", "pq_label", "pq_variant", "query_time", "regime_costs", "regime_table", "sparse_of",
    "timed_queries",
]  # fmt: skip
