"""Contextualised stopwords on the TK of a pre-trained contextualiser: TK-Sparse's gate on TK-BERT (slides 30–33).

TK-Sparse (Hofstätter et al., CIKM 2020; :mod:`lib.models.tk_sparse`) learns, after the contextualisation, which
stored passage terms no query will need: a term whose gate is 0 adds nothing to any kernel (eq. 6 with a weight per
passage term), so an index need not store it; the book trains the gate to remove a target share of the terms (its
module docstring says why, and how). The authors put it on TK; the book's chosen TK for the stored regime is TK-BERT-6
(:mod:`lib.models.tk_bert`: eq. 1 on all-MiniLM-L6-v2's layers), whose index chapter 3 makes compact.
:class:`TKBertSparse` is that TK with the same gate, trained the same way (its own Adam group, the share ramped in,
straight-through, checkpoints before the end of the ramp or removing nearly everything not eligible), on ``ŝ_i``
mixed from the BERT's embedding layer and its layers' output (``H``-d, before any projection).

Its stored index keeps only the kept pieces' vectors, stored and scored as TK-BERT's; chapter 3 stores them in
float16, int8 and product-quantised (:mod:`lib.reranking.passage_index`). Not in the TK-Sparse paper (a book addition
for the stored regime): the gate on a pre-trained contextualiser, and its target and ramp, which are the book's
(:data:`BERT_REMOVAL_TARGET`, :data:`BERT_RAMP_STEPS`).
"""

from __future__ import annotations

import copy
import os

from transformers import BertModel

from lib.models.bert_cat import BOOK_BERT_LR, HEAD_LR
from lib.models.tk import TKConfig
from lib.models.tk_bert import TKBert
from lib.models.tk_sparse import GATE_LR, REMOVAL_TARGET, GatedPassages, with_gate_group

#: The share of terms TK-BERT's gate is trained to remove: TK-Sparse's, the one chapter 8's sweep chose for TK-2 on
#: validation (lib.core.decisions, ``removal_targets``), taken over, not swept again (a TK-BERT-6-sized training each).
BERT_REMOVAL_TARGET = REMOVAL_TARGET
#: Training steps over which the removed share rises from 0: TK-BERT-6 trains at most 500 steps and stops early, so
#: its ramp is shorter than TK-2's 300 of 1,000 — three of its validations.
BERT_RAMP_STEPS = 120


class TKBertSparse(GatedPassages, TKBert):
    """TK on a BERT's first ``num_layers`` layers (:class:`lib.models.tk_bert.TKBert`) with TK-Sparse's stopword gate
    (:class:`lib.models.tk_sparse.GatedPassages`); see the module docstring. Takes TKBert's arguments,
    ``removal_target`` (the share of terms to remove) and ``ramp_steps``."""

    def __init__(
        self,
        bert: BertModel | str | os.PathLike,
        num_layers: int,
        *,
        bert_lr: float = BOOK_BERT_LR,
        head_lr: float = HEAD_LR,
        config: TKConfig | None = None,
        removal_target: float = BERT_REMOVAL_TARGET,
        ramp_steps: int = BERT_RAMP_STEPS,
    ) -> None:
        TKBert.__init__(self, bert, num_layers, bert_lr=bert_lr, head_lr=head_lr, config=config)
        self.init_gate(self.embedding.word_embeddings.embedding_dim, removal_target, ramp_steps)

    @classmethod
    def from_trained(
        cls, full: TKBert, removal_target: float = BERT_REMOVAL_TARGET, ramp_steps: int = BERT_RAMP_STEPS
    ) -> TKBertSparse:
        """A copy of the trained TK-BERT ``full`` (no projection) with a fresh gate: every weight ``full``'s, the gate's
        layers newly initialised, so that training learns which terms to remove from a ranker that already ranks
        (``lib.core.profiles.TrainingSettings.sparse_start``); ``full`` is left unchanged."""
        if not isinstance(full, TKBert) or isinstance(full, TKBertSparse) or full.projection is not None:
            raise ValueError("parameter 'full' must be a full TK-BERT (no gate, no projection)")
        model = copy.deepcopy(full)
        model.__class__ = cls
        device = next(full.parameters()).device
        model.init_gate(full.embedding.word_embeddings.embedding_dim, removal_target, ramp_steps)
        return model.to(device)

    def optimizer_groups(
        self, bert_lr: float | None = None, head_lr: float | None = None, gate_lr: float = GATE_LR
    ) -> list[dict]:
        """TK-BERT's Adam groups (``bert``, ``head``: :meth:`lib.models.tk_bert.TKBert.optimizer_groups`) with the
        gate's parameters in a group ``gate`` of their own at ``gate_lr``."""
        groups = TKBert.optimizer_groups(self, bert_lr, head_lr)
        return with_gate_group(groups, self.gate_parameters(), gate_lr)


__all__ = ["BERT_RAMP_STEPS", "BERT_REMOVAL_TARGET", "TKBertSparse"]
