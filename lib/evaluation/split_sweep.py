"""What splitting a trained cross-encoder costs: PreTTR's split ``k`` swept over one set of BERT-cat weights.

PreTTR (MacAvaney et al., SIGIR 2020; lecture 8, slides 17–19) runs BERT's first ``k`` layers on query
and passage separately and the remaining ``L − k`` on their concatenation. Given weights fine-tuned as
BERT-cat (``k = 0``), :func:`split_sweep` scores every candidate of each judged set under every split
with those weights unchanged — no training — and measures the re-ranking: how much of BERT-cat's
effectiveness survives when query and passage stop seeing each other in the lower layers.
:func:`choose_split` picks the split a chapter fine-tunes: the best on the validation set among the
splits that save at least a given share of the query-time work.

One pass of each side through all ``L`` layers gives every split's lower half
(:meth:`lib.models.prettr.PreTTR.forward_splits`), so a sweep of all ``L + 1`` splits costs about
``(L + 2) / 2`` BERT-cat passes instead of ``L + 1``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import torch
from tqdm.auto import tqdm

from lib.core.types import JudgedSet, ranking_from_run
from lib.evaluation import measures
from lib.models.prettr import PreTTR
from lib.representations.text import DOC_MAX_LENGTH, QUERY_MAX_LENGTH
from lib.reranking.scoring import rerank


def split_scores(
    model: PreTTR,
    tokenizer: Any,
    queries: Mapping[str, str],
    texts: Mapping[str, str],
    candidates: Mapping[str, Sequence[str]],
    splits: Sequence[int],
    batch_size: int = 32,
    progress: bool = False,
) -> dict[int, dict[str, dict[str, float]]]:
    """Every candidate's score under every split of ``splits``: ``{k: {qid: {pid: score}}}``.

    ``candidates`` maps each query to the passages to score. Rows are sorted by passage length into
    batches (less padding; the scores do not depend on the batch); the model runs in eval mode under
    ``torch.inference_mode()`` on its own device, in float32.
    """
    rows = sorted(
        ((qid, pid) for qid, pids in candidates.items() for pid in pids), key=lambda row: (len(texts[row[1]]), row)
    )
    device = next(model.parameters()).device
    scores: dict[int, dict[str, dict[str, float]]] = {k: {qid: {} for qid in candidates} for k in splits}
    model.eval()
    with torch.inference_mode():
        for start in tqdm(range(0, len(rows), batch_size), desc="splits", unit="batch", disable=not progress):
            batch = rows[start : start + batch_size]
            query_ids, query_mask = tokenizer.encode([queries[qid] for qid, _ in batch], QUERY_MAX_LENGTH)
            doc_ids, doc_mask = tokenizer.encode([texts[pid] for _, pid in batch], DOC_MAX_LENGTH)
            inputs = (tensor.to(device) for tensor in (query_ids, query_mask, doc_ids, doc_mask))
            output = model.forward_splits(*inputs, splits).float().cpu()
            for column, k in enumerate(splits):
                for (qid, pid), value in zip(batch, output[:, column].tolist(), strict=True):
                    scores[k][qid][pid] = value
    return scores


def split_sweep(
    model: PreTTR,
    tokenizer: Any,
    texts: Mapping[str, str],
    sets: Mapping[str, JudgedSet],
    depths: Mapping[str, int | None],
    measures_of: Mapping[str, str] | None = None,
    batch_size: int = 32,
    progress: bool = True,
) -> pd.DataFrame:
    """How re-ranking each set's top ``depths[name]`` candidates (``None``: all) with ``model``'s weights split at
    every ``k = 0 … L`` measures: a frame indexed by ``k``, one column per set, ``"<NAME> <measure>"``, the
    measure ``measures_of[name]`` (default nDCG@10)."""
    splits = list(range(len(model.bert.encoder.layer) + 1))
    table = {}
    for name, judged in sets.items():
        depth, measure = depths[name], (measures_of or {}).get(name, "nDCG@10")
        candidates = {qid: ranking_from_run(run)[:depth] for qid, run in judged.run.items()}
        by_split = split_scores(model, tokenizer, judged.queries, texts, candidates, splits, batch_size, progress)
        cut = max(len(pids) for pids in candidates.values())
        table[f"{name.upper()} {measure}"] = {
            k: measures.evaluate(rerank(judged.run, scores, cut), judged.qrels, [measure])[measure]
            for k, scores in by_split.items()
        }
    frame = pd.DataFrame(table)
    frame.index.name = "k"
    return frame


def lowest_split(layers: int, min_saving: float) -> int:
    """The earliest split :func:`choose_split` considers for a BERT of ``layers`` layers: ``⌈min_saving · L⌉``, at
    most ``L − 1`` (the last split with a joint layer)."""
    if not 0 <= min_saving < 1:
        raise ValueError(f"parameter 'min_saving' must be in [0, 1), got {min_saving}")
    return min(math.ceil(min_saving * layers), layers - 1)


def choose_split(sweep: pd.DataFrame, validation: str, min_saving: float = 0.5) -> int:
    """The split to fine-tune: the best value of column ``validation`` among the splits ``k ≥ ⌈min_saving · L⌉``,
    whose query-time work with stored passages (the ``L − k`` joint layers) is at most ``1 − min_saving`` of
    BERT-cat's, short of ``k = L`` (no joint layer: every passage of a query scores the same, nothing to
    fine-tune); a BERT too shallow for such a split gets ``k = L − 1``. A tie goes to the later (cheaper) split."""
    layers = int(sweep.index.max())
    lowest = lowest_split(layers, min_saving)
    allowed = sweep.loc[(sweep.index >= lowest) & (sweep.index < layers), validation]
    return int(allowed[allowed == allowed.max()].index.max())
