"""The book's one model registry: every re-ranker of chapters 2 and 8 (trained or zero-shot), what the book knows of it.

Chapters, training and evaluation never special-case a model by its name; they ask its
:class:`ModelSpec` here: how to build it, its display label, which tokenizer family feeds it (a word
vocabulary with an embedding matrix, or WordPiece with a BERT folder), its scoring batch size,
whether it is trained at all (``zero_shot``), and which paper-size architecture of
:mod:`lib.models.paper_size` has its speed in the paper's situation. Optimiser groups come from the
model itself (``model.optimizer_groups()``, TK paper §4.3).

**Adding a model** is one new module plus one registry line: write ``lib/models/<name>.py`` with the
book's scoring interface (``forward(query_ids, query_mask, doc_ids, doc_mask)`` → one score per pair,
and ``optimizer_groups()``), then add ``"<name>": ModelSpec("<name>", "<Label>", "word" | "wordpiece",
<constructor>, ...)`` to :data:`MODELS`. A ``word`` constructor takes the embedding matrix; a
``wordpiece`` one the BERT folder and ``num_layers`` (the first N layers; ``None``: all). Chapter 2 then
trains, scores and tabulates it.

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
from lib.models.bi_encoder import BiEncoder
from lib.models.colbert import ColBERT
from lib.models.conv_knrm import ConvKNRM, ConvKNRMConfig
from lib.models.knrm import KNRM
from lib.models.prettr import PreTTR
from lib.models.tk import TK, TKConfig, width_for
from lib.models.tk_bert import TKBert
from lib.models.tk_bert_sparse import TKBertSparse
from lib.models.tk_sparse import TKSparse
from lib.representations.pretrained import minilm_folder

Family = Literal["word", "pieces", "wordpiece"]


@dataclass(frozen=True)
class ModelSpec:
    """One registered model.

    Attributes:
        name: the book's name (file names, parameters): ``tk2``, ``bert-cat``, …
        label: how tables and figures show it: ``TK-2``, ``BERT-cat``, …
        family: ``"word"`` (built from a word-embedding matrix, fed by a word vocabulary),
            ``"pieces"`` (built from an embedding matrix over a BERT's word pieces — the static vectors of
            :mod:`lib.representations.piece_vectors` —, fed by that BERT's WordPiece tokenizer) or
            ``"wordpiece"`` (built from a BERT folder, fed by a WordPiece tokenizer).
        build: the constructor: takes the embedding matrix (``word``, ``pieces``), or the BERT folder and
            ``num_layers`` (``wordpiece``).
        score_batch_size: pairs per batch when scoring or timing it.
        eval_batch_size: pairs per batch when validating it during training.
        paper_architecture: the :mod:`lib.models.paper_size` architecture whose speed it has in the
            paper's situation (TK at 300-d, BERT-cat on BERT-Base); ``None``: the model as it is.
        zero_shot: used as it is, never trained (its weights are the pre-trained package's).
    """

    name: str
    label: str
    family: Family
    build: Callable[..., nn.Module]
    score_batch_size: int
    eval_batch_size: int
    paper_architecture: str | None
    zero_shot: bool = False


def _tk(num_layers: int) -> Callable[[torch.Tensor], TK]:
    """TK with ``num_layers`` layers, its width following the embedding matrix (:func:`lib.models.tk.width_for`)."""
    return lambda embeddings: TK(embeddings, config=TKConfig(num_layers=num_layers, **width_for(embeddings.shape[1])))


def _tk_bert(depth: int, projection_dim: int | None = None) -> Callable[..., TKBert]:
    """TK on the starting BERT's first ``depth`` layers (:mod:`lib.models.tk_bert`), projected to ``projection_dim``
    for a compact index when given: the depth is the registry line's; the ``num_layers`` every ``wordpiece``
    constructor is given (BERT-cat's) does not apply."""
    return lambda folder, num_layers=None: TKBert(folder, depth, projection_dim=projection_dim)


def _tk_bert_sparse(depth: int) -> Callable[..., TKBertSparse]:
    """TK-BERT on the starting BERT's first ``depth`` layers with TK-Sparse's stopword gate
    (:mod:`lib.models.tk_bert_sparse`), its removal target and ramp the module's."""
    return lambda folder, num_layers=None: TKBertSparse(folder, depth)


def _tk_sparse(embeddings: torch.Tensor) -> TKSparse:
    """TK-Sparse on TK-2 (two layers, the width following the embedding matrix), its removal target the module's."""
    return TKSparse(embeddings, config=TKConfig(num_layers=2, **width_for(embeddings.shape[1])))


def _knrm(embeddings: torch.Tensor) -> KNRM:
    """KNRM as the TK authors' code has it: no tanh and no bias on the score (``use_tanh=False, bias=False``).

    The book trains it by Margin-MSE (:mod:`lib.training.distillation`): a tanh-bounded score cannot
    reach the teacher's margins (up to about 10), and the saturated tanh stops the gradient.
    """
    return KNRM(embeddings, use_tanh=False, bias=False)


def _conv_knrm(embeddings: torch.Tensor) -> ConvKNRM:
    """Conv-KNRM without tanh and bias on the score, for the same reason as :func:`_knrm`."""
    return ConvKNRM(embeddings, config=ConvKNRMConfig(use_tanh=False, bias=False))


def _minilm_bi_encoder(_folder: Path | None = None, num_layers: int | None = None) -> BiEncoder:
    """all-MiniLM-L6-v2 as a bi-encoder, whatever BERT the other models start from (zero-shot)."""
    return BiEncoder(minilm_folder())


MODELS: dict[str, ModelSpec] = {
    "bi-encoder": ModelSpec("bi-encoder", "MiniLM bi-encoder", "wordpiece", _minilm_bi_encoder, 64, 64, None, True),
    "knrm": ModelSpec("knrm", "KNRM", "word", _knrm, 256, 128, "knrm"),
    "conv-knrm": ModelSpec("conv-knrm", "Conv-KNRM", "word", _conv_knrm, 256, 128, "conv-knrm"),
    "tk1": ModelSpec("tk1", "TK-1", "word", _tk(1), 256, 128, "tk1"),
    "tk2": ModelSpec("tk2", "TK-2", "word", _tk(2), 256, 128, "tk2"),
    "tk3": ModelSpec("tk3", "TK-3", "word", _tk(3), 256, 128, "tk3"),
    "knrm-pieces": ModelSpec("knrm-pieces", "KNRM (pieces)", "pieces", _knrm, 256, 128, None),
    "conv-knrm-pieces": ModelSpec("conv-knrm-pieces", "Conv-KNRM (pieces)", "pieces", _conv_knrm, 256, 128, None),
    "tk1-pieces": ModelSpec("tk1-pieces", "TK-1 (pieces)", "pieces", _tk(1), 256, 128, None),
    "tk2-pieces": ModelSpec("tk2-pieces", "TK-2 (pieces)", "pieces", _tk(2), 256, 128, None),
    "tk3-pieces": ModelSpec("tk3-pieces", "TK-3 (pieces)", "pieces", _tk(3), 256, 128, None),
    "tk-bert1": ModelSpec("tk-bert1", "TK-BERT-1", "wordpiece", _tk_bert(1), 64, 64, None),
    "tk-bert2": ModelSpec("tk-bert2", "TK-BERT-2", "wordpiece", _tk_bert(2), 64, 64, None),
    "tk-bert3": ModelSpec("tk-bert3", "TK-BERT-3", "wordpiece", _tk_bert(3), 64, 64, None),
    "tk-bert6": ModelSpec("tk-bert6", "TK-BERT-6", "wordpiece", _tk_bert(6), 32, 32, None),
    "tk-bert6-d64": ModelSpec("tk-bert6-d64", "TK-BERT-6 (d=64)", "wordpiece", _tk_bert(6, 64), 32, 32, None),
    "tk-bert6-d32": ModelSpec("tk-bert6-d32", "TK-BERT-6 (d=32)", "wordpiece", _tk_bert(6, 32), 32, 32, None),
    "tk-bert1-sparse": ModelSpec("tk-bert1-sparse", "TK-BERT-1-Sparse", "wordpiece", _tk_bert_sparse(1), 64, 64, None),
    "tk-bert6-sparse": ModelSpec("tk-bert6-sparse", "TK-BERT-6-Sparse", "wordpiece", _tk_bert_sparse(6), 32, 32, None),
    "bert-cat": ModelSpec("bert-cat", "BERT-cat", "wordpiece", BertCat, 32, 32, "bert-base"),
    "prettr": ModelSpec("prettr", "PreTTR", "wordpiece", PreTTR, 32, 32, None),
    "colbert": ModelSpec("colbert", "ColBERT", "wordpiece", ColBERT, 32, 32, None),
    "tk2-sparse": ModelSpec("tk2-sparse", "TK-Sparse", "word", _tk_sparse, 256, 128, None),
}


def model_spec(name: str) -> ModelSpec:
    """The spec of model ``name``; an unknown name is a ``ValueError`` listing the known ones."""
    try:
        return MODELS[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; known: {list(MODELS)}") from None


def label(name: str) -> str:
    """The display label of model ``name`` (``"tk2"`` → ``"TK-2"``)."""
    return model_spec(name).label
