"""Every candidate scored once per build: a content-addressed cache of a model's scores of a candidate set.

A re-ranker's score of a (query, passage) pair depends on its weights, its tokenizer, the two texts, the
token caps and where and in which precision it runs — not on the batch it runs in (the models are batch-
and padding-invariant, tested in ``tests/models``). :func:`scoring_key` digests exactly those inputs and
:func:`cached_scores` keeps the scores under that key, so the same weights scoring the same candidates
are read back, not recomputed: chapter 7's TUW19-p1 init that *is* chapter 2's model, or any chapter
re-executed on a finished checkpoint, scores nothing again. A key changes with any single weight, text
or setting, so a cached score is always the score the model would compute (the file keeps every float
exactly: :func:`lib.evaluation.measures.write_trec_run` writes ``repr``).
"""

from __future__ import annotations

import hashlib
import json
import pickle
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from lib.core.broken_files import read_or_set_aside
from lib.core.types import Run, ranking_from_run
from lib.data import read_run
from lib.evaluation.measures import write_trec_run
from lib.reranking.dense import Encodings


def weights_digest(model: nn.Module) -> str:
    """The sha256 of ``model``'s state dict: every tensor's name, dtype, shape and bytes, in order."""
    digest = hashlib.sha256(type(model).__qualname__.encode())
    for name, tensor in model.state_dict().items():
        data = tensor.detach().to("cpu").contiguous().reshape(-1)
        digest.update(f"\n{name}|{data.dtype}|{tuple(tensor.shape)}\n".encode())
        digest.update(data.view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def tokenizer_digest(tokenizer: Any) -> str:
    """The sha256 of ``tokenizer`` as pickled: its vocabulary and settings (any change gives another key)."""
    return hashlib.sha256(pickle.dumps(tokenizer, protocol=5)).hexdigest()


def pairs_digest(queries: Mapping[str, str], texts: Mapping[str, str], run: Run) -> str:
    """The sha256 of every candidate pair of ``run``: query id and text, passage id and text, in the run's order."""
    digest = hashlib.sha256()
    for qid in sorted(run):
        digest.update(json.dumps([qid, queries.get(qid)]).encode())
        for pid in ranking_from_run(run[qid]):
            digest.update(json.dumps([pid, texts.get(pid)]).encode())
    return digest.hexdigest()


def encodings_digest(encodings: Encodings) -> str:
    """The sha256 of stored passage vectors (:class:`lib.reranking.dense.Encodings`: ids and float bytes), which a
    bi-encoder's scores reuse."""
    digest = hashlib.sha256(json.dumps(encodings.ids).encode())
    digest.update(encodings.vectors.detach().to("cpu").contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def scoring_key(
    model: nn.Module, tokenizer: Any, queries: Mapping[str, str], texts: Mapping[str, str], run: Run, **setting: Any
) -> dict[str, Any]:
    """What a set of scores depends on: the weights, the tokenizer, the candidate pairs and ``setting`` (how they are
    scored: method, token caps, device type, precision — JSON values)."""
    return {
        "weights": weights_digest(model),
        "tokenizer": tokenizer_digest(tokenizer),
        "pairs": pairs_digest(queries, texts, run),
        **setting,
    }


def cached_scores(folder: Path, key: Mapping[str, Any], run: Run, compute: Callable[[], Run]) -> Run:
    """The scores of ``run``'s candidates under ``key`` (:func:`scoring_key`): read from ``folder`` when they were kept,
    else ``compute()``-d and kept there (atomically); a broken kept file is set aside and recomputed, with a warning.
    Every query of ``run`` is a key of the result and its passages come in the run's order, as
    :func:`lib.reranking.scoring.score_candidates` gives them."""
    name = hashlib.sha256(json.dumps(dict(key), sort_keys=True).encode()).hexdigest()
    path = Path(folder) / f"{name}.trec"

    def read_kept(file: Path) -> Run:
        kept = read_run(file)
        missing = [(qid, pid) for qid in run for pid in run[qid] if pid not in kept.get(qid, {})]
        if missing or set(kept) - set(run):
            raise ValueError("the kept scores are not those of the candidates they are keyed by")
        return {qid: {pid: kept[qid][pid] for pid in ranking_from_run(run[qid])} for qid in run}

    kept = read_or_set_aside(path, read_kept, "a kept score file (the score cache)")
    if kept is not None:
        return kept
    scores = compute()
    write_trec_run(scores, path, tag="scores")
    return scores
