"""TKL, the Transformer-Kernel for long documents (Hofstätter, Zamani, Mitra, Craswell, Hanbury, "Local Self-Attention
over Long Text for Efficient Document Retrieval", SIGIR 2020; lecture 8, slides 34–37).

TK (:mod:`lib.models.tk`) contextualises a whole passage at once, a cost quadratic in its length, and pools its kernels
over all of it, so a long document's few relevant sentences drown in the rest. TKL keeps TK's query side, its hybrid
vectors (TK eq. 1), cosine match matrix (TK eq. 4) and RBF kernels (TK eq. 5) and changes three things:

1. **Local self-attention** (slide 34): the document is cut into chunks of 40 tokens, each read with 5 tokens of
   overlap on either side (50 in all) by TK's contextualiser; the overlaps' outputs are dropped, so the stitched
   document has one hybrid vector per token, and a token's vector depends on its chunk and the chunk's overlaps only.
   The cost grows linearly with the length, and a chunk of padding is not contextualised at all.
2. **Kernel pooling over regions with a learned saturation** (slide 35): the kernel activations are summed over
   sliding windows of 30 tokens, one every 2 tokens: ``K_{i,w}^k`` (TK eq. 6 over window ``w``). TK's logarithm
   (TK eq. 7) becomes a saturation learned per query term and window,
   ``sat(K) = a · K^(1/b) − c`` with ``(a, b, c)`` three linear maps of ``LayerNorm([u · q̂_i, n_w])`` — ``q̂_i`` the
   query term's hybrid vector, ``n_w`` the window's number of tokens. A window's score is
   ``s_w = Σ_k W_k Σ_i sat(K_{i,w}^k)``.
3. **The top regions** (slides 35, 37): the 3 best non-overlapping windows are chosen greedily, and the document's
   score is a learned weighted sum of their scores and those of their neighbours (the windows 2 and 4 tokens before
   and after each). :meth:`TKL.explain_regions` returns where they are (:class:`TKLExplanation`).

Defaults and design from the authors' code, ``matchmaker/models/published/sigir20_tkl.py`` (``TKL_sigir20``) and
``config/train/models/tkl.yaml`` in the GitHub repository sebastian-hofstaetter/matchmaker: chunk 40, overlap 5,
window 30, stride 2, top 3 regions with ±2 neighbours, the ``"embedding"`` saturation (``tk_saturation_type``) with its
initialisation, 10 attention heads of ``nn.TransformerEncoderLayer`` (attention first, post-norm) with a feed-forward
width of 300, 11 kernels (σ = 0.1), mixer α at 0.5.

Named choices where the paper and the code leave a detail open or the book deviates (fields of :class:`TKLConfig`):

- **Contextualiser**: TK's own layers (:class:`lib.models.tk.Contextualiser`) set as the authors' TKL had them:
  ``block_order="attention_first"``, post-norm, 10 heads of 30 on 300-d vectors, FF 300, dropout 0
  (:func:`lib.models.tk.width_for` scales heads and FF to narrower vectors). :class:`TKLBert` reads the chunks with a
  BERT's first layers instead (:mod:`lib.models.tk_bert`), each chunk as ``[CLS] chunk [SEP]``.
- **Positions**: TK's fixed sinusoids, counting the real tokens of each chunk from 0 (every chunk re-uses the same
  encodings, the authors' ``re_use_encoding``). The authors learned the encodings (initialised as sinusoids), used a
  separate table for the document (offset by 500) and gave the first chunk's real tokens positions 5–49, after its
  masked left overlap.
- **Chunks**: ``⌈L / 40⌉`` of them; chunk ``c`` reads tokens ``[40c − 5, 40c + 45)`` of the document, so the first has
  no left overlap and every token is covered. (The authors' padding arithmetic drops the last 1–4 tokens of the
  batch's longest document when its length is 1–4 more than a multiple of 40.) Chunks without a real token among
  their 40 are not contextualised (the authors' packing); the first chunk always is, so an empty document scores 0.
- **Windows**: every 2 tokens from 0 up to the first start whose window reaches the document's last token, so the
  windows cover the document and a document shorter than a window has one window, at 0 (as the authors' padding to
  30). The authors' windows run over the chunk-padded batch, so which partial windows at a document's end count
  depended on its length modulo 40 and on the batch; here nothing depends on the padding.
- **Saturation** (``saturation="embedding"``, the authors' configuration; the paper's learned saturation):
  ``u`` a bias-free linear map of the query vector to one number, ``LayerNorm(2)`` with its affine weights — over two
  features it is a soft sign of ``u · q̂_i − n_w``, as in the authors' code —, ``a``, ``b``, ``c`` linear maps 2 → 1
  with bias 100 and weights uniform in ±0.014, so that at the start ``sat(K) ≈ 100 · (K^(1/100) − 1) ≈ ln K``, TK's
  logarithm. ``K`` is clamped at ``log_clamp`` (1e-10) first. ``saturation="log"`` is the authors' other option,
  ``log(max(m_k · K, 1e-10))`` with a learned factor ``m_k`` per kernel (initialised at 1), in base ``log_base``
  (e, as in their code). Their ``"idf"`` and ``"linear"`` options need idf values and are left out.
- **Window score**: ``W`` a bias-free linear map of the K kernel features, uniform in ±0.014 (TK's ``W_log`` without
  the length path of TK eq. 8–10: this config's ``length_plus_one``, ``beta_init``, ``gamma_init`` and
  ``feature_scaler`` do not apply). Padded query terms contribute nothing.
- **Regions**: greedily, the best window, then the best one at least a window's length (30 tokens) away from those
  chosen (the authors: ``|Δindex| < window / 2`` windows suppressed, the same for stride 2), 3 times. When no window is
  left (a short document) the region is absent and contributes 0; the authors' code then picked a padding window (0)
  or an already suppressed one again, depending on the batch.
- **Neighbours**: each region's window and the windows 1 and 2 strides before and after it (``region_neighbours=2``:
  offsets 0, −1, +1, −2, +2), each of the 3 × 5 with its own weight, initialised at 1 (the authors'
  ``chunk_scoring``). Neighbours outside the document's windows are clamped to its first / last window (the authors
  clamped to the batch's windows, whose padding windows score 0).
- **Learning rates**: TK's groups (:meth:`lib.models.tk.TK.optimizer_groups`: embeddings and the Transformer at 1e-4,
  everything else at 1e-3; :class:`TKLBert`: TK-BERT's). The repository's later ``tkl.yaml`` trains at 1e-5.
- **Precision**: the match matrix, kernels, saturation and scoring run in float32 with autocast off.
- Left out: the authors' unused parameters (``mixer_sat``, ``mixer_end``, ``kernel_mult[1:]``).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn
from transformers import BertModel

from lib.models.bert_cat import BOOK_BERT_LR, HEAD_LR
from lib.models.kernels import cosine_match_matrix, full_precision, kernel_mus, kernel_sigmas
from lib.models.tk import TK, BlockOrder, TKConfig
from lib.models.tk_bert import TKBert

__all__ = [
    "LearnedSaturation",
    "LogSaturation",
    "TKL",
    "TKLBert",
    "TKLConfig",
    "TKLExplanation",
    "chunk_layout",
    "select_regions",
    "window_count",
]

Saturation = Literal["embedding", "log"]

#: Start of the biases of the learned saturation's ``a``, ``b`` and ``c`` (the authors' code).
SATURATION_BIAS = 100.0
#: Half-width of the uniform initialisation of the saturation's and the window score's weights (MatchZoo's, TK's).
INIT_RANGE = 0.014


@dataclass(frozen=True)
class TKLConfig(TKConfig):
    """TKL's hyper-parameters, the authors' by default: TK's fields (Transformer, α, kernels) and TKL's own.

    The Transformer fields default to the authors' TKL (10 heads of 30, FF 300, attention first); for narrower vectors
    ``TKLConfig(**width_for(dim))``. TK's eq. 8–10 fields (``length_plus_one``, ``beta_init``, ``gamma_init``,
    ``feature_scaler``) do not apply.
    """

    num_heads: int = 10
    head_dim: int = 30
    ff_dim: int = 300
    block_order: BlockOrder = "attention_first"
    #: Base of the ``"log"`` saturation's logarithm (the authors': e).
    log_base: float = math.e
    #: Tokens per chunk of the local self-attention.
    chunk_size: int = 40
    #: Tokens a chunk reads on either side beyond its own.
    chunk_overlap: int = 5
    #: Tokens per kernel-pooling window (region).
    window_size: int = 30
    #: Tokens between the starts of two windows.
    window_stride: int = 2
    #: Non-overlapping regions that score the document.
    top_regions: int = 3
    #: Neighbouring windows on either side of a region that score with it.
    region_neighbours: int = 2
    #: ``"embedding"`` (learned per query term and window) or ``"log"`` (a learned factor per kernel).
    saturation: Saturation = "embedding"


def check_config(config: TKLConfig) -> None:
    """A ``ValueError`` naming the first of ``config``'s TKL fields out of range."""
    minimums = {
        "chunk_size": 1, "chunk_overlap": 0, "window_size": 1, "window_stride": 1, "top_regions": 1,
        "region_neighbours": 0,
    }  # fmt: skip
    for name, minimum in minimums.items():
        if getattr(config, name) < minimum:
            raise ValueError(f"TKLConfig.{name} must be >= {minimum}, got {getattr(config, name)}")
    if config.saturation not in ("embedding", "log"):
        raise ValueError(f"TKLConfig.saturation must be 'embedding' or 'log', got {config.saturation!r}")


def chunk_layout(
    length: int, chunk_size: int, overlap: int, device: torch.device | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Where the ``C = ⌈length / chunk_size⌉`` chunks of a ``length``-token sequence read, and where each token is read.

    Returns ``positions [C, chunk_size + 2·overlap]`` — the token each chunk slot reads, compacted to the front
    (chunk ``c`` reads ``[c·chunk_size − overlap, (c+1)·chunk_size + overlap)`` clipped to the sequence) —,
    ``inside [C, chunk_size + 2·overlap]`` (False for slots past the clip) and ``slot [length]``: the slot of its own
    chunk ``t // chunk_size`` at which token ``t`` is read.
    """
    chunks = max(math.ceil(length / chunk_size), 1)
    firsts = (torch.arange(chunks, device=device) * chunk_size - overlap).clamp_min(0)
    ends = (torch.arange(1, chunks + 1, device=device) * chunk_size + overlap).clamp_max(length)
    positions = firsts[:, None] + torch.arange(chunk_size + 2 * overlap, device=device)
    inside = positions < ends[:, None]
    tokens = torch.arange(length, device=device)
    return positions.clamp_max(max(length - 1, 0)), inside, tokens - firsts[tokens // chunk_size]


def window_count(lengths: torch.Tensor, window_size: int, stride: int) -> torch.Tensor:
    """Windows of each document (``lengths [B]`` real tokens): starts ``0, stride, …`` up to the first window that
    reaches the last token; 1 for a document shorter than a window, 0 for an empty one."""
    past = (lengths - window_size).clamp_min(0)
    return torch.where(lengths > 0, torch.div(past + stride - 1, stride, rounding_mode="floor") + 1, 0)


def select_regions(
    scores: torch.Tensor, windows: torch.Tensor, starts: torch.Tensor, window_size: int, count: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``count`` best non-overlapping windows, chosen greedily: window indices ``[B, count]`` and whether each
    region was found ``[B, count]`` (False once no window is left; its index is then 0).

    ``scores [B, W]`` are the windows' scores, ``windows [B, W]`` which windows exist, ``starts [W]`` their first
    tokens; a window overlaps a chosen one when their starts are less than ``window_size`` apart.
    """
    scores = scores.detach()
    open_ = windows.clone()
    chosen, found = [], []
    for _ in range(count):
        best = scores.masked_fill(~open_, -math.inf).argmax(dim=-1)
        hit = open_.any(dim=-1)
        chosen.append(torch.where(hit, best, 0))
        found.append(hit)
        open_ &= (starts[None, :] - starts[best][:, None]).abs() >= window_size
    return torch.stack(chosen, dim=-1), torch.stack(found, dim=-1)


class LearnedSaturation(nn.Module):
    """The authors' ``"embedding"`` saturation: ``sat(K) = a · max(K, clamp)^(1/b) − c`` with ``(a, b, c)`` linear in
    ``LayerNorm([u · q̂_i, n_w])`` (the module docstring); ``width`` is the query vectors' width."""

    def __init__(self, width: int, clamp: float) -> None:
        super().__init__()
        self.clamp = float(clamp)
        self.reduce = nn.Linear(width, 1, bias=False)
        self.norm = nn.LayerNorm(2)
        self.scale, self.power, self.shift = (nn.Linear(2, 1) for _ in range(3))
        for layer in (self.scale, self.power, self.shift):
            nn.init.constant_(layer.bias, SATURATION_BIAS)
            nn.init.uniform_(layer.weight, -INIT_RANGE, INIT_RANGE)

    def forward(self, sums: torch.Tensor, query_vectors: torch.Tensor, window_lengths: torch.Tensor) -> torch.Tensor:
        """``sums [B, Lq, W, K]`` soft term frequencies, ``query_vectors [B, Lq, D]``, ``window_lengths [B, W]``
        → saturated ``[B, Lq, W, K]``."""
        batch, query_length, windows, _ = sums.shape
        term = self.reduce(query_vectors.float()).expand(batch, query_length, windows)
        influence = self.norm(torch.stack([term, window_lengths[:, None, :].expand_as(term)], dim=-1))
        return self.scale(influence) * sums.clamp_min(self.clamp) ** (1 / self.power(influence)) - self.shift(influence)


class LogSaturation(nn.Module):
    """The authors' ``"log"`` saturation: ``log_base(max(m_k · K, clamp))`` with a learned factor ``m_k`` per kernel."""

    def __init__(self, n_kernels: int, base: float, clamp: float) -> None:
        super().__init__()
        if base <= 0 or base == 1:
            raise ValueError(f"TKLConfig.log_base must be positive and not 1, got {base}")
        self.factor = nn.Parameter(torch.ones(n_kernels))
        self.log_of_base, self.clamp = math.log(base), float(clamp)

    def forward(self, sums: torch.Tensor, query_vectors: torch.Tensor, window_lengths: torch.Tensor) -> torch.Tensor:
        """``sums [B, Lq, W, K]`` → ``[B, Lq, W, K]`` (the query vectors and window lengths do not enter)."""
        del query_vectors, window_lengths
        return torch.log((sums * self.factor.float()).clamp_min(self.clamp)) / self.log_of_base


@dataclass
class TKLExplanation:
    """A TKL score and where in each document it came from, for ``B`` pairs, ``W`` windows and ``k`` regions.

    Positions are token positions in the document (``doc_ids``' columns).
    """

    #: The document scores, ``[B]``.
    score: torch.Tensor
    #: First token of every window, ``[W]`` (``0, stride, 2·stride, …``).
    window_starts: torch.Tensor
    #: Which windows each document has, ``[B, W]``.
    windows: torch.Tensor
    #: Each window's score ``s_w``, ``[B, W]``, 0 for windows the document does not have.
    window_scores: torch.Tensor
    #: First token of each selected region, best first, ``[B, k]``; −1 where there is no region.
    region_starts: torch.Tensor
    #: One past the last token of each region (clipped to the document's length), ``[B, k]``; −1 where none.
    region_ends: torch.Tensor
    #: Each region's window score ``s_w``, ``[B, k]``; 0 where none.
    region_scores: torch.Tensor


class TKL(TK):
    """TKL on word embeddings (``embeddings [V, D]``, row 0 padding, as :class:`lib.models.tk.TK`); see the module
    docstring. ``forward`` (TK's) scores, :meth:`explain_regions` says where, :meth:`encode_passages` stitches the
    chunk-wise contextualised document (query-independent, so TK's stored-passage methods work unchanged)."""

    #: TKL pools the match matrix by windows of the document (its own :meth:`score_vectors`), not as TK does.
    scores_from_match = False

    def __init__(
        self, embeddings: torch.Tensor, freeze_embeddings: bool = False, config: TKLConfig | None = None
    ) -> None:
        config = config or TKLConfig()
        super().__init__(embeddings, freeze_embeddings, config)
        self.init_saturation(config, self.embedding.embedding_dim)

    def init_scoring(self, config: TKLConfig) -> None:
        """The layers after the contextualisation that do not depend on the vectors' width: the mixer α (TK eq. 1),
        the kernels (TK eq. 5), the window score ``W`` and the regions' weights."""
        check_config(config)
        self.config = config
        self.alpha = nn.Parameter(torch.tensor(float(config.alpha_init)))
        self.register_buffer("mus", torch.tensor(kernel_mus(config.n_kernels)))
        self.register_buffer("sigmas", torch.tensor(kernel_sigmas(config.n_kernels, sigma=config.kernel_sigma)))
        self.w_window = nn.Linear(config.n_kernels, 1, bias=False)
        nn.init.uniform_(self.w_window.weight, -INIT_RANGE, INIT_RANGE)
        offsets = [0] + [sign * step for step in range(1, config.region_neighbours + 1) for sign in (-1, 1)]
        self.register_buffer("offsets", torch.tensor(offsets), persistent=False)
        self.region_weights = nn.Parameter(torch.ones(len(offsets), config.top_regions))

    def init_saturation(self, config: TKLConfig, width: int) -> None:
        """The saturation of ``config`` for ``width``-d hybrid vectors."""
        if config.saturation == "embedding":
            self.saturation = LearnedSaturation(width, config.log_clamp)
        else:
            self.saturation = LogSaturation(config.n_kernels, config.log_base, config.log_clamp)

    def encode_passages(self, doc_ids: torch.Tensor, doc_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The local self-attention: each chunk with its overlaps contextualised (TK eq. 1) on its own, the overlaps
        dropped, one hybrid vector per token: ``[N, Ld, D]`` (0 at padding) and the mask ``[N, Ld]``."""
        doc_mask = doc_mask.bool()
        batch, length = doc_ids.shape
        size, overlap = self.config.chunk_size, self.config.chunk_overlap
        positions, inside, slot = chunk_layout(length, size, overlap, doc_ids.device)
        chunks = positions.shape[0]
        chunk_ids, chunk_mask = doc_ids[:, positions], doc_mask[:, positions] & inside
        own = nn.functional.pad(doc_mask, (0, chunks * size - length)).view(batch, chunks, size).any(dim=-1)
        own[:, 0] = True  # at least one chunk per document, so that an empty batch still runs
        vectors = self.contextualise(chunk_ids[own], chunk_mask[own])
        row = (own.flatten().long().cumsum(0) - 1).view(batch, chunks)
        token_chunk = torch.arange(length, device=doc_ids.device) // size
        flat = row[:, token_chunk].clamp_min(0) * positions.shape[1] + slot
        stitched = vectors.flatten(0, 1)[flat]
        return stitched * doc_mask.unsqueeze(-1).to(stitched.dtype), doc_mask

    def score_vectors(
        self, query_vectors: torch.Tensor, query_mask: torch.Tensor, doc_vectors: torch.Tensor, doc_mask: torch.Tensor
    ) -> torch.Tensor:
        """The scores ``[B]`` of contextualised query and document vectors (:meth:`explain_vectors`' ``score``)."""
        return self.explain_vectors(query_vectors, query_mask, doc_vectors, doc_mask).score

    def explain_regions(
        self, query_ids: torch.Tensor, query_mask: torch.Tensor, doc_ids: torch.Tensor, doc_mask: torch.Tensor
    ) -> TKLExplanation:
        """Score a batch and say where: every window's score and the selected regions (:class:`TKLExplanation`)."""
        query_mask = query_mask.bool()
        query_vectors = self.contextualise(query_ids, query_mask)
        return self.explain_vectors(query_vectors, query_mask, *self.encode_passages(doc_ids, doc_mask))

    #: TK's name for the explanation of a batch.
    explain = explain_regions

    def explain_vectors(
        self, query_vectors: torch.Tensor, query_mask: torch.Tensor, doc_vectors: torch.Tensor, doc_mask: torch.Tensor
    ) -> TKLExplanation:
        """Windows, saturation, window scores and regions on contextualised vectors (module docstring, 2 and 3)."""
        query_mask, doc_mask = query_mask.bool(), doc_mask.bool()
        with full_precision(doc_vectors.device):
            match = cosine_match_matrix(query_vectors, doc_vectors, query_mask, doc_mask)
            sums, window_lengths = self.window_sums(match, doc_mask)
            lengths, stride = doc_mask.sum(dim=-1), self.config.window_stride
            starts = torch.arange(sums.shape[2], device=sums.device) * stride
            windows = starts[None, :] < window_count(lengths, self.config.window_size, stride)[:, None] * stride
            saturated = self.saturation(sums, query_vectors, window_lengths)
            per_kernel = saturated.masked_fill(~query_mask[:, :, None, None], 0.0).sum(dim=1)
            window_scores = self.w_window(per_kernel).squeeze(-1).masked_fill(~windows, 0.0)
            return self.regions(window_scores, windows, starts, lengths)

    def window_sums(self, match: torch.Tensor, doc_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """TK eq. 5–6 over every window: ``K_{i,w}^k`` ``[B, Lq, W, K]`` and each window's real tokens ``[B, W]``.

        Kernel by kernel, as :func:`lib.models.kernels.kernel_sums`, so the ``[B, Lq, Ld, K]`` activations are never
        kept; the document is padded so that every window of the longest document exists.
        """
        size, stride = self.config.window_size, self.config.window_stride
        windows = int(window_count(torch.tensor(max(match.shape[-1], 1)), size, stride))
        padding = (windows - 1) * stride + size - match.shape[-1]
        real = nn.functional.pad(doc_mask.float(), (0, padding))
        match = nn.functional.pad(match, (0, padding))
        scales = -1.0 / (2 * self.sigmas.float() ** 2)
        sums = [
            (torch.exp((match - mu) ** 2 * scale) * real[:, None, :]).unfold(-1, size, stride).sum(dim=-1)
            for mu, scale in zip(self.mus.float(), scales, strict=True)
        ]
        return torch.stack(sums, dim=-1), real.unfold(-1, size, stride).sum(dim=-1)

    def regions(
        self, window_scores: torch.Tensor, windows: torch.Tensor, starts: torch.Tensor, lengths: torch.Tensor
    ) -> TKLExplanation:
        """The top non-overlapping regions and the document score: the learned weighted sum of each region's window
        score and its neighbours' (module docstring)."""
        chosen, found = select_regions(window_scores, windows, starts, self.config.window_size, self.config.top_regions)
        last = (windows.sum(dim=-1) - 1).clamp_min(0)
        neighbours = (chosen[:, None, :] + self.offsets[None, :, None]).clamp_min(0)
        neighbours = torch.minimum(neighbours, last[:, None, None])
        taken = window_scores.gather(1, neighbours.flatten(1)).view_as(neighbours) * found[:, None, :]
        region_starts = torch.where(found, starts[chosen], -1)
        ends = torch.minimum(starts[chosen] + self.config.window_size, lengths[:, None])
        return TKLExplanation(
            score=(taken * self.region_weights.float()).sum(dim=(1, 2)),
            window_starts=starts,
            windows=windows,
            window_scores=window_scores,
            region_starts=region_starts,
            region_ends=torch.where(found, ends, -1),
            region_scores=window_scores.gather(1, chosen) * found,
        )


class TKLBert(TKL, TKBert):
    """TKL whose embeddings and contextualiser are a pre-trained BERT's (TK-BERT, :mod:`lib.models.tk_bert`): each
    chunk of word pieces is read as ``[CLS] chunk [SEP]`` by the BERT's first ``num_layers`` layers; everything after
    TK eq. 1 is :class:`TKL`'s. Optimizer groups are TK-BERT's (``bert``, ``head``); no compact projection.
    """

    def __init__(
        self,
        bert: BertModel | str | os.PathLike,
        num_layers: int,
        *,
        bert_lr: float = BOOK_BERT_LR,
        head_lr: float = HEAD_LR,
        config: TKLConfig | None = None,
    ) -> None:
        config = config or TKLConfig()
        TKBert.__init__(self, bert, num_layers, bert_lr=bert_lr, head_lr=head_lr, config=config)
        self.init_saturation(config, self.embedding.word_embeddings.embedding_dim)
