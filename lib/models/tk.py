"""TK, the Transformer-Kernel re-ranker (Hofstätter, Zlabinger, Hanbury, ECAI 2020, §3, eq. 1–10).

Query and document are contextualised separately by the same small Transformer stack; a hybrid of
each word embedding and its contextualised vector (eq. 1) enters a single cosine match matrix
(eq. 4), which is scored with kernel pooling (eq. 5–8, :mod:`lib.models.kernels`) through two paths, a
log-normalised and a length-normalised one, weighted per kernel (eq. 9) and combined (eq. 10).

Settings of the paper (§4.3): 300-d word embeddings, 1–3 Transformer layers (default 2, the
TREC runs and the time-budget comparison) of 16 attention heads of size 32 and a feed-forward
dimension of 100 (:func:`width_for` scales heads and feed-forward to narrower vectors), 11 kernels
(μ = 1, 0.9, 0.7, …, −0.9; σ = 0.1; no exact-match kernel), log base 2.
Adam with lr 1e-4 for the word embeddings and the Transformer layers, 1e-3 for everything else
(:data:`EMBEDDING_LR`, :data:`OTHER_LR`, :meth:`TK.optimizer_groups`).

Named choices where the paper leaves a detail open (fields of :class:`TKConfig` where an alternative is plausible):

- **Attention size** (eq. 3): 16 heads of size 32, i.e. Q/K/V projections of 300 → 512 and
  ``W^O``: 512 → 300 (with biases); the scale is ``1/√d_k = 1/√32``. ``nn.TransformerEncoderLayer``
  cannot do this (it ties the head dimensions to the 300-d model width), hence a small custom layer.
- **Block order** (eq. 2: ``MultiHead(FF(p)) + FF(p)``): feed-forward first, then self-attention with
  a residual connection around it (``block_order="ff_first"``, as written, and the order of the
  AllenNLP ``StackedSelfAttentionEncoder`` of the authors' code of the time); ``"attention_first"`` is
  Vaswani's order (and that of ``nn.TransformerEncoderLayer``, which a later version of their code used).
- **Residual around FF** (``ff_residual=True``): eq. 2 shows none, but a Transformer layer [32] has
  one on both sub-layers and so had the authors' code; ``False`` is the literal eq. 2.
- **Layer normalisation** (not in eq. 2): post-norm after each residual sub-layer (``norm="post"``,
  Vaswani and the authors' code); ``"pre"`` normalises each sub-layer's input and adds a final
  layer norm after the stack; ``"none"`` has none.
- **FF**: Linear(300, 100) → ReLU → Linear(100, 300). **Dropout** 0 everywhere (``dropout``; the
  authors' setting), on the sub-layer outputs and the attention weights when set.
- **Positional encoding** (eq. 2, "fused" to form ``p``): Vaswani's sinusoids (sin on even, cos on
  odd dimensions, base 10000), *added* unscaled to the embeddings, at the *input of the Transformer
  only*: the mixer of eq. 1 mixes the plain word embedding ``t_i`` with the contextualised vector.
  A token's position counts the real tokens before it, so where padding sits does not matter.
- **Masking**: padded positions are masked out of the attention keys, their vectors are set to 0
  after embedding and after mixing, and they contribute nothing to the kernel pooling
  (:mod:`lib.models.kernels`). Which tokens are real is the caller's mask (the authors' code also masked
  the OOV id; that is the data layer's business here).
- **Mixer α** (eq. 1): one learned scalar, initialised at 0.5 (``alpha_init``), unconstrained (not
  squashed to [0, 1]), as in the authors' code.
- **Kernel pooling**: log base 2, clamp ``1e-10`` before the logarithm, ``d_len`` the true document
  length (``length_plus_one=False``; the authors' code divides by ``d_len + 1``).
- **Scoring** (eq. 9–10): ``W_log`` and ``W_len`` are linear maps K → 1 without bias (eq. 9 has none,
  nor had the authors' code), initialised uniform in ±0.014 (the authors' code, after MatchZoo);
  ``β`` and ``γ`` are learned scalars initialised at 1.0 (``beta_init``, ``gamma_init``; the
  authors' code learned them as a bias-free Linear(2, 1) with PyTorch's default random init).
  ``feature_scaler=True`` adds the authors' code's learned scalar (init 0.01) that multiplies both
  kernel feature vectors before ``W_log`` / ``W_len``; it is off by default (not in the paper).
- **Learning-rate groups**: ``embeddings`` and ``contextualisation`` (every Transformer parameter)
  at 1e-4, ``other`` at 1e-3; α counts as "other" (a mixing weight, not a contextualisation layer).
- **Precision**: the match matrix, the kernels and the scoring always run in float32 with autocast
  off; only the Transformer layers run in reduced precision under autocast.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from lib.models.kernels import (
    KERNEL_SIGMA,
    LOG_CLAMP,
    N_KERNELS,
    KernelPooling,
    PooledKernels,
    cosine_match_matrix,
    full_precision,
    kernel_mus,
    kernel_sigmas,
)

#: Adam learning rate of the word embeddings and the contextualisation (Transformer) layers (TK paper §4.3).
EMBEDDING_LR = 1e-4
#: Adam learning rate of all other layers (TK paper §4.3).
OTHER_LR = 1e-3

BlockOrder = Literal["ff_first", "attention_first"]
NormPosition = Literal["post", "pre", "none"]


#: Positions whose sinusoidal encodings :class:`Contextualiser` keeps precomputed (the book caps passages at 200).
POSITION_TABLE = 512

#: Width of the paper's word embeddings (GloVe 42B, §4.3), for which :func:`width_for` gives the paper's sizes.
PAPER_WIDTH = 300


@dataclass(frozen=True)
class TKConfig:
    """TK's hyper-parameters, the paper's by default (§4.3); the module docstring names each choice.

    :func:`width_for` gives the attention and feed-forward sizes for narrower word vectors:
    ``TKConfig(num_layers=2, **width_for(dim))``.
    """

    #: Transformer layers of ``context(·)`` (eq. 1–2): 1–3 in the paper, 2 for its TREC runs and time budgets.
    num_layers: int = 2
    #: Attention heads ``h`` of eq. 3.
    num_heads: int = 16
    #: Size ``d_k`` of one head (eq. 3; the scale ``1/√d_k``).
    head_dim: int = 32
    #: Inner width of the feed-forward ``FF`` of eq. 2.
    ff_dim: int = 100
    #: Dropout on the sub-layer outputs and attention weights of eq. 2–3 (0: the authors' setting).
    dropout: float = 0.0
    #: Eq. 2's order of the sub-layers: ``"ff_first"`` as written, or Vaswani's ``"attention_first"``.
    block_order: BlockOrder = "ff_first"
    #: Layer normalisation around eq. 2's sub-layers: ``"post"``, ``"pre"`` or ``"none"``.
    norm: NormPosition = "post"
    #: A residual connection around eq. 2's ``FF`` (not written in eq. 2, in every Transformer layer).
    ff_residual: bool = True
    #: Start of the mixer α of eq. 1.
    alpha_init: float = 0.5
    #: Number of RBF kernels of eq. 5 (μ from 1 to −0.9).
    n_kernels: int = N_KERNELS
    #: Width σ of every kernel of eq. 5.
    kernel_sigma: float = KERNEL_SIGMA
    #: Base of the logarithm of eq. 7.
    log_base: float = 2.0
    #: Clamp before the logarithm of eq. 7.
    log_clamp: float = LOG_CLAMP
    #: Eq. 8 divides by ``d_len + 1`` (the authors' code) instead of the true length ``d_len``.
    length_plus_one: bool = False
    #: Start of β, the weight of ``s_log`` in eq. 10.
    beta_init: float = 1.0
    #: Start of γ, the weight of ``s_len`` in eq. 10.
    gamma_init: float = 1.0
    #: The authors' learned scalar (init 0.01) multiplying both kernel feature vectors before eq. 9.
    feature_scaler: bool = False


def width_for(dim: int) -> dict[str, int]:
    """TK's attention and feed-forward sizes for ``dim``-d word vectors: fields of :class:`TKConfig`.

    ``dim >= 300`` (the paper, §4.3): 16 heads of 32 and FF 100. Narrower vectors (GloVe 6B 50-d, the
    book's default) get ``dim // 10`` heads of 10 — an attention width equal to the model width, as in
    Vaswani et al. — and FF ``2·dim``: 5 heads of 10 and FF 100 for 50-d. The book names this scaling
    as a deviation on its "Deviations from the papers" page.
    """
    if dim >= PAPER_WIDTH:
        return {"num_heads": 16, "head_dim": 32, "ff_dim": 100}
    return {"num_heads": max(1, dim // 10), "head_dim": 10, "ff_dim": 2 * dim}


def embedding_layer(embeddings: torch.Tensor, freeze: bool) -> nn.Embedding:
    """An ``nn.Embedding`` initialised with a copy of ``embeddings`` (``[V, D]``, row 0 = padding).

    ``padding_idx=0`` keeps the padding row's gradient at zero. The matrix is copied, so two models
    built from one matrix do not share (or train) the caller's tensor.
    """
    if embeddings.dim() != 2:
        raise ValueError(f"parameter 'embeddings' must be a [V, D] matrix, got shape {tuple(embeddings.shape)}")
    return nn.Embedding.from_pretrained(embeddings.detach().clone().float(), freeze=freeze, padding_idx=0)


def embed(layer: nn.Embedding, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Look up ``ids`` (``[B, L]``) and set padded positions (``mask`` False) to 0: ``[B, L, D]``."""
    return layer(ids) * mask.unsqueeze(-1).to(layer.weight.dtype)


def param_groups(named: dict[str, tuple[list[nn.Parameter], float]]) -> list[dict]:
    """Torch optimizer groups ``{"name", "params", "lr"}``, trainable parameters only, empty groups left out."""
    groups = []
    for name, (params, lr) in named.items():
        trainable = [param for param in params if param.requires_grad]
        if trainable:
            groups.append({"name": name, "params": trainable, "lr": lr})
    return groups


def sinusoidal_encoding(positions: torch.Tensor, dim: int) -> torch.Tensor:
    """Vaswani et al.'s positional encoding of integer ``positions`` (``[B, L]``): ``[B, L, dim]`` float32.

    ``PE[p, 2i] = sin(p / 10000^(2i/dim))``, ``PE[p, 2i+1] = cos(p / 10000^(2i/dim))``.
    """
    frequencies = torch.exp(
        torch.arange(0, dim, 2, device=positions.device, dtype=torch.float32) * (-math.log(10000.0) / dim)
    )
    angles = positions.to(torch.float32).unsqueeze(-1) * frequencies
    return torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).flatten(-2)[..., :dim]


def distinct_queries(
    query_ids: torch.Tensor, query_mask: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The distinct (ids, mask) rows of a batch of queries, and for each row the index of its distinct row.

    ``query_ids`` / ``query_mask`` are ``[B, L]``; returns ``ids [U, L]``, ``mask [U, L]`` (bool) and
    ``rows [B]`` with ``ids[rows] == query_ids`` and ``mask[rows] == query_mask``.
    """
    length = query_ids.shape[1]
    keys = torch.cat([query_ids.long(), query_mask.long()], dim=1)
    distinct, rows = torch.unique(keys, dim=0, return_inverse=True)
    return distinct[:, :length].to(query_ids.dtype), distinct[:, length:].bool(), rows


def take_rows(tensor: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """``tensor[rows]`` (``rows`` ``[B]`` indices into the first dimension, repeats allowed) with a deterministic
    gradient: ``index_select``'s backward adds the repeated rows' gradients in a fixed order, while advanced
    indexing's (``index_put_`` with accumulation) adds them with atomic operations on CPU, in whatever order the
    threads run — so a model that encodes each distinct query once (:func:`distinct_queries`) trained to other
    weights in every process (tested)."""
    return tensor.index_select(0, rows)


class MultiHeadSelfAttention(nn.Module):
    """Eq. 3: ``Concat(head_1, …, head_h) W^O``, ``head_i = softmax(p W_i^Q (p W_i^K)^T / √d_k) p W_i^V``.

    ``num_heads`` heads of size ``head_dim`` on ``dim``-d inputs (independent of each other: TK has
    16 × 32 = 512 attention dimensions on 300-d inputs). Padded keys are masked out; a sequence
    without any real token attends to all of its (padded) positions, which keeps the output finite
    (those positions are masked out later anyway).
    """

    def __init__(self, dim: int, num_heads: int = 16, head_dim: int = 32, dropout: float = 0.0) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = head_dim
        self.dropout = dropout
        self.qkv = nn.Linear(dim, 3 * num_heads * head_dim)
        self.out = nn.Linear(num_heads * head_dim, dim)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        batch, length, _ = x.shape
        q, k, v = self.qkv(x).view(batch, length, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        keys = mask | ~mask.any(dim=-1, keepdim=True)
        attended = F.scaled_dot_product_attention(
            q, k, v, attn_mask=keys[:, None, None, :], dropout_p=self.dropout if self.training else 0.0
        )
        return self.out(attended.transpose(1, 2).reshape(batch, length, self.num_heads * self.head_dim))


class TransformerLayer(nn.Module):
    """One TK Transformer layer (eq. 2): by default ``h = LN(p + FF(p))``, ``out = LN(h + MultiHead(h))``.

    See the module docstring for ``block_order``, ``norm`` and ``ff_residual``.
    """

    def __init__(
        self,
        dim: int,
        num_heads: int = 16,
        head_dim: int = 32,
        ff_dim: int = 100,
        dropout: float = 0.0,
        block_order: BlockOrder = "ff_first",
        norm: NormPosition = "post",
        ff_residual: bool = True,
    ) -> None:
        super().__init__()
        if block_order not in ("ff_first", "attention_first"):
            raise ValueError(f"parameter 'block_order' must be 'ff_first' or 'attention_first', got {block_order!r}")
        if norm not in ("post", "pre", "none"):
            raise ValueError(f"parameter 'norm' must be 'post', 'pre' or 'none', got {norm!r}")
        self.block_order = block_order
        self.norm = norm
        self.ff_residual = ff_residual
        self.ff = nn.Sequential(nn.Linear(dim, ff_dim), nn.ReLU(), nn.Linear(ff_dim, dim))
        self.attention = MultiHeadSelfAttention(dim, num_heads, head_dim, dropout)
        self.ff_norm = nn.LayerNorm(dim) if norm != "none" else nn.Identity()
        self.attention_norm = nn.LayerNorm(dim) if norm != "none" else nn.Identity()
        self.drop = nn.Dropout(dropout)

    def _sublayer(self, x: torch.Tensor, output: torch.Tensor, norm: nn.Module, residual: bool) -> torch.Tensor:
        output = self.drop(output)
        output = x + output if residual else output
        return output if self.norm == "pre" else norm(output)

    def _ff(self, x: torch.Tensor) -> torch.Tensor:
        inner = self.ff_norm(x) if self.norm == "pre" else x
        return self._sublayer(x, self.ff(inner), self.ff_norm, self.ff_residual)

    def _attention(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        inner = self.attention_norm(x) if self.norm == "pre" else x
        return self._sublayer(x, self.attention(inner, mask), self.attention_norm, True)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if self.block_order == "ff_first":
            return self._attention(self._ff(x), mask)
        return self._ff(self._attention(x, mask))


class Contextualiser(nn.Module):
    """``context(t_{1:n})`` of eq. 1: positional encoding added to the embeddings, then ``num_layers`` layers.

    The encodings of the first :data:`POSITION_TABLE` positions are computed once (a buffer left out of
    checkpoints); longer sequences compute theirs on the fly.
    """

    def __init__(self, dim: int, num_layers: int, norm: NormPosition = "post", **layer_settings) -> None:
        super().__init__()
        if num_layers < 1:
            raise ValueError(f"parameter 'num_layers' must be >= 1, got {num_layers}")
        self.layers = nn.ModuleList(TransformerLayer(dim, norm=norm, **layer_settings) for _ in range(num_layers))
        self.final_norm = nn.LayerNorm(dim) if norm == "pre" else nn.Identity()
        table = sinusoidal_encoding(torch.arange(POSITION_TABLE)[None, :], dim)[0]
        self.register_buffer("position_table", table, persistent=False)

    def forward(self, embeddings: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``embeddings`` ``[B, L, D]`` (0 at padding) → contextualised ``[B, L, D]`` (0 at padding)."""
        mask = mask.bool()
        positions = (mask.long().cumsum(dim=-1) - 1).clamp_min(0)
        keep = mask.unsqueeze(-1)
        if embeddings.shape[1] <= POSITION_TABLE:
            encoding = self.position_table.float()[positions]
        else:
            encoding = sinusoidal_encoding(positions, embeddings.shape[-1])
        x = (embeddings + encoding.to(embeddings.dtype)) * keep
        for layer in self.layers:
            x = layer(x, mask)
        return self.final_norm(x) * keep


@dataclass
class TKExplanation:
    """Every intermediate result of a TK score, for ``B`` pairs, ``K`` kernels and ``D``-d vectors.

    The score decomposes exactly over the kernels:
    ``s = log_terms.sum(-1) + len_terms.sum(-1) = β · s_log + γ · s_len``.
    """

    #: Word embeddings ``t`` of the query / document, ``[B, Lq, D]`` / ``[B, Ld, D]``, 0 at padding.
    query_embeddings: torch.Tensor
    doc_embeddings: torch.Tensor
    #: Hybrid contextualised vectors ``t̂`` (eq. 1), ``[B, Lq, D]`` / ``[B, Ld, D]``, 0 at padding.
    query_vectors: torch.Tensor
    doc_vectors: torch.Tensor
    #: Cosine match matrix ``M`` (eq. 4), ``[B, Lq, Ld]``, 0 at padded positions.
    match: torch.Tensor
    #: Kernel centres and widths, ``[K]``.
    mus: torch.Tensor
    sigmas: torch.Tensor
    #: ``K_i^k`` (eq. 6), ``[B, Lq, K]``, 0 for padded query terms.
    kernel_sums: torch.Tensor
    #: ``s_log^k`` (eq. 7) and ``s_len^k`` (eq. 8), before any learned weight, ``[B, K]``.
    s_log_k: torch.Tensor
    s_len_k: torch.Tensor
    #: Per-kernel contributions to ``s``, learned weights applied: ``β·c·W_log[k]·s_log^k`` and
    #: ``γ·c·W_len[k]·s_len^k`` (``c`` the feature scaler, 1 unless ``feature_scaler``), ``[B, K]``.
    log_terms: torch.Tensor
    len_terms: torch.Tensor
    #: ``s_log = c · s_log^k W_log`` and ``s_len = c · s_len^k W_len`` (eq. 9), ``[B]``.
    s_log: torch.Tensor
    s_len: torch.Tensor
    #: The score ``s = β · s_log + γ · s_len`` (eq. 10), ``[B]``.
    s: torch.Tensor
    #: The learned scalars α (eq. 1), β, γ (eq. 10) and the feature scaler ``c``, 0-d tensors.
    alpha: torch.Tensor
    beta: torch.Tensor
    gamma: torch.Tensor
    scaler: torch.Tensor


class TK(nn.Module):
    """The Transformer-Kernel re-ranker (eq. 1–10); the module docstring names every choice.

    ``forward(query_ids, query_mask, doc_ids, doc_mask) -> [B]`` scores; :meth:`explain` returns
    every intermediate (a :class:`TKExplanation`); :meth:`contextualise` the hybrid vectors of one side.
    """

    #: A stored passage is read only through eq. 4's cosines (:meth:`score_match`, :meth:`score_rows`); a subclass
    #: that reads more of its stored vectors (their lengths, their windows) sets it False.
    scores_from_match: bool = True

    def __init__(
        self, embeddings: torch.Tensor, freeze_embeddings: bool = False, config: TKConfig | None = None
    ) -> None:
        super().__init__()
        config = config or TKConfig()
        self.embedding = embedding_layer(embeddings, freeze_embeddings)
        self.contextualiser = Contextualiser(
            self.embedding.embedding_dim,
            config.num_layers,
            norm=config.norm,
            num_heads=config.num_heads,
            head_dim=config.head_dim,
            ff_dim=config.ff_dim,
            dropout=config.dropout,
            block_order=config.block_order,
            ff_residual=config.ff_residual,
        )
        self.init_scoring(config)

    def init_scoring(self, config: TKConfig) -> None:
        """The layers after the contextualisation, from ``config``'s eq. 1 and 5–10 fields: the mixer α (eq. 1),
        the kernels (eq. 5–8), ``W_log``, ``W_len`` (eq. 9), β and γ (eq. 10) and the optional feature scaler
        (module docstring)."""
        self.alpha = nn.Parameter(torch.tensor(float(config.alpha_init)))
        self.kernel_pooling = KernelPooling(
            kernel_mus(config.n_kernels),
            kernel_sigmas(config.n_kernels, sigma=config.kernel_sigma),
            log_base=config.log_base,
            log_clamp=config.log_clamp,
            length_plus_one=config.length_plus_one,
        )
        self.w_log = nn.Linear(config.n_kernels, 1, bias=False)
        self.w_len = nn.Linear(config.n_kernels, 1, bias=False)
        nn.init.uniform_(self.w_log.weight, -0.014, 0.014)
        nn.init.uniform_(self.w_len.weight, -0.014, 0.014)
        self.beta = nn.Parameter(torch.tensor(float(config.beta_init)))
        self.gamma = nn.Parameter(torch.tensor(float(config.gamma_init)))
        self.scaler = nn.Parameter(torch.tensor(0.01)) if config.feature_scaler else None

    def contextualise(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Eq. 1 for one side: ``t̂ = α·t + (1−α)·context(t)``, ``[B, L, D]``, 0 at padding."""
        mask = mask.bool()
        return self._mix(*self.embed_and_context(ids, mask), mask)

    def embed_and_context(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The two inputs of eq. 1 for one side: the embeddings ``t`` and ``context(t)``, each ``[B, L, D]``,
        0 at padding (``mask`` bool). A TK on another contextualiser (:mod:`lib.models.tk_bert`) overrides it."""
        embeddings = embed(self.embedding, ids, mask)
        return embeddings, self.contextualiser(embeddings, mask)

    def _mix(self, embeddings: torch.Tensor, context: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        mixed = self.alpha * embeddings + (1 - self.alpha) * context
        return mixed * mask.unsqueeze(-1)

    def explain(
        self, query_ids: torch.Tensor, query_mask: torch.Tensor, doc_ids: torch.Tensor, doc_mask: torch.Tensor
    ) -> TKExplanation:
        """Score a batch and return every intermediate result (:class:`TKExplanation`)."""
        query_mask, doc_mask = query_mask.bool(), doc_mask.bool()
        query_embeddings, query_context = self.embed_and_context(query_ids, query_mask)
        doc_embeddings, doc_context = self.embed_and_context(doc_ids, doc_mask)
        query_vectors = self._mix(query_embeddings, query_context, query_mask)
        doc_vectors = self._mix(doc_embeddings, doc_context, doc_mask)
        with full_precision(query_vectors.device):
            match = cosine_match_matrix(query_vectors, doc_vectors, query_mask, doc_mask)
            pooled = self.kernel_pooling(match, query_mask, doc_mask)
            scaler, log_weighted, len_weighted = self._weighted(pooled)
            beta, gamma = self.beta.float(), self.gamma.float()
            s_log = log_weighted.sum(dim=-1)
            s_len = len_weighted.sum(dim=-1)
            return TKExplanation(
                query_embeddings=query_embeddings,
                doc_embeddings=doc_embeddings,
                query_vectors=query_vectors,
                doc_vectors=doc_vectors,
                match=match,
                mus=self.kernel_pooling.mus,
                sigmas=self.kernel_pooling.sigmas,
                kernel_sums=pooled.kernel_sums,
                s_log_k=pooled.log,
                s_len_k=pooled.length,
                log_terms=beta * log_weighted,
                len_terms=gamma * len_weighted,
                s_log=s_log,
                s_len=s_len,
                s=beta * s_log + gamma * s_len,
                alpha=self.alpha,
                beta=self.beta,
                gamma=self.gamma,
                scaler=scaler,
            )

    def _weighted(self, pooled: PooledKernels) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The feature scaler and the per-kernel terms ``c·W_log[k]·s_log^k``, ``c·W_len[k]·s_len^k`` (eq. 9)."""
        scaler = self.scaler.float() if self.scaler is not None else torch.ones((), device=pooled.log.device)
        log_weighted = scaler * pooled.log * self.w_log.weight[0].float()
        len_weighted = scaler * pooled.length * self.w_len.weight[0].float()
        return scaler, log_weighted, len_weighted

    def forward(
        self, query_ids: torch.Tensor, query_mask: torch.Tensor, doc_ids: torch.Tensor, doc_mask: torch.Tensor
    ) -> torch.Tensor:
        """One score per pair, ``[B]`` float32 (eq. 10): :meth:`explain`'s ``s``, computed the fast way.

        Query and passage are contextualised independently (the point of TK, §3), so each *distinct*
        query of the batch is contextualised once and its vectors are shared by all of its rows — a
        re-ranking batch holds a few queries and many passages. Only the score is kept, not the
        intermediates of :class:`TKExplanation`. Equal to ``explain(...).s`` to float tolerance (tested).
        """
        query_mask, doc_mask = query_mask.bool(), doc_mask.bool()
        distinct_ids, distinct_mask, row_query = distinct_queries(query_ids, query_mask)
        query_vectors = take_rows(self.contextualise(distinct_ids, distinct_mask), row_query)
        doc_vectors, stored_mask = self.encode_passages(doc_ids, doc_mask)
        return self.score_vectors(query_vectors, query_mask, doc_vectors, stored_mask)

    def encode_passages(self, doc_ids: torch.Tensor, doc_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """What an index stores per passage (TK §3: the passage side is query-independent): its hybrid
        vectors (eq. 1) ``[N, Ld, D]`` and the mask of the stored terms ``[N, Ld]``."""
        doc_mask = doc_mask.bool()
        return self.contextualise(doc_ids, doc_mask), doc_mask

    def score_vectors(
        self, query_vectors: torch.Tensor, query_mask: torch.Tensor, doc_vectors: torch.Tensor, doc_mask: torch.Tensor
    ) -> torch.Tensor:
        """Eq. 4–10 on contextualised vectors of ``B`` pairs: the match matrix, kernel pooling and the score ``[B]``."""
        with full_precision(doc_vectors.device):
            return self.score_match(cosine_match_matrix(query_vectors, doc_vectors, query_mask, doc_mask), query_mask,
                                    doc_mask)  # fmt: skip

    def score_match(self, match: torch.Tensor, query_mask: torch.Tensor, doc_mask: torch.Tensor) -> torch.Tensor:
        """Eq. 5–10 from the match matrix of eq. 4 (``[B, Lq, Ld]``): kernel pooling and the score ``[B]``. TK reads a
        stored passage only through these cosines, so a stored index can hand it just their real entries instead
        (:meth:`score_rows`), a product-quantised one straight from its codes."""
        with full_precision(match.device):
            return self._score_pooled(self.kernel_pooling(match, query_mask, doc_mask))

    def score_rows(self, cosines: torch.Tensor, lengths: torch.Tensor, query_mask: torch.Tensor) -> torch.Tensor:
        """:meth:`score_match` from the match matrix's real columns alone: ``cosines`` ``[R, Lq]``, the stored terms'
        cosines with the one query's terms (``query_mask`` ``[Lq]``), passage by passage, ``lengths`` ``[B]`` each
        passage's number of terms; the same scores ``[B]``, with no kernel computed for padding
        (:meth:`lib.models.kernels.KernelPooling.pool_rows`) — how a product-quantised index is scored
        (:func:`lib.reranking.product_quantisation.stored_cosines`)."""
        with full_precision(cosines.device):
            return self._score_pooled(self.kernel_pooling.pool_rows(cosines, lengths, query_mask))

    def _score_pooled(self, pooled: PooledKernels) -> torch.Tensor:
        """Eq. 9–10 from the pooled kernels: ``β · Σ_k W_log[k] s_log^k + γ · Σ_k W_len[k] s_len^k``, ``[B]``."""
        _, log_weighted, len_weighted = self._weighted(pooled)
        return self.beta.float() * log_weighted.sum(dim=-1) + self.gamma.float() * len_weighted.sum(dim=-1)

    def encode_query(self, query_ids: torch.Tensor, query_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The query side, computed once per query at query time: its hybrid vectors (eq. 1) ``[1, Lq, D]``, mask."""
        query_mask = query_mask.bool()
        return self.contextualise(query_ids, query_mask), query_mask

    def score_stored(
        self, query_vectors: torch.Tensor, query_mask: torch.Tensor, doc_vectors: torch.Tensor, doc_mask: torch.Tensor
    ) -> torch.Tensor:
        """Eq. 4–10 of one encoded query (:meth:`encode_query`) against ``N`` stored passages
        (:meth:`encode_passages`), ``[N]``."""
        count = doc_vectors.shape[0]
        return self.score_vectors(
            query_vectors.expand(count, -1, -1), query_mask.expand(count, -1), doc_vectors.to(query_vectors.dtype),
            doc_mask.bool(),
        )  # fmt: skip

    def score_encoded(
        self, query_ids: torch.Tensor, query_mask: torch.Tensor, doc_vectors: torch.Tensor, doc_mask: torch.Tensor
    ) -> torch.Tensor:
        """The query-time work with stored passages: contextualise one query (``[1, Lq]``) and score it
        against ``N`` passages of :meth:`encode_passages`, ``[N]``."""
        return self.score_stored(*self.encode_query(query_ids, query_mask), doc_vectors, doc_mask)

    def optimizer_groups(self, embedding_lr: float = EMBEDDING_LR, other_lr: float = OTHER_LR) -> list[dict]:
        """Adam groups of §4.3: ``embeddings`` and ``contextualisation`` (the Transformer layers) at
        ``embedding_lr``, ``other`` (α, W_log, W_len, β, γ, the scaler) at ``other_lr``.

        α counts as "other": it is a mixing weight, not a layer of the contextualisation.
        Frozen parameters are left out.
        """
        embedding = list(self.embedding.parameters())
        context = list(self.contextualiser.parameters())
        taken = {id(param) for param in embedding + context}
        other = [param for param in self.parameters() if id(param) not in taken]
        return param_groups(
            {
                "embeddings": (embedding, embedding_lr),
                "contextualisation": (context, embedding_lr),
                "other": (other, other_lr),
            }
        )
