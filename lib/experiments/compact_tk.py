"""The compact TK indexes: TKs projected to ``d`` dimensions (trained), and the full TK's vectors product-quantised.

A compact TK (:mod:`lib.models.tk_bert`, ``tk-bert6-d64`` / ``tk-bert6-d32``) projects eq. 1's ``H``-d vectors to
``d`` dimensions before the cosine match matrix (eq. 4), so a stored index keeps ``d`` numbers per passage piece.
Where its training starts is the training setting ``compact_start`` (:class:`lib.core.profiles.TrainingSettings`):

- ``"minilm"``: the registry's build — MiniLM's weights, ``P`` a random orthogonal map;
- ``"tk-bert6"``: every weight of the trained TK-BERT-6 of the same build (its BERT layers, α, kernels' weights),
  ``P`` the ``d`` leading right singular vectors of its unit-length eq. 1 vectors over training passages
  (:func:`principal_projection`). By Eckart–Young this ``P`` gives the best rank-``d`` approximation of those
  vectors' inner products (in the Frobenius norm) that any linear map gives — which, measured, is not enough to keep
  the full TK's ranking (:data:`lib.core.decisions.DECISIONS`, ``compact_start``). ColBERT's dimension ablation
  (Khattab & Zaharia 2020, §3.2, §4.5) learns its projection from BERT's start; starting from the full ranker is the
  book's addition.

TK-BERT-6-Sparse (``tk-bert6-sparse``, TK-Sparse's gate on TK-BERT-6) starts where the training setting
``sparse_start`` says: ``"minilm"`` (the registry's build) or ``"tk-bert6"`` — the trained TK-BERT-6 of the same build
with a fresh gate (:meth:`lib.models.tk_bert_sparse.TKBertSparse.from_trained`), so that its training learns which
terms to remove from a ranker that already ranks, rather than ranking and removing at once.

Only training passages are read (the passages of the protocol's training triples), never a validation or test
passage. The ``book`` profile keeps ``"minilm"``: the ``"tk-bert6"`` start did no better on validation
(:data:`lib.core.decisions.DECISIONS`, ``compact_start``).

A compact index *without* training (:func:`fit_vectors`, :func:`index_runs`): the trained full TK's own stored vectors,
product-quantised (:mod:`lib.reranking.product_quantisation`) to one byte per sub-vector of ``384 / m`` numbers,
the quantiser's codebooks fitted on the vectors of the same training passages — drawn from the book corpus, the pool
of every query set's candidates, so some of them are candidates a test year re-ranks (no label is read: an index's
codebooks are fitted on the collection it indexes, as ColBERTv2 fits its centroids); :func:`passages_outside` draws
as many that no test year re-ranks, for a robustness check. ``m`` is chosen on validation (:func:`smallest_within`:
the smallest whose validation nDCG@10 is within a tolerance of the unquantised index's). Its scores are what the
stored index ranks (:func:`lib.evaluation.regimes.stored_run`): the model reads each candidate's centroids instead of
its own vectors; another quantiser's ranking is read from the float16 index without encoding again
(:class:`Requantised`). The variant is called :func:`lib.reranking.product_quantisation.pq_name` (``tk-bert6-pq``)
in the cost table and the runs folder.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from lib.core.types import JudgedSet, Run
from lib.evaluation.regimes import stored_run
from lib.experiments.distillation_protocol import Protocol
from lib.experiments.model_runs import RunVariant
from lib.experiments.score_cache import weights_digest
from lib.models.tk_bert import TKBert
from lib.models.tk_bert_sparse import TKBertSparse
from lib.representations.text import DOC_MAX_LENGTH
from lib.reranking.passage_index import PQ, PassageIndex, build_indexes
from lib.reranking.product_quantisation import ProductQuantiser, unit

#: The compact TKs, the width of their projection, and the full TK they may start from.
COMPACT_WIDTHS: dict[str, int] = {"tk-bert6-d64": 64, "tk-bert6-d32": 32}
FULL_TK = "tk-bert6"
#: The values of ``TrainingSettings.compact_start`` and ``sparse_start`` (module docstring).
COMPACT_STARTS: tuple[str, ...] = ("minilm", FULL_TK)
#: The sparse TK that ``sparse_start`` may start from the trained full TK.
SPARSE_TK = "tk-bert6-sparse"
#: How many training passages the principal directions are computed from (a few tens of thousands of vectors).
PROJECTION_PASSAGES = 1000


def training_passages(protocol: Protocol, count: int = PROJECTION_PASSAGES, seed: int = 0) -> list[str]:
    """``count`` distinct passages of the protocol's training triples (positives and negatives), drawn with ``seed``
    from their sorted ids. A training triple may hold a passage that is also a validation or test candidate (the
    triples come from the same corpus); no label of it is read."""
    pids = sorted({pid for _, positive, negative in protocol.triples for pid in (positive, negative)})
    if not pids:
        raise ValueError("the protocol has no training triples to compute a projection from")
    chosen = np.random.default_rng(seed).permutation(len(pids))[:count]
    return [pids[i] for i in sorted(chosen)]


def passage_vectors(
    model: torch.nn.Module,
    tokenizer: Any,
    texts: Sequence[str],
    batch_size: int = 32,
    max_length: int = DOC_MAX_LENGTH,
    progress: bool = True,
    what: str = "passage vectors",
) -> Iterator[np.ndarray]:
    """``model``'s stored vectors (``encode_passages``, padding left out) of ``texts``, a float32 ``[pieces, d]``
    block per batch of ``batch_size`` texts."""
    device = next(model.parameters()).device
    model.eval()
    with torch.inference_mode():
        for begin in tqdm(range(0, len(texts), batch_size), desc=what, disable=not progress):
            ids, mask = tokenizer.encode(list(texts[begin : begin + batch_size]), max_length)
            vectors, stored = model.encode_passages(ids.to(device), mask.to(device))
            yield vectors[stored].float().cpu().numpy()


def principal_projection(
    model: TKBert,
    tokenizer: Any,
    texts: Sequence[str],
    dim: int,
    batch_size: int = 32,
    max_length: int = DOC_MAX_LENGTH,
    progress: bool = True,
) -> torch.Tensor:
    """``P`` ``[dim, H]``: the ``dim`` leading right singular vectors of ``model``'s eq. 1 vectors of ``texts``'
    pieces, each scaled to unit length first (the cosine of eq. 4 reads directions only), uncentred (the cosine is
    of the vectors themselves, not of their deviations from a mean)."""
    if model.projection is not None:
        raise ValueError("parameter 'model' must be a full TK (no projection): its vectors are what P compresses")
    hidden = model.embedding.word_embeddings.embedding_dim
    if not 0 < dim <= hidden:
        raise ValueError(f"parameter 'dim' must be in 1..{hidden}, got {dim}")
    if not texts:
        raise ValueError("parameter 'texts' is empty: no vectors to compute a projection from")
    second_moment = torch.zeros(hidden, hidden, dtype=torch.float64)
    for vectors in passage_vectors(model, tokenizer, texts, batch_size, max_length, progress, "projection"):
        kept = torch.from_numpy(vectors).double()
        kept = kept / kept.norm(dim=-1, keepdim=True).clamp_min(1e-12)
        second_moment += kept.T @ kept
    _, eigenvectors = torch.linalg.eigh(second_moment)
    return eigenvectors[:, -dim:].flip(-1).T.float().contiguous()


def compact_variant(
    name: str,
    start: str,
    trained: Mapping[str, torch.nn.Module],
    protocol: Protocol,
    tokenizer: Any,
    progress: bool = True,
    sparse_start: str = "minilm",
) -> RunVariant:
    """How chapter 2 trains registry model ``name``: the plain run, or for a compact TK under ``start="tk-bert6"``
    the trained full TK of ``trained`` (the models of this build so far, by name) with its principal ``P``, or for
    :data:`SPARSE_TK` under ``sparse_start="tk-bert6"`` that TK with a fresh gate (module docstring). The run keeps its
    registry name, so its checkpoint and run files are the book's."""
    for setting, value in (("compact_start", start), ("sparse_start", sparse_start)):
        if value not in COMPACT_STARTS:
            raise ValueError(f"setting {setting!r} must be one of {list(COMPACT_STARTS)}, got {value!r}")
    from_full = (name in COMPACT_WIDTHS and start == FULL_TK) or (name == SPARSE_TK and sparse_start == FULL_TK)
    if not from_full:
        return RunVariant()
    if FULL_TK not in trained:
        setting = "sparse_start" if name == SPARSE_TK else "compact_start"
        raise ValueError(f"model {name!r} starts from {FULL_TK!r} ({setting}), which this build has not trained "
                         f"before it: list {FULL_TK!r} first among the models")  # fmt: skip
    full = trained[FULL_TK]
    if name == SPARSE_TK:
        return RunVariant(start=(TKBertSparse.from_trained(full), f"{FULL_TK} {weights_digest(full)[:16]}, a new gate"))
    passages = [protocol.texts[pid] for pid in training_passages(protocol)]
    projection = principal_projection(full, tokenizer, passages, COMPACT_WIDTHS[name], progress=progress)
    what = f"{FULL_TK} {weights_digest(full)[:16]}, P its {COMPACT_WIDTHS[name]} principal directions"
    return RunVariant(start=(full.compacted(projection.to(next(full.parameters()).device)), what))


def fit_vectors(
    model: torch.nn.Module, tokenizer: Any, protocol: Protocol, pids: Sequence[str], progress: bool = True
) -> np.ndarray:
    """``model``'s stored vectors of the passages ``pids`` (no label read), ``[pieces, d]`` float32: what a product
    quantiser is fitted on (:func:`lib.reranking.product_quantisation.fit_quantiser`)."""
    texts = [protocol.texts[pid] for pid in pids]
    return np.concatenate(list(passage_vectors(model, tokenizer, texts, progress=progress, what="pq vectors")))


def passages_outside(protocol: Protocol, pools: set[str], count: int = PROJECTION_PASSAGES, seed: int = 0) -> list[str]:
    """``count`` passages (all, where fewer) of the protocol's training triples none of which is in ``pools`` (the
    test years' candidates): :func:`training_passages`' draw among the others — the robustness check of a quantiser
    fitted on passages no test year re-ranks."""
    pids = sorted({pid for _, positive, negative in protocol.triples for pid in (positive, negative)} - pools)
    if not pids:
        raise ValueError("the training triples hold no passage outside the test pools")
    chosen = np.random.default_rng(seed).permutation(len(pids))[:count]
    return [pids[i] for i in sorted(chosen)]


class Requantised:
    """A ``float16`` :class:`lib.reranking.passage_index.PassageIndex` read as if its vectors were product-quantised by
    ``quantiser``: each gathered vector replaced by its decoded codes' unit-length direction times its own length —
    what a ``pq`` index of the same passages ranks for a model that reads only cosines (a TK, TK-Sparse's too; the
    ``pq`` index's asymmetric distance computation gives the decoded vectors' cosines to float rounding), without
    encoding the passages again."""

    def __init__(self, index: PassageIndex, quantiser: ProductQuantiser) -> None:
        if index.dtype != "float16":
            raise ValueError(f"a requantised index reads a float16 index, got {index.dtype!r}")
        self.index = index
        self.quantiser = quantiser
        self.dtype = "float16"

    def lengths(self, pids: Sequence[str]) -> np.ndarray:
        """Each passage's stored vectors (the index's)."""
        return self.index.lengths(pids)

    def prefetch(self, pids: Sequence[str]) -> int:
        """The float16 index's read-ahead of the candidates' rows
        (:meth:`lib.reranking.passage_index.PassageIndex.prefetch`)."""
        return self.index.prefetch(pids)

    def gather_rows(self, pids: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """The candidates' decoded vectors, unpadded ``[R, d]``, and each one's number of them ``[n]``
        (:meth:`lib.reranking.passage_index.PassageIndex.gather_rows`: what a TK's ``score_rows`` pools)."""
        rows, lengths = self.index.gather_rows(pids)
        kept = rows.numpy()
        norms = np.linalg.norm(kept, axis=1, keepdims=True).astype(np.float16).astype(np.float32)
        return torch.from_numpy(unit(self.quantiser.decode(self.quantiser.encode(kept)).numpy()) * norms), lengths


def index_runs(
    model: torch.nn.Module,
    tokenizer: Any,
    tests: Mapping[str, JudgedSet],
    texts: Mapping[str, str],
    folder: Path,
    dtypes: Sequence[str] = (PQ,),
    quantiser: ProductQuantiser | None = None,
    requantised: Mapping[str, ProductQuantiser] | None = None,
    batch_size: int = 32,
    progress: bool = True,
) -> dict[str, dict[str, Run]]:
    """Per stored dtype of ``dtypes`` (``float16``, ``int8``, ``pq``: with its ``quantiser``) and per test set, every
    candidate of its judged queries scored from one index of all the sets' candidates in that dtype — what each index
    ranks; and per name of ``requantised`` (``float16`` among ``dtypes``), the ``float16`` index read through that
    quantiser (:class:`Requantised`). The indexes come from one encoding
    (:func:`lib.reranking.passage_index.build_indexes`), each built in ``folder/<dtype>`` and kept (its header holds
    the build's seconds)."""
    requantised = dict(requantised or {})
    if requantised and "float16" not in dtypes:
        raise ValueError("parameter 'requantised' reads the float16 index: list 'float16' among 'dtypes'")
    candidates = {name: {qid: test.run[qid] for qid in test.queries if qid in test.run} for name, test in tests.items()}
    pids = sorted({pid for run in candidates.values() for ranked in run.values() for pid in ranked})
    folders = {dtype: folder / dtype for dtype in dtypes}
    indexes: dict[str, Any] = build_indexes(model, tokenizer, texts, pids, folders, batch_size, progress,
                                            quantiser=quantiser)  # fmt: skip
    indexes |= {name: Requantised(indexes["float16"], other) for name, other in requantised.items()}
    return {
        key: {
            name: stored_run(model, tokenizer, tests[name].queries, run, index, batch_size, progress)
            for name, run in candidates.items()
        }
        for key, index in indexes.items()
    }


def smallest_within(values: Mapping[int, float], reference: float, tolerance: float) -> int:
    """The smallest key of ``values`` (subspaces) whose value (validation nDCG@10) is within ``tolerance`` of
    ``reference`` (the unquantised index's); the best when none is."""
    if not values:
        raise ValueError("parameter 'values' is empty: no number of subspaces to choose from")
    close = [m for m, value in values.items() if value >= reference - tolerance]
    return min(close) if close else max(values, key=values.get)


__all__ = [
    "COMPACT_STARTS", "COMPACT_WIDTHS", "FULL_TK", "PROJECTION_PASSAGES", "Requantised", "SPARSE_TK", "compact_variant",
    "fit_vectors", "index_runs", "passage_vectors", "passages_outside", "principal_projection", "smallest_within",
    "training_passages",
]  # fmt: skip
