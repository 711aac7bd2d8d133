"""An on-disk index of a model's passage side: what TK, ColBERT, PreTTR, TK-Sparse and a bi-encoder store at index time.

TK contextualises query and passage independently (TK paper §3; lecture 8, slides 22–24), and so do ColBERT's token
vectors, PreTTR's lower layers and a bi-encoder's one vector: a passage's vectors can be computed once, when the
collection is indexed, and read back at query time. :func:`build_index` runs ``model.encode_passages`` over the
passages and writes their stored vectors (only the real ones, no padding) into a folder of memory-mapped arrays:

- ``vectors.bin``: every stored vector, ``[total, d]``, in ``float16`` or ``int8`` — or, product-quantised
  (``pq``, :mod:`lib.reranking.product_quantisation`), ``[total, m]`` one-byte codes of its unit-length direction;
- ``scales.bin`` (``int8``): one ``float16`` scale per vector, ``max |v| / 127`` (symmetric quantisation, so a
  vector's direction and length come back to about 1/254 of its largest entry);
- ``codebooks.bin`` (``pq`` only): the quantiser's centroids, float32 ``[m, 256, ⌈d / m⌉]``, stored once per index
  (not counted per passage: :attr:`PassageIndex.codebook_bytes`);
- ``offsets.bin``: ``int64 [passages + 1]``, passage ``i``'s vectors are rows ``offsets[i] : offsets[i + 1]``;
- ``header.json``: format, dtype, dimension, counts, pids, the build's seconds and the model's name.

The folder is written under a temporary name and renamed when complete, so an interrupted build never looks like an
index; :func:`load_index` checks every file's size against the header (a truncated file names itself) and maps the
stored vectors as a server reading scattered rows would (:data:`READS`): for random access, and
:meth:`PassageIndex.prefetch` asks the disk for every candidate's rows at once before the query is encoded, so that
an index out of memory is read in parallel, under the query's encoding, instead of one page fault after the other.
:meth:`PassageIndex.gather` is the query-time read: the candidates' rows, padded into ``[n, L, d]`` float32 and a
mask — what ``model.score_stored`` takes. :meth:`PassageIndex.resident` copies the index once into a device's memory
(:class:`ResidentIndex`, what ColBERT and PreTTR serve from on a GPU, lecture 8, slides 17–21): its ``gather`` is one
indexed read and the dequantisation on that device, with no copy from the host at query time.
:func:`repeat_index` pads an index to a collection's size with copies of its stored passages under new ids, nothing
encoded again: an index as large as a collection's on disk, for timing reads from it (``benchmarks.cold_reads``).
"""

from __future__ import annotations

import mmap
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from lib.core.atomic import write_json
from lib.core.broken_files import read_index_header
from lib.representations.text import DOC_MAX_LENGTH
from lib.reranking.product_quantisation import CENTROIDS, ProductQuantiser, decode

#: The index layout's version (``header.json``).
INDEX_FORMAT = 1
#: The numbers an index may store, and their bytes per number (``pq``: per sub-vector's code).
STORED_DTYPES: Mapping[str, int] = {"float16": 2, "int8": 1, "pq": 1}
#: The stored dtype whose vectors are product-quantised codes (a fitted quantiser is needed to build it).
PQ = "pq"
_MEMORY = {"float16": np.float16, "int8": np.int8, PQ: np.uint8}
#: The bytes of one ``int8`` vector's scale (float16).
SCALE_BYTES = 2
HEADER_NAME = "header.json"
#: How :func:`load_index` maps an index's stored vectors (its ``reads``), named by what a page of them not in memory
#: costs at query time.
READS: Mapping[str, str] = {
    "prefetched": "mapped for random access (MADV_RANDOM), every candidate's stored rows asked for at once "
    "(MADV_WILLNEED) before the query is encoded: the disk reads them in parallel, under the query's encoding",
    "random": "mapped for random access (MADV_RANDOM): a page fault reads its page alone, one fault after the other",
    "read-around": "the kernel's default map: a page fault reads the read-around window around its page (the "
    "disk's read_ahead_kb), one fault after the other",
}
#: How the library serves a stored index (:func:`load_index`'s default).
SERVING_READS = "prefetched"
#: The files whose rows a query reads (the offsets, pids and codebooks are read once, when the index opens).
ROW_FILES = ("vectors.bin", "scales.bin")


def quantise(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric ``int8`` codes of ``[n, d]`` float vectors and one float16 scale each (``max |v| / 127``)."""
    scales = np.abs(vectors).max(axis=1) / 127.0
    scales = np.where(scales > 0, scales, 1.0).astype(np.float16)
    codes = np.clip(np.rint(vectors / scales.astype(np.float32)[:, None]), -127, 127).astype(np.int8)
    return codes, scales


@dataclass
class PassageIndex:
    """A loaded index (:func:`load_index`): memory-mapped vectors or codes (and scales), offsets, pids, the header
    and, for a ``pq`` index, its quantiser; how its rows are read (``reads``, one of :data:`READS`) and the memory
    maps of its row files (``maps``, by file name: what :meth:`prefetch` advises)."""

    folder: Path
    pids: list[str]
    row_of: dict[str, int]
    vectors: np.ndarray
    scales: np.ndarray | None
    offsets: np.ndarray
    header: dict[str, Any]
    quantiser: ProductQuantiser | None = None
    reads: str = SERVING_READS
    maps: dict[str, mmap.mmap] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.pids)

    @property
    def dtype(self) -> str:
        return str(self.header["dtype"])

    @property
    def bytes_per_passage(self) -> float:
        """Stored bytes per passage: its vectors × their dimension × the dtype's bytes (+ a scale per ``int8``
        vector); the offsets' 8 bytes too. A ``pq`` index's codebooks are :attr:`codebook_bytes`, once per index."""
        per_vector = self.vectors.shape[1] * STORED_DTYPES[self.dtype] + (SCALE_BYTES if self.scales is not None else 0)
        return (self.vectors.shape[0] * per_vector + self.offsets.nbytes) / max(len(self), 1)

    @property
    def codebook_bytes(self) -> int:
        """The bytes of a ``pq`` index's codebooks (shared by every passage); 0 for any other index."""
        return 0 if self.quantiser is None else int(self.quantiser.codebooks.nbytes)

    def rows(self, pids: Sequence[str]) -> np.ndarray:
        """The index rows of ``pids`` (a pid may repeat); an unknown pid is a ``KeyError`` naming it."""
        missing = [pid for pid in pids if pid not in self.row_of]
        if missing:
            raise KeyError(f"passage {missing[0]!r} is not in the index {self.folder}")
        return np.asarray([self.row_of[pid] for pid in pids], dtype=np.int64)

    def lengths(self, pids: Sequence[str]) -> np.ndarray:
        """How many vectors each of ``pids`` stores (read from the offsets alone)."""
        rows = self.rows(pids)
        return self.offsets[rows + 1] - self.offsets[rows]

    def prefetch(self, pids: Sequence[str]) -> int:
        """Ask the disk for ``pids``' stored rows now, all at once, and return without waiting: each row file's byte
        ranges of the candidates, sorted and merged where they touch, one ``madvise(MADV_WILLNEED)`` each, which
        starts the reads of the pages not in memory (the kernel's readahead, asynchronous) — so that the disk serves
        them in parallel while the query is encoded, and :meth:`gather`'s page faults find them read or in flight.
        The number of requests made: 0 unless the index was loaded ``"prefetched"`` (:data:`READS`). An unknown pid
        is a ``KeyError`` naming it."""
        rows = self.rows(pids)
        if self.reads != "prefetched" or not self.maps or not len(rows):
            return 0
        starts, ends = self.offsets[rows], self.offsets[rows + 1]
        arrays = dict(zip(ROW_FILES, (self.vectors, self.scales), strict=True))
        requests = 0
        for name, mapped in self.maps.items():
            row_bytes = arrays[name].strides[0]
            for begin, end in merged_ranges(starts * row_bytes, ends * row_bytes):
                mapped.madvise(mmap.MADV_WILLNEED, begin, end - begin)
                requests += 1
        return requests

    def _places(self, pids: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """Where ``pids``' stored vectors are (no loop over passages): passage ``i``'s vector ``j`` is row
        ``read`` of the stored arrays, to be written at ``[which, position]`` of a ``[n, length]`` padded block."""
        rows = self.rows(pids)
        starts = self.offsets[rows].astype(np.int64)
        lengths = self.offsets[rows + 1].astype(np.int64) - starts
        length = int(lengths.max()) if len(rows) else 0
        which = np.repeat(np.arange(len(rows)), lengths)
        position = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        return which, position, np.repeat(starts, lengths) + position, length

    def gather_codes(self, pids: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """A ``pq`` index's codes of ``pids``, not decoded and not padded: ``[R, m]`` uint8, passage after passage,
        and each passage's number of vectors ``[n]`` (``R`` their sum) — what
        :func:`lib.reranking.product_quantisation.stored_cosines` reads and a TK's ``score_rows`` pools."""
        if self.quantiser is None:
            raise ValueError(f"the index {self.folder} stores {self.dtype} vectors, not product-quantised codes")
        read, lengths = self._reads(pids)
        codes = np.asarray(self.vectors[read], dtype=np.uint8).reshape(-1, self.quantiser.subspaces)
        return torch.from_numpy(codes), torch.from_numpy(lengths)

    def gather_rows(self, pids: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """The stored vectors of ``pids``, not padded: ``[R, d]`` float32, passage after passage (a ``pq`` index's
        decoded), and each passage's number of vectors ``[n]`` — what a TK's ``score_rows`` pools from their cosines
        (:func:`lib.models.kernels.cosine_rows`). An unknown pid is a ``KeyError`` naming it."""
        read, lengths = self._reads(pids)
        return torch.from_numpy(self._decoded(read)), torch.from_numpy(lengths)

    def _decoded(self, read: np.ndarray) -> np.ndarray:
        """Stored rows ``read`` as float32 vectors ``[R, d]``: a ``pq`` index's codes decoded, int8 codes scaled."""
        if self.quantiser is not None:
            block = self.quantiser.decode(np.asarray(self.vectors[read])).numpy()
        else:
            block = np.asarray(self.vectors[read], dtype=np.float32)
        if self.scales is not None:
            block *= np.asarray(self.scales[read], dtype=np.float32)[:, None]
        return block

    def _reads(self, pids: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The stored rows of ``pids``' vectors, passage after passage, and each passage's number of them."""
        rows = self.rows(pids)
        starts = self.offsets[rows].astype(np.int64)
        lengths = self.offsets[rows + 1].astype(np.int64) - starts
        return np.repeat(starts - (np.cumsum(lengths) - lengths), lengths) + np.arange(int(lengths.sum())), lengths

    def gather(self, pids: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """The stored vectors of ``pids`` (a pid may repeat), read from disk: ``[n, L, d]`` float32 padded to the
        longest, and the mask ``[n, L]`` (a ``pq`` index's vectors: its codes decoded). An unknown pid is a ``KeyError``
        naming it."""
        which, position, read, length = self._places(pids)
        block = self._decoded(read)
        out = np.zeros((len(pids), max(length, 1), int(self.header["dim"])), dtype=np.float32)
        mask = np.zeros((len(pids), max(length, 1)), dtype=bool)
        out[which, position] = block
        mask[which, position] = True
        return torch.from_numpy(out), torch.from_numpy(mask)

    def resident(self, device: torch.device | str) -> ResidentIndex:
        """This index copied into ``device``'s memory (its stored dtype kept: int8 and pq codes stay one byte)."""
        device = torch.device(device)
        scales = None if self.scales is None else torch.tensor(np.asarray(self.scales), device=device)
        vectors, offsets = (torch.tensor(np.asarray(array), device=device) for array in (self.vectors, self.offsets))
        codebooks = None if self.quantiser is None else torch.tensor(self.quantiser.codebooks, device=device)
        return ResidentIndex(self, vectors, scales, offsets, codebooks)


@dataclass
class ResidentIndex:
    """A :class:`PassageIndex` held in a device's memory (:meth:`PassageIndex.resident`): the stored vectors (or
    codes), scales, offsets and codebooks as tensors there."""

    source: PassageIndex
    vectors: torch.Tensor
    scales: torch.Tensor | None
    offsets: torch.Tensor
    codebooks: torch.Tensor | None = None

    def __len__(self) -> int:
        return len(self.source)

    def prefetch(self, pids: Sequence[str]) -> int:
        """Nothing to read ahead: the index is in the device's memory (0 requests; an unknown pid is still named)."""
        self.source.rows(pids)
        return 0

    @property
    def bytes_per_passage(self) -> float:
        return self.source.bytes_per_passage

    @property
    def header(self) -> dict[str, Any]:
        return self.source.header

    @property
    def dtype(self) -> str:
        return self.source.dtype

    def lengths(self, pids: Sequence[str]) -> np.ndarray:
        return self.source.lengths(pids)

    def _positions(self, pids: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """The stored rows of ``pids``' vectors as a padded ``[n, L]`` block (padding: row 0) and its mask, on the
        device."""
        device = self.vectors.device
        rows = torch.as_tensor(self.source.rows(pids), dtype=torch.long, device=device)
        starts = self.offsets[rows]
        lengths = self.offsets[rows + 1] - starts
        length = max(int(lengths.max()), 1) if len(pids) else 1
        steps = torch.arange(length, device=device)
        mask = steps[None, :] < lengths[:, None]
        return torch.where(mask, starts[:, None] + steps[None, :], 0), mask

    def gather_codes(self, pids: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`PassageIndex.gather_codes` on the device: the codes ``[R, m]`` and the lengths ``[n]``, there."""
        if self.codebooks is None:
            raise ValueError(f"the index {self.source.folder} stores {self.source.dtype} vectors, not codes")
        read, lengths = self._reads(pids)
        return self.vectors[read], lengths

    def gather_rows(self, pids: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`PassageIndex.gather_rows` on the device: ``[R, d]`` float32 and the lengths ``[n]``, there."""
        read, lengths = self._reads(pids)
        return self._decoded(read), lengths

    def _decoded(self, read: torch.Tensor) -> torch.Tensor:
        """:meth:`PassageIndex._decoded` on the device, for stored rows ``read`` of any shape: ``[*read.shape, d]``."""
        if self.codebooks is not None:
            vectors = decode(self.codebooks, self.vectors[read], int(self.source.header["dim"]))
        else:
            vectors = self.vectors[read].float()
        if self.scales is not None:
            vectors *= self.scales[read].float()[..., None]
        return vectors

    def _reads(self, pids: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`PassageIndex._reads` on the device."""
        device = self.vectors.device
        rows = torch.as_tensor(self.source.rows(pids), dtype=torch.long, device=device)
        starts = self.offsets[rows].long()
        lengths = self.offsets[rows + 1].long() - starts
        total = int(lengths.sum())
        read = torch.repeat_interleave(starts - (torch.cumsum(lengths, 0) - lengths), lengths, output_size=total)
        return read + torch.arange(total, device=device), lengths

    def gather(self, pids: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`PassageIndex.gather` on the device: ``[n, L, d]`` float32 and the mask ``[n, L]``, there."""
        device = self.vectors.device
        dim = int(self.source.header["dim"])
        if not len(self.vectors):  # nothing stored: every passage is empty
            self.source.rows(pids)  # an unknown pid is still named
            return torch.zeros(len(pids), 1, dim, device=device), torch.zeros(
                len(pids), 1, dtype=torch.bool, device=device
            )
        positions, mask = self._positions(pids)
        return self._decoded(positions) * mask[..., None], mask


def merged_ranges(begins: np.ndarray, ends: np.ndarray, page: int = mmap.PAGESIZE) -> list[tuple[int, int]]:
    """The byte ranges ``[begin, end)`` (empty ones dropped) with each begin moved down to its ``page``'s start (what
    ``madvise`` takes), sorted, and merged where they overlap or touch: ``[(begin, end), ...]``, ascending."""
    begins, ends = np.asarray(begins, dtype=np.int64), np.asarray(ends, dtype=np.int64)
    keep = ends > begins
    begins, ends = begins[keep] // page * page, ends[keep]
    if not len(begins):
        return []
    order = np.argsort(begins, kind="stable")
    begins, reach = begins[order], np.maximum.accumulate(ends[order])
    first = np.ones(len(begins), dtype=bool)
    first[1:] = begins[1:] > reach[:-1]
    last = np.append(np.flatnonzero(first)[1:] - 1, len(begins) - 1)
    return list(zip(begins[first].tolist(), reach[last].tolist(), strict=True))


def build_index(
    model: nn.Module,
    tokenizer: Any,
    texts: Mapping[str, str],
    pids: Sequence[str],
    folder: str | os.PathLike,
    dtype: str = "float16",
    batch_size: int = 32,
    progress: bool = True,
    max_length: int = DOC_MAX_LENGTH,
    quantiser: ProductQuantiser | None = None,
) -> PassageIndex:
    """Encode ``pids``' passages with ``model.encode_passages`` (capped at ``max_length`` tokens: the paper's 200 for
    passages; chapter 9 stores documents) and write the
    index into ``folder`` (module doc); the build's wall time is in the header (``seconds``). Passages are encoded
    in batches of similar length; the index keeps ``pids``' order, so every passage's float32 vectors are held in
    memory until the files are written — sized for the candidates of the timed queries (chapter 3's cost table), not
    for a whole collection of a wide model (TK-BERT-6's 384-d pieces of the book's 30k passages: about 4 GB). A pid
    without text is a ``KeyError``. A ``pq`` index needs the fitted ``quantiser`` (of the model's vector width)."""
    built = build_indexes(
        model, tokenizer, texts, pids, {dtype: folder}, batch_size, progress, max_length=max_length, quantiser=quantiser
    )
    return built[dtype]


def build_indexes(
    model: nn.Module,
    tokenizer: Any,
    texts: Mapping[str, str],
    pids: Sequence[str],
    folders: Mapping[str, str | os.PathLike],
    batch_size: int = 32,
    progress: bool = True,
    name: str = "",
    max_length: int = DOC_MAX_LENGTH,
    quantiser: ProductQuantiser | None = None,
) -> dict[str, PassageIndex]:
    """:func:`build_index` in several precisions from one encoding: ``folders`` maps a stored dtype to its folder.
    Each header's ``seconds`` is the encoding's wall time plus the writing of that index (a ``pq`` index's: its
    codes, not the fitting of its ``quantiser``)."""
    unknown = [dtype for dtype in folders if dtype not in STORED_DTYPES]
    if unknown or not folders:
        raise ValueError(f"parameter 'dtype' must be one of {list(STORED_DTYPES)}, got {unknown or 'none'}")
    if PQ in folders and quantiser is None:
        raise ValueError(f"a {PQ!r} index needs a fitted product quantiser (parameter 'quantiser')")
    if batch_size < 1 or max_length < 1:
        raise ValueError(f"parameters 'batch_size' and 'max_length' must be >= 1, got {batch_size}, {max_length}")
    missing = [pid for pid in pids if pid not in texts]
    if missing:
        raise KeyError(f"passage {missing[0]!r} has no text")
    if len(set(pids)) != len(pids):
        raise ValueError("parameter 'pids' names a passage twice: an index holds each passage once")
    start = time.perf_counter()
    device = next(model.parameters()).device
    order = sorted(range(len(pids)), key=lambda i: len(texts[pids[i]]))
    blocks: list[np.ndarray] = [np.zeros((0, 0), np.float32)] * len(pids)
    model.eval()
    with torch.inference_mode():
        for begin in tqdm(range(0, len(order), batch_size), desc="passage index", disable=not progress):
            chosen = order[begin : begin + batch_size]
            ids, mask = tokenizer.encode([texts[pids[i]] for i in chosen], max_length)
            vectors, stored = model.encode_passages(ids.to(device), mask.to(device))
            vectors, stored = vectors.float().cpu().numpy(), stored.bool().cpu().numpy()
            for row, i in enumerate(chosen):
                blocks[i] = vectors[row][stored[row]]
    encoding = time.perf_counter() - start
    return {
        dtype: _write(blocks, pids, Path(folder), dtype, encoding, name, quantiser) for dtype, folder in folders.items()
    }


def _write(blocks: list[np.ndarray], pids: Sequence[str], folder: Path, dtype: str, encoding: float, name: str,
           quantiser: ProductQuantiser | None) -> PassageIndex:  # fmt: skip
    """Write one index of ``blocks`` (passage ``i``'s float32 vectors) into ``folder`` under a temporary name."""
    start = time.perf_counter()
    partial = _partial_folder(folder)
    offsets = np.concatenate([[0], np.cumsum([len(block) for block in blocks])]).astype(np.int64)
    dim = blocks[0].shape[1] if blocks else 0
    if dtype == PQ and dim and dim != quantiser.dim:
        raise ValueError(f"the product quantiser encodes {quantiser.dim}-d vectors, the model stores {dim}-d ones")
    with open(partial / "vectors.bin", "wb") as vector_file, open(partial / "scales.bin", "wb") as scale_file:
        for block in blocks:
            if dtype == "int8":
                codes, scales = quantise(block)
                vector_file.write(codes.tobytes())
                scale_file.write(scales.tobytes())
            elif dtype == PQ:
                vector_file.write(quantiser.encode(block).tobytes())
            else:
                vector_file.write(block.astype(np.float16).tobytes())
    if dtype != "int8":
        (partial / "scales.bin").unlink()
    if dtype == PQ:
        quantiser.codebooks.astype(np.float32).tofile(partial / "codebooks.bin")
    offsets.tofile(partial / "offsets.bin")
    seconds = round(encoding + time.perf_counter() - start, 3)
    header = {
        "format": INDEX_FORMAT, "dtype": dtype, "dim": int(dim), "passages": len(pids), "vectors": int(offsets[-1]),
        "pids": list(pids), "seconds": seconds, "model": name,
        **({"subspaces": quantiser.subspaces} if dtype == PQ else {}),
    }  # fmt: skip
    return _publish(partial, folder, header)


def _partial_folder(folder: Path) -> Path:
    """The empty temporary folder an index of ``folder`` is written into (an interrupted build's leftover removed)."""
    partial = folder.with_name(f".{folder.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    return partial


def _publish(partial: Path, folder: Path, header: dict[str, Any]) -> PassageIndex:
    """Write ``header`` with the size of every file written into ``partial``, then rename ``partial`` to ``folder``
    (replacing an older index there) and load it."""
    header["files"] = {path.name: path.stat().st_size for path in partial.iterdir()}
    write_json(partial / HEADER_NAME, header)
    if folder.exists():
        shutil.rmtree(folder)
    os.replace(partial, folder)
    return load_index(folder)


def repeat_index(source: PassageIndex, folder: str | os.PathLike, passages: int) -> PassageIndex:
    """An index of exactly ``passages`` passages written into ``folder`` from ``source``'s stored files repeated,
    nothing encoded again: copy ``k`` of ``source``'s passage ``pid`` is named ``<pid>#copy<k>`` (copy 0 keeps
    ``pid``), its vectors (and scales) are ``source``'s bytes written again, streamed copy after copy, its offsets
    shifted by the vectors before it, and a ``pq`` index keeps ``source``'s codebooks; the last copy is cut short.

    What it is for: an index of a collection's size on disk, to time reads from it (``benchmarks.cold_reads``) —
    the copies are the same passages, so it measures bytes and time, not effectiveness. The header adds ``copies``
    and ``repeats`` (``source``'s folder); its ``seconds`` are the writing's alone. ``passages`` must be at least
    ``source``'s passages (a ``ValueError`` naming the parameter)."""
    if not len(source) or passages < len(source):
        raise ValueError(f"parameter 'passages' must be >= the {len(source)} passages of {source.folder} (and the "
                         f"index must hold one), got {passages}")  # fmt: skip
    start = time.perf_counter()
    folder = Path(folder)
    partial = _partial_folder(folder)
    copies = -(-passages // len(source))
    last = passages - (copies - 1) * len(source)
    total = int(source.offsets[-1])
    offsets = np.concatenate(
        [source.offsets[:-1] + copy * total for copy in range(copies - 1)]
        + [source.offsets[: last + 1] + (copies - 1) * total]
    )
    for name in ("vectors.bin", "scales.bin"):
        if (source.folder / name).is_file():
            _write_repeated(
                (source.folder / name).read_bytes(), partial / name, copies, int(source.offsets[last]), total
            )
    if (source.folder / "codebooks.bin").is_file():
        shutil.copyfile(source.folder / "codebooks.bin", partial / "codebooks.bin")
    offsets.tofile(partial / "offsets.bin")
    pids = [pid if copy == 0 else f"{pid}#copy{copy}" for copy in range(copies) for pid in source.pids][:passages]
    header = {key: value for key, value in source.header.items() if key != "files"}
    header.update({"passages": passages, "vectors": int(offsets[-1]), "pids": pids, "copies": copies,
                   "repeats": str(source.folder), "seconds": round(time.perf_counter() - start, 3)})  # fmt: skip
    return _publish(partial, folder, header)


def _write_repeated(data: bytes, path: Path, copies: int, last_rows: int, rows: int) -> None:
    """``data`` (a stored array of ``rows`` rows) written ``copies`` times into ``path``, the last time only its
    first ``last_rows`` rows."""
    row_bytes = len(data) // rows if rows else 0
    with open(path, "wb") as handle:
        for _ in range(copies - 1):
            handle.write(data)
        handle.write(data[: last_rows * row_bytes])


def load_index(folder: str | os.PathLike, reads: str = SERVING_READS) -> PassageIndex:
    """Memory-map an index written by :func:`build_index`, its row files mapped as ``reads`` says (:data:`READS`:
    ``"prefetched"``, the library's serving, by default); a missing or truncated file is an error naming it, and so
    is a ``pq`` index written with each vector's length beside its codes (``"weighted"``: an older TK-Sparse's
    continuous gate, which its binary gate no longer reads)."""
    if reads not in READS:
        raise ValueError(f"parameter 'reads' must be one of {list(READS)}, got {reads!r}")
    folder = Path(folder)
    header = read_index_header(folder, HEADER_NAME, INDEX_FORMAT, "passage index")
    if header.get("weighted", False):
        raise ValueError(f"the index {folder} stores each vector's length beside its codes: it was written for an "
                         "older TK-Sparse gate (a continuous weight per term) and must be rebuilt")  # fmt: skip
    total, dim = header["vectors"], header["dim"]
    stored = _MEMORY[header["dtype"]]
    width = header["subspaces"] if header["dtype"] == PQ else dim
    empty = total == 0 or dim == 0
    maps: dict[str, mmap.mmap] = {}
    vectors = np.zeros((total, width), stored) if empty else _mapped(folder / "vectors.bin", stored, (total, width),
                                                                     reads, maps)  # fmt: skip
    quantiser = None
    if header["dtype"] == PQ:
        codebooks = np.fromfile(folder / "codebooks.bin", dtype=np.float32)
        quantiser = ProductQuantiser(codebooks.reshape(width, CENTROIDS, -1), int(dim))
    scales = None
    if header["dtype"] == "int8":
        scales = np.zeros(total, np.float16) if empty else _mapped(folder / "scales.bin", np.float16, (total,), reads,
                                                                   maps)  # fmt: skip
    offsets = np.fromfile(folder / "offsets.bin", dtype=np.int64)
    if len(offsets) != header["passages"] + 1 or offsets[-1] != total or np.any(np.diff(offsets) < 0):
        raise ValueError(f"{folder / 'offsets.bin'}: not the ascending offsets of {header['passages']} passages")
    pids = list(header["pids"])
    row_of = {pid: row for row, pid in enumerate(pids)}
    return PassageIndex(folder, pids, row_of, vectors, scales, offsets, header, quantiser, reads, maps)


def _mapped(path: Path, dtype: type, shape: tuple[int, ...], reads: str, maps: dict[str, mmap.mmap]) -> np.ndarray:
    """The read-only array ``shape`` of ``dtype`` in ``path``, memory-mapped as ``reads`` says (``MADV_RANDOM`` but
    for ``"read-around"``); its map is added to ``maps`` under the file's name."""
    with open(path, "rb") as handle:
        mapped = mmap.mmap(handle.fileno(), 0, prot=mmap.PROT_READ)
    if reads != "read-around":
        mapped.madvise(mmap.MADV_RANDOM)
    maps[path.name] = mapped
    return np.frombuffer(mapped, dtype=dtype, count=int(np.prod(shape))).reshape(shape)


__all__ = [
    "INDEX_FORMAT",
    "PQ",
    "READS",
    "ROW_FILES",
    "SERVING_READS",
    "STORED_DTYPES",
    "PassageIndex",
    "ResidentIndex",
    "build_index",
    "build_indexes",
    "load_index",
    "merged_ranges",
    "quantise",
    "repeat_index",
]
