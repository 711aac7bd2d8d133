"""Product quantisation of stored passage vectors: one byte per sub-vector instead of two per number.

Product quantisation (Jégou, Douze & Schmid, "Product quantization for nearest neighbor search", IEEE TPAMI 2011,
§II) cuts each ``d``-dimensional vector into ``m`` sub-vectors of ``d / m`` numbers and replaces each sub-vector by
the nearest of 256 centroids learned for its subspace by k-means (Lloyd's algorithm): a vector is stored as ``m``
one-byte codes, and read back as the concatenation of its codes' centroids. Where ``m`` does not divide ``d``, the
subspaces are contiguous runs of ``⌈d / m⌉`` and ``⌊d / m⌋`` numbers (:func:`subspace_widths`; the paper's subspaces
are of equal width): MiniLM's 384 numbers allow 64 or 96 equal subspaces but nothing between, and 80 (widths 5 and
4) is a number whose bytes per stored passage fall between theirs. A narrower subspace's sub-vectors and centroids
are padded with zeros to the widest, which changes neither a distance nor a dot product. A learned rotation before
the split (OPQ, Ge et al., CVPR 2013, its non-parametric alternation of codebooks and an orthogonal Procrustes step)
was probed on the unlabelled vectors of DL21 candidates and not adopted: eight rounds lowered the mean absolute
cosine error with DL21 queries by 6 % at 48 codes (0.0308 to 0.0290) and 3 % at 64 (0.0227 to 0.0220), where 80
codes instead of 64 lower it by 23 % (0.0174) and 96 by 41 % (0.0133). ColBERTv2 (Santhanam et
al., NAACL 2022, §3.3) compresses ColBERT's token vectors to a few bytes each by a related residual scheme; TK's
stored vectors (eq. 1, read only through the cosine of eq. 4) are compressed here the same way.

At query time a TK needs only each stored vector's cosine with each query vector, so the codes need not be decoded:
the *asymmetric distance computation* (§III.A) tabulates the query's dot products with every centroid once
(:func:`cosine_table`) and sums a stored vector's ``m`` entries (:func:`stored_cosines`), its squared length
likewise from the centroids' (the subspaces are orthogonal).

The vectors are scaled to unit length before they are fitted and encoded: the cosine match matrix reads directions
only, and the reconstruction's own length does not matter to it. The codebooks are fitted on the vectors of
passages of the collection it indexes, with no label (the book fits on passages of chapter 2's training triples,
drawn from the same corpus as the test years' candidates, so some may be candidates too: chapter 3 writes their ids
and counts them), and are stored once per index, not per passage.
Not in the TK paper: a book addition for the stored regime (chapter 3).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from lib.models.kernels import COSINE_EPS

#: Centroids per subspace: one byte per code.
CENTROIDS = 256


def pq_name(name: str) -> str:
    """The name of model ``name`` served from a product-quantised index (cost tables, the runs folder)."""
    return f"{name}-pq"


def subspace_widths(dim: int, subspaces: int) -> tuple[int, ...]:
    """The widths of ``subspaces`` contiguous subspaces of ``dim`` numbers: ``dim / subspaces`` each where it divides,
    else ``⌈dim / subspaces⌉`` for the first ``dim mod subspaces`` and ``⌊dim / subspaces⌋`` for the rest."""
    if not 1 <= subspaces <= dim:
        raise ValueError(f"parameter 'subspaces' must be between 1 and the vectors' dimension {dim}, got {subspaces}")
    width, wider = divmod(dim, subspaces)
    return (width + 1,) * wider + (width,) * (subspaces - wider)


def _columns(dim: int, subspaces: int) -> torch.Tensor:
    """``[m, w]``: the column of a ``[n, d + 1]`` array (its last column 0) that each subspace's entry ``j`` reads —
    its ``j``-th number, or the zero column past a narrower subspace's end (``w`` the widest subspace)."""
    widths = subspace_widths(dim, subspaces)
    starts = np.concatenate([[0], np.cumsum(widths)[:-1]])
    steps = np.arange(max(widths))
    return torch.from_numpy(np.where(steps[None] < np.asarray(widths)[:, None], starts[:, None] + steps[None], dim))


def split(vectors: torch.Tensor, subspaces: int) -> torch.Tensor:
    """``[..., d]`` vectors → ``[m, ..., w]`` sub-vectors (:func:`subspace_widths`; a narrower one padded with 0)."""
    dim = vectors.shape[-1]
    if dim % subspaces == 0:
        parts = vectors.reshape(*vectors.shape[:-1], subspaces, dim // subspaces)
    else:
        padded = torch.cat([vectors, vectors.new_zeros(*vectors.shape[:-1], 1)], dim=-1)
        parts = padded[..., _columns(dim, subspaces).to(vectors.device)]
    return parts.movedim(-2, 0)


def unit(vectors: np.ndarray) -> np.ndarray:
    """``[n, d]`` vectors scaled to unit length (a zero vector stays zero), float32."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)


@dataclass(frozen=True)
class ProductQuantiser:
    """Fitted codebooks ``[m, 256, w]`` (float32; ``w`` the widest subspace, :func:`subspace_widths`) of ``dim``-d
    vectors: :meth:`encode` to ``m`` one-byte codes, :meth:`decode` back."""

    codebooks: np.ndarray
    dim: int

    def __post_init__(self) -> None:
        if self.codebooks.ndim != 3 or self.codebooks.shape[2] != max(subspace_widths(self.dim, self.subspaces)):
            raise ValueError(f"codebooks of shape {self.codebooks.shape} do not fit {self.subspaces} subspaces of "
                             f"{self.dim}-d vectors")  # fmt: skip

    @property
    def subspaces(self) -> int:
        return int(self.codebooks.shape[0])

    def _split(self, vectors: np.ndarray) -> torch.Tensor:
        if vectors.ndim != 2 or vectors.shape[1] != self.dim:
            raise ValueError(f"product quantiser of {self.dim}-d vectors got an array of shape {vectors.shape}")
        return split(torch.from_numpy(unit(vectors)), self.subspaces)

    def encode(self, vectors: np.ndarray, chunk: int = 65536) -> np.ndarray:
        """``[n, d]`` vectors → ``[n, m]`` uint8 codes: each unit-length vector's sub-vectors' nearest centroids."""
        centroids = torch.from_numpy(self.codebooks)
        codes = [np.zeros((0, self.subspaces), np.uint8)]
        for begin in range(0, len(vectors), chunk):
            parts = self._split(vectors[begin : begin + chunk])
            codes.append(nearest(parts, centroids).T.to(torch.uint8).numpy())
        return np.concatenate(codes)

    def decode(self, codes: np.ndarray | torch.Tensor) -> torch.Tensor:
        """``[n, m]`` codes → ``[n, d]`` float32: the concatenation of each code's centroid."""
        return decode(torch.from_numpy(self.codebooks), torch.as_tensor(np.asarray(codes)), self.dim)


def nearest(parts: torch.Tensor, centroids: torch.Tensor, chunk: int = 4096) -> torch.Tensor:
    """``[m, n]``: the number of each sub-vector's nearest centroid, ``parts`` ``[m, n, w]``, ``centroids``
    ``[m, k, w]`` — the smallest ``‖c‖² − 2 x·c`` (the squared distance less ``‖x‖²``, the same for every centroid),
    one product per subspace and ``chunk`` sub-vectors: its ``[chunk, k]`` block stays in the processor's cache, where
    one batched product over every subspace writes and reads back ``m`` times as much memory (on 85,000 vectors of
    384 numbers in 64 or 96 subspaces, about three times as slow on 2 CPU threads)."""
    squared = (centroids * centroids).sum(-1)
    transposed = centroids.transpose(1, 2).contiguous()
    out = torch.empty(parts.shape[:2], dtype=torch.long, device=parts.device)
    for subspace in range(parts.shape[0]):
        for begin in range(0, parts.shape[1], chunk):
            block = parts[subspace, begin : begin + chunk]
            products = torch.addmm(squared[subspace], block, transposed[subspace], alpha=-2)
            out[subspace, begin : begin + chunk] = products.argmin(dim=-1)
    return out


def cosine_table(query_vectors: torch.Tensor, codebooks: torch.Tensor) -> torch.Tensor:
    """The asymmetric distance computation's table (Jégou et al. 2011, §III.A) for the cosine of eq. 4: row
    ``256 · s + c`` holds the dot products of each of the query's unit vectors' sub-vectors ``s`` with centroid ``c``
    of subspace ``s`` (``Lq`` columns), then that centroid's squared length. ``query_vectors`` ``[Lq, d]`` (or
    ``[1, Lq, d]``), ``codebooks`` ``[m, 256, w]``; ``[m · 256, Lq + 1]`` float32, computed once per query."""
    subspaces, centroids, _ = codebooks.shape
    query = F.normalize(query_vectors.reshape(-1, query_vectors.shape[-1]).float(), dim=-1, eps=COSINE_EPS)
    products = torch.bmm(split(query, subspaces), codebooks.float().transpose(1, 2))
    lengths = (codebooks.float() ** 2).sum(-1).reshape(-1, 1)
    return torch.cat([products.permute(0, 2, 1).reshape(subspaces * centroids, -1), lengths], dim=1)


def stored_cosines(table: torch.Tensor, codes: torch.Tensor) -> torch.Tensor:
    """Eq. 4's cosines of one query with stored vectors given as codes ``[R, m]``, read without decoding them: a
    stored vector's dot product with each query vector, and its squared length, are the sums over its ``m`` codes of
    their rows of :func:`cosine_table` ``table`` (one ``embedding_bag``), so ``cos(q_i, x̂) = Σ_s T[s, x_s, i] /
    √(Σ_s T[s, x_s, Lq])`` — the cosine of the decoded vector (:func:`decode`) to float rounding, with neither the
    ``[R, d]`` vectors nor their lengths ever formed. ``[R, Lq]`` float32: the real columns of the match matrix (an
    index hands over its passages' codes unpadded), what :meth:`lib.models.tk.TK.score_rows` pools."""
    subspaces = codes.shape[-1]
    centroids = table.shape[0] // max(subspaces, 1)
    rows = codes.int().add_(torch.arange(subspaces, device=codes.device, dtype=torch.int32) * centroids)
    sums = F.embedding_bag(rows, table, mode="sum")
    return sums[:, :-1] / sums[:, -1:].clamp_min(COSINE_EPS**2).sqrt()


def decode(codebooks: torch.Tensor, codes: torch.Tensor, dim: int) -> torch.Tensor:
    """``[..., m]`` codes → ``[..., dim]``: each code's centroid of ``codebooks`` ``[m, 256, w]``, concatenated (a
    narrower subspace's padding dropped), on the codes' device — one ``index_select`` of the flattened codebooks (row
    ``256 · s + code`` of subspace ``s``), about twenty times as fast on a CPU as indexing the ``[m, 256]`` grid with
    two index tensors."""
    subspaces, centroids, width = codebooks.shape
    rows = codes.long() + torch.arange(subspaces, device=codes.device) * centroids
    flat = codebooks.reshape(subspaces * centroids, width).index_select(0, rows.reshape(-1))
    flat = flat.reshape(*codes.shape[:-1], subspaces * width)
    if subspaces * width == dim:
        return flat
    kept = (_columns(dim, subspaces).reshape(-1) < dim).nonzero().squeeze(1).to(codes.device)
    return flat.index_select(-1, kept)


def fit_quantiser(
    vectors: np.ndarray, subspaces: int, iterations: int = 20, seed: int = 0, chunk: int = 65536
) -> ProductQuantiser:
    """Codebooks for ``subspaces`` sub-vectors of ``vectors`` ``[n, d]`` (unit-scaled first): Lloyd's k-means with
    :data:`CENTROIDS` centroids per subspace, started from distinct vectors drawn with ``seed``, ``iterations``
    rounds; a centroid left without vectors keeps its place. ``subspaces`` is at most ``d`` (the subspaces'
    widths: :func:`subspace_widths`) and there must be at least :data:`CENTROIDS` vectors."""
    vectors = np.asarray(vectors)
    if vectors.ndim != 2 or not 1 <= subspaces <= vectors.shape[1]:
        raise ValueError(f"parameter 'subspaces' ({subspaces}) must be between 1 and the vectors' dimension "
                         f"{vectors.shape[1:]}")  # fmt: skip
    if len(vectors) < CENTROIDS:
        raise ValueError(f"fitting {CENTROIDS} centroids needs at least {CENTROIDS} vectors, got {len(vectors)}")
    if iterations < 1:
        raise ValueError(f"parameter 'iterations' must be >= 1, got {iterations}")
    parts = split(torch.from_numpy(unit(vectors)), subspaces).contiguous()
    start = np.random.default_rng(seed).choice(len(vectors), CENTROIDS, replace=False)
    centroids = parts[:, torch.from_numpy(start)].clone()
    for _ in range(iterations):
        sums = torch.zeros_like(centroids, dtype=torch.float64)
        counts = torch.zeros(subspaces, CENTROIDS, dtype=torch.float64)
        for begin in range(0, parts.shape[1], chunk):
            block = parts[:, begin : begin + chunk]
            assigned = nearest(block, centroids)
            sums.scatter_add_(1, assigned[..., None].expand(-1, -1, block.shape[-1]), block.double())
            counts.scatter_add_(1, assigned, torch.ones_like(assigned, dtype=torch.float64))
        filled = counts > 0
        centroids = torch.where(filled[..., None], (sums / counts.clamp_min(1)[..., None]).float(), centroids)
    return ProductQuantiser(centroids.numpy(), int(vectors.shape[1]))


__all__ = [
    "CENTROIDS", "ProductQuantiser", "cosine_table", "decode", "fit_quantiser", "nearest", "pq_name", "split",
    "stored_cosines", "subspace_widths", "unit",
]  # fmt: skip
