"""TK on a pre-trained contextualiser: TK's eq. 1 and 4–10 with ``context(·)`` = a BERT's first layers.

The TK paper (Hofstätter et al., ECAI 2020, §3) contextualises 300-d GloVe vectors with 1–3 small
Transformer layers trained from scratch on 40M MS MARCO triples. At book scale (50-d GloVe 6B, a
few thousand teacher-labelled queries) that TK stays level with BM25, so the book also measures a TK
that *starts* from pre-trained knowledge: the same hybrid mix, match matrix, kernels and scoring, with

``t_i`` = the starting BERT's embedding layer (word-piece + position + segment embedding, layer-normed),
``context(t_{1:n})`` = that BERT's first ``num_layers`` Transformer layers over ``[CLS] t_{1:n} [SEP]``,

and eq. 1 ``t̂_i = α·t_i + (1−α)·context(t_{1:n})_i`` for the real pieces only. Everything after eq. 1 is
:class:`lib.models.tk.TK`'s (inherited): the cosine match matrix (eq. 4), 11 RBF kernels (eq. 5–6), the
log and length pooling (eq. 7–8), ``W_log``, ``W_len`` (eq. 9) and ``s = β·s_log + γ·s_len`` (eq. 10).
Query and passage are still contextualised separately, so the passage side is query-independent
(:meth:`encode_passages`) as in TK.

Deviations from the paper, named:

- **Word pieces, not words**: the BERT's WordPiece vocabulary; the match matrix is over pieces
  (a word split into pieces contributes each of its pieces as a query or passage term).
- **The contextualiser is a pre-trained BERT** (all-MiniLM-L6-v2 at book scale: 384-d, 12 heads,
  feed-forward 1,536; ``bert-base-uncased`` for ``paper``), not TK's own small layers of eq. 2–3; its
  learned position embeddings replace the sinusoids, and its post-norm layers are BERT's.
- **``[CLS]`` and ``[SEP]``** wrap each side as the BERT was trained (:func:`lib.models.bi_encoder.wrap`)
  and then leave: they take part in the contextualisation but are not terms of the match matrix.
- **Learning rates**: the pre-trained part (embedding layer and layers) at a BERT fine-tuning rate
  (``bert_lr``; the book profile's ``bert_cat_lr`` with its warm-up and decay), the scoring layers
  (α, ``W_log``, ``W_len``, β, γ) at the paper's 10⁻³ (``head_lr``).
- BERT's dropout stays as the starting BERT's configuration sets it (0.1 for MiniLM) in training.

**A compact index** (``projection_dim``): a learned linear map ``P`` (no bias) from eq. 1's ``H``-d vectors to ``d``
dimensions, ``t̂' = P·t̂``, applied to both sides before the match matrix (eq. 4), so the index stores ``d`` numbers
per passage piece instead of ``H`` (ColBERT's projection to a small dimension, Khattab & Zaharia 2020, §3.2 and its
dimension ablation, is the precedent). ``P`` starts as a random orthogonal map (cosines roughly kept) and trains
with the scoring layers at ``head_lr``; :meth:`TKBert.compacted` instead adds a given ``P`` to a trained full TK
(:mod:`lib.experiments.compact_tk`: its principal directions). Not in the TK paper: a book addition for the stored
regime.
"""

from __future__ import annotations

import copy
import os

import torch
from torch import nn
from transformers import BertModel

from lib.models.bert_cat import BOOK_BERT_LR, HEAD_LR
from lib.models.bert_layers import run_layers, starting_bert
from lib.models.bi_encoder import wrap
from lib.models.tk import TK, TKConfig


class BertContext(nn.Module):
    """``context(·)`` of eq. 1 on a BERT's layers: ``[B, T, H]`` hidden states of ``[CLS] pieces [SEP]`` and
    their attention mask ``[B, T]`` → the layers' output ``[B, T, H]``."""

    def __init__(self, layers: nn.ModuleList) -> None:
        super().__init__()
        self.layers = layers

    def forward(self, hidden: torch.Tensor, attention: torch.Tensor) -> torch.Tensor:
        return run_layers(self.layers, hidden, attention)


class TKBert(TK):
    """TK (eq. 1, 4–10) whose embeddings and contextualiser are a pre-trained BERT's; see the module docstring.

    Args:
        bert: a ``BertModel``, or a folder for :func:`lib.representations.bert.load_bert`.
        num_layers: how many of the BERT's first layers contextualise (1 ≤ N ≤ its layers).
        bert_lr, head_lr: the default Adam rates of the pre-trained part and of the scoring layers.
        config: α's start, the kernels and the scoring (the eq. 1, 5–10 fields of :class:`lib.models.tk.TKConfig`;
            its Transformer fields do not apply: the BERT is the contextualiser).
        projection_dim: ``d`` of the compact index's projection (module docstring); ``None``: none, ``H``-d vectors.
    """

    def __init__(
        self,
        bert: BertModel | str | os.PathLike,
        num_layers: int,
        *,
        bert_lr: float = BOOK_BERT_LR,
        head_lr: float = HEAD_LR,
        config: TKConfig | None = None,
        projection_dim: int | None = None,
    ) -> None:
        nn.Module.__init__(self)
        bert = starting_bert(bert, num_layers)
        self.embedding = bert.embeddings
        self.contextualiser = BertContext(bert.encoder.layer)
        self.num_layers = num_layers
        self.bert_lr, self.head_lr = bert_lr, head_lr
        self.init_scoring(config or TKConfig())
        hidden = bert.config.hidden_size
        if projection_dim is not None and projection_dim < 1:
            raise ValueError(f"parameter 'projection_dim' must be a positive width (below {hidden} to be compact)")
        self.projection = None if projection_dim is None else nn.Linear(hidden, projection_dim, bias=False)
        if self.projection is not None:
            nn.init.orthogonal_(self.projection.weight)

    def _mix(self, embeddings: torch.Tensor, context: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Eq. 1, then the compact index's projection ``P`` when there is one (padding stays 0: ``P`` has no bias)."""
        mixed = super()._mix(embeddings, context, mask)
        return mixed if self.projection is None else self.projection(mixed)

    def compacted(self, projection: torch.Tensor) -> TKBert:
        """A copy of this full TK with the compact index's ``P`` = ``projection`` ``[d, H]`` added (module docstring);
        every other weight is this model's, and this model is left unchanged."""
        if self.projection is not None:
            raise ValueError("this TK is already compact: its projection is set")
        hidden = self.embedding.word_embeddings.embedding_dim
        if projection.dim() != 2 or projection.shape[1] != hidden or not 0 < projection.shape[0] <= hidden:
            raise ValueError(f"parameter 'projection' must be [d, {hidden}] with 0 < d <= {hidden}, got "
                             f"{list(projection.shape)}")  # fmt: skip
        model = copy.deepcopy(self)
        model.projection = nn.Linear(hidden, projection.shape[0], bias=False)
        with torch.no_grad():
            model.projection.weight.copy_(projection)
        return model

    def embed_and_context(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``t`` and ``context(t)`` of the real pieces, ``[B, L, H]`` each, 0 at padding: the BERT reads
        ``[CLS] pieces [SEP]``; the two markers are dropped from its output."""
        wrapped, attention = wrap(ids, mask)
        hidden = self.embedding(input_ids=wrapped)
        context = self.contextualiser(hidden, attention.bool())
        keep = mask.unsqueeze(-1).to(hidden.dtype)
        width = ids.shape[1]
        return hidden[:, 1 : width + 1] * keep, context[:, 1 : width + 1] * keep.to(context.dtype)

    def optimizer_groups(self, bert_lr: float | None = None, head_lr: float | None = None) -> list[dict]:
        """Two Adam groups: ``bert`` (embedding layer and layers, ``bert_lr``) and ``head`` (α, ``W_log``,
        ``W_len``, β, γ, the scaler and the projection ``P``: ``head_lr``)."""
        bert_params = [*self.embedding.parameters(), *self.contextualiser.parameters()]
        taken = {id(param) for param in bert_params}
        head = [param for param in self.parameters() if id(param) not in taken]
        return [
            {"params": bert_params, "lr": self.bert_lr if bert_lr is None else bert_lr, "name": "bert"},
            {"params": head, "lr": self.head_lr if head_lr is None else head_lr, "name": "head"},
        ]
