"""The book's one model registry: every trained re-ranker by name, with what the rest of the book needs to know.

Chapters, training and evaluation never special-case a model by its name; they ask its
:class:`ModelSpec` here: how to build it, its display label, which tokenizer family feeds it (a word
vocabulary with an embedding matrix, or WordPiece with a BERT folder), its scoring batch size, and
which paper-size architecture of :mod:`lib.models.paper_size` has its speed. Optimiser groups come
from the model itself (``model.optimizer_groups()``, TK paper §4.3).

**Adding a model** is one new module plus one registry line: write ``lib/models/<name>.py`` with the
book's scoring interface (``forward(query_ids, query_mask, doc_ids, doc_mask)`` → one score per pair,
and ``optimizer_groups()``), then add ``"<name>": ModelSpec("<name>", "<Label>", "word" | "wordpiece",
<constructor>, ...)`` to :data:`MODELS`. Chapter 2 then trains, scores and tabulates it.

TILDE is not here: it does not score (query, passage) pairs with one network at query time but
through its pre-computed passage index (:mod:`lib.reranking.tilde_index`, TILDE §3.2).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import torch
from torch import nn

from lib.models.bert_cat import BertCat
from lib.models.conv_knrm import ConvKNRM
from lib.models.knrm import KNRM
from lib.models.tk import TK

Family = Literal["word", "wordpiece"]


@dataclass(frozen=True)
class ModelSpec:
    """One registered model.

    Attributes:
        name: the book's name (file names, parameters): ``tk2``, ``bert-cat``, …
        label: how tables and figures show it: ``TK-2``, ``BERT-cat``, …
        family: ``"word"`` (built from a word-embedding matrix, fed by a word vocabulary) or
            ``"wordpiece"`` (built from a BERT folder, fed by a WordPiece tokenizer).
        build: the constructor: takes the embedding matrix (``word``) or the BERT folder (``wordpiece``).
        score_batch_size: pairs per batch when scoring or timing it.
        eval_batch_size: pairs per batch when validating it during training.
        timing_architecture: the :mod:`lib.models.paper_size` architecture whose speed it has.
    """

    name: str
    label: str
    family: Family
    build: Callable[[torch.Tensor | Path], nn.Module]
    score_batch_size: int
    eval_batch_size: int
    timing_architecture: str


MODELS: dict[str, ModelSpec] = {
    "knrm": ModelSpec("knrm", "KNRM", "word", KNRM, 256, 128, "knrm"),
    "conv-knrm": ModelSpec("conv-knrm", "Conv-KNRM", "word", ConvKNRM, 256, 128, "conv-knrm"),
    "tk1": ModelSpec("tk1", "TK-1", "word", lambda embeddings: TK(embeddings, num_layers=1), 256, 128, "tk1"),
    "tk2": ModelSpec("tk2", "TK-2", "word", lambda embeddings: TK(embeddings, num_layers=2), 256, 128, "tk2"),
    "tk3": ModelSpec("tk3", "TK-3", "word", lambda embeddings: TK(embeddings, num_layers=3), 256, 128, "tk3"),
    "bert-cat": ModelSpec("bert-cat", "BERT-cat", "wordpiece", BertCat, 32, 32, "bert-cat-book"),
}
#: Every registered name, in the book's table order.
MODEL_NAMES: tuple[str, ...] = tuple(MODELS)


def model_spec(name: str) -> ModelSpec:
    """The spec of model ``name``; an unknown name is a ``ValueError`` listing the known ones."""
    try:
        return MODELS[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; known: {list(MODELS)}") from None


def label(name: str) -> str:
    """The display label of model ``name`` (``"tk2"`` → ``"TK-2"``)."""
    return model_spec(name).label
