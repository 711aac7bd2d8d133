"""An on-disk index of a model's passage side (``lib.reranking.passage_index``): what is stored is what scores."""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from lib import data
from lib.core.types import query_order, ranking_from_run
from lib.models.tk import TK, TKConfig
from lib.models.tk_sparse import TKSparse
from lib.representations.text import DOC_MAX_LENGTH, QUERY_MAX_LENGTH, Vocabulary
from lib.reranking.passage_index import (
    PQ,
    build_index,
    build_indexes,
    load_index,
    merged_ranges,
    quantise,
    repeat_index,
)
from lib.reranking.product_quantisation import fit_quantiser

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TEXTS = {
    "p1": "the androgen receptor is a type of nuclear receptor",
    "p2": "a receptor binds androgen",
    "p3": "flights to vienna cost less in winter and the receptor",
    "p4": "nuclear",
}


def tk_and_words(texts: dict[str, str]) -> tuple[TK, Vocabulary]:
    words = Vocabulary.build(list(texts.values()) + ["define androgen receptor"], min_count=1)
    torch.manual_seed(0)
    model = TK(torch.randn(len(words), 8), config=TKConfig(num_layers=1, num_heads=2, head_dim=4, ff_dim=8))
    return model.eval(), words


def direct_scores(model: TK, words: Vocabulary, query: str, texts: list[str]) -> torch.Tensor:
    query_ids, query_mask = words.encode([query] * len(texts), QUERY_MAX_LENGTH)
    doc_ids, doc_mask = words.encode(texts, DOC_MAX_LENGTH)
    with torch.no_grad():
        return model(query_ids, query_mask, doc_ids, doc_mask)


@pytest.mark.parametrize(("dtype", "tolerance"), [("float16", 2e-3), ("int8", 3e-2)])
def test_stored_vectors_read_back_score_as_the_model_run_whole(tmp_path: Path, dtype: str, tolerance: float) -> None:
    model, words = tk_and_words(TEXTS)
    index = build_index(model, words, TEXTS, list(TEXTS), tmp_path / "index", dtype, batch_size=3, progress=False)
    assert len(index) == 4 and index.dtype == dtype and index.header["seconds"] >= 0
    order = ["p3", "p1", "p3", "p4"]  # any order, a passage twice
    vectors, mask = index.gather(order)
    assert mask.sum(dim=1).tolist() == [len(TEXTS[pid].split()) for pid in order]
    query_ids, query_mask = words.encode(["define androgen receptor"], QUERY_MAX_LENGTH)
    with torch.no_grad():
        stored = model.score_stored(*model.encode_query(query_ids, query_mask), vectors, mask)
    direct = direct_scores(model, words, "define androgen receptor", [TEXTS[pid] for pid in order])
    torch.testing.assert_close(stored, direct, atol=tolerance, rtol=tolerance)
    again = load_index(tmp_path / "index")
    assert torch.equal(again.gather(order)[0], vectors)
    assert not (tmp_path / ".index.partial").exists()


@pytest.mark.parametrize("dtype", ["float16", "int8"])
def test_gather_reads_each_passages_own_rows_in_one_read_and_pads_with_zeros(tmp_path: Path, dtype: str) -> None:
    model, words = tk_and_words(TEXTS)
    index = build_index(model, words, TEXTS, list(TEXTS), tmp_path / "index", dtype, progress=False)
    order = ["p4", "p2", "p4", "p1", "p3"]
    vectors, mask = index.gather(order)
    for i, pid in enumerate(order):
        row = index.row_of[pid]
        start, stop = int(index.offsets[row]), int(index.offsets[row + 1])
        expected = np.asarray(index.vectors[start:stop], dtype=np.float32)
        if index.scales is not None:
            expected = expected * np.asarray(index.scales[start:stop], dtype=np.float32)[:, None]
        assert torch.equal(vectors[i, : stop - start], torch.from_numpy(expected))
        assert mask[i].tolist() == [True] * (stop - start) + [False] * (vectors.shape[1] - stop + start)
        assert not vectors[i, stop - start :].any(), "padding is zero"
    empty, empty_mask = index.gather([])
    assert empty.shape == (0, 1, vectors.shape[2]) and empty_mask.shape == (0, 1)
    assert index.lengths(order).tolist() == mask.sum(dim=1).tolist() == [len(TEXTS[pid].split()) for pid in order]
    assert index.resident("cpu").lengths(order).tolist() == index.lengths(order).tolist()
    with pytest.raises(KeyError, match="'p9' is not in the index"):
        index.lengths(["p9"])


@pytest.mark.parametrize("dtype", ["float16", "int8"])
def test_a_resident_index_reads_what_the_memory_mapped_one_reads(tmp_path: Path, dtype: str) -> None:
    model, words = tk_and_words(TEXTS)
    index = build_index(model, words, TEXTS, list(TEXTS), tmp_path / "index", dtype, progress=False)
    resident = index.resident("cpu")
    assert resident.vectors.dtype == (torch.int8 if dtype == "int8" else torch.float16)
    assert len(resident) == 4 and resident.bytes_per_passage == index.bytes_per_passage
    order = ["p4", "p1", "p4", "p3"]
    vectors, mask = resident.gather(order)
    expected_vectors, expected_mask = index.gather(order)
    assert torch.equal(mask, expected_mask)
    torch.testing.assert_close(vectors, expected_vectors, atol=1e-6, rtol=1e-6)
    with pytest.raises(KeyError, match="'p9' is not in the index"):
        resident.gather(["p1", "p9"])
    rows, lengths = index.gather_rows(order)
    assert torch.equal(rows, expected_vectors[expected_mask]), "unpadded: the padded read's real rows, in order"
    assert torch.equal(lengths, expected_mask.sum(dim=1))
    resident_rows, resident_lengths = resident.gather_rows(order)
    torch.testing.assert_close(resident_rows, rows, atol=1e-6, rtol=1e-6)
    assert torch.equal(resident_lengths, lengths) and index.gather_rows([])[0].shape == (0, rows.shape[1])
    with pytest.raises(KeyError, match="'p9' is not in the index"):
        resident.gather_rows(["p9"])


def test_one_encoding_writes_every_precision_as_its_own_build_would(tmp_path: Path) -> None:
    model, words = tk_and_words(TEXTS)
    calls = []
    encode = model.encode_passages
    model.encode_passages = lambda *args: calls.append(1) or encode(*args)
    both = build_indexes(model, words, TEXTS, list(TEXTS), {"float16": tmp_path / "f", "int8": tmp_path / "i"},
                         batch_size=4, progress=False)  # fmt: skip
    assert len(calls) == 1  # the four passages in one batch, encoded once for both indexes
    for dtype, index in both.items():
        alone = build_index(model, words, TEXTS, list(TEXTS), tmp_path / f"alone-{dtype}", dtype, progress=False)
        assert index.dtype == dtype and index.header["seconds"] > 0
        assert torch.equal(index.gather(list(TEXTS))[0], alone.gather(list(TEXTS))[0])
    with pytest.raises(ValueError, match="'dtype'"):
        build_indexes(model, words, TEXTS, ["p1"], {}, progress=False)


def test_bytes_per_passage_count_the_stored_vectors_scales_and_offsets(tmp_path: Path) -> None:
    model, words = tk_and_words(TEXTS)
    pieces = sum(len(text.split()) for text in TEXTS.values())
    half = build_index(model, words, TEXTS, list(TEXTS), tmp_path / "f16", "float16", progress=False)
    codes = build_index(model, words, TEXTS, list(TEXTS), tmp_path / "i8", "int8", progress=False)
    assert half.bytes_per_passage == pytest.approx((pieces * 8 * 2 + 5 * 8) / 4)
    assert codes.bytes_per_passage == pytest.approx((pieces * (8 + 2) + 5 * 8) / 4)
    assert (tmp_path / "f16" / "vectors.bin").stat().st_size == pieces * 8 * 2


def test_int8_codes_keep_each_vectors_direction() -> None:
    vectors = np.random.default_rng(0).normal(size=(50, 16)).astype(np.float32)
    codes, scales = quantise(vectors)
    assert codes.dtype == np.int8 and np.abs(codes).max() == 127
    restored = codes.astype(np.float32) * scales.astype(np.float32)[:, None]
    cosine = (restored * vectors).sum(1) / np.linalg.norm(restored, axis=1) / np.linalg.norm(vectors, axis=1)
    assert cosine.min() > 0.999
    zero_codes, zero_scales = quantise(np.zeros((1, 4), np.float32))
    assert not zero_codes.any() and zero_scales[0] == 1


def test_a_truncated_index_file_names_itself_and_bad_arguments_are_refused(tmp_path: Path) -> None:
    model, words = tk_and_words(TEXTS)
    build_index(model, words, TEXTS, list(TEXTS), tmp_path / "index", progress=False)
    vectors = tmp_path / "index" / "vectors.bin"
    vectors.write_bytes(vectors.read_bytes()[:10])
    expected = r"vectors\.bin: 10 bytes, but the index header .*header\.json expects .* truncated"
    with pytest.raises(ValueError, match=expected):
        load_index(tmp_path / "index")
    with pytest.raises(FileNotFoundError, match="no passage index"):
        load_index(tmp_path / "nothing")
    with pytest.raises(ValueError, match="'dtype'"):
        build_index(model, words, TEXTS, ["p1"], tmp_path / "x", "int4", progress=False)
    with pytest.raises(ValueError, match="twice"):
        build_index(model, words, TEXTS, ["p1", "p1"], tmp_path / "x", progress=False)
    with pytest.raises(KeyError, match="'p9'"):
        build_index(model, words, TEXTS, ["p9"], tmp_path / "x", progress=False)
    index = build_index(model, words, TEXTS, ["p1"], tmp_path / "small", progress=False)
    with pytest.raises(KeyError, match="'p2' is not in the index"):
        index.gather(["p2"])


@pytest.mark.usefixtures("converted")
def test_a_real_slice_of_dl19_candidates_scores_the_same_from_the_index(tmp_path: Path) -> None:
    queries, run, texts = data.load_queries("dl19"), data.load_run("dl19", "bm25"), data.load_collection("v1")
    qid = sorted(run, key=query_order)[0]
    pids = ranking_from_run(run[qid])[:20]
    model, words = tk_and_words({pid: texts[pid] for pid in pids})
    index = build_index(model, words, texts, pids, tmp_path / "index", progress=False)
    query_ids, query_mask = words.encode([queries[qid]], QUERY_MAX_LENGTH)
    with torch.no_grad():
        stored = model.score_stored(*model.encode_query(query_ids, query_mask), *index.gather(pids))
    direct = direct_scores(model, words, queries[qid], [texts[pid] for pid in pids])
    torch.testing.assert_close(stored, direct, atol=2e-3, rtol=2e-3)


@pytest.mark.parametrize("subspaces", [4, 3])  # 3: subspaces of 3, 3 and 2 numbers
def test_a_pq_index_stores_codes_and_reads_back_their_centroids(tmp_path: Path, subspaces: int) -> None:
    model, words = tk_and_words(TEXTS)
    vectors = np.random.default_rng(0).normal(size=(400, 8)).astype(np.float32)
    quantiser = fit_quantiser(vectors, subspaces, iterations=3)
    index = build_index(model, words, TEXTS, list(TEXTS), tmp_path / "pq", PQ, progress=False, quantiser=quantiser)
    pieces = sum(len(text.split()) for text in TEXTS.values())
    assert index.vectors.dtype == np.uint8 and index.vectors.shape == (pieces, subspaces)
    assert index.header["subspaces"] == subspaces
    assert index.bytes_per_passage == pytest.approx((pieces * subspaces + 5 * 8) / 4)
    assert index.codebook_bytes == subspaces * 256 * -(-8 // subspaces) * 4
    order = ["p3", "p1", "p3"]
    vectors, mask = index.gather(order)
    doc_ids, doc_mask = words.encode([TEXTS[pid] for pid in order], DOC_MAX_LENGTH)
    with torch.no_grad():
        full, stored = model.encode_passages(doc_ids, doc_mask)
    expected = quantiser.decode(quantiser.encode(full[stored].numpy()))
    assert torch.equal(mask, stored) and torch.equal(vectors[mask], expected)
    again = load_index(tmp_path / "pq")
    assert np.array_equal(again.quantiser.codebooks, quantiser.codebooks)
    assert torch.equal(again.gather(order)[0], vectors)
    resident = index.resident("cpu")
    assert resident.vectors.dtype == torch.uint8
    torch.testing.assert_close(resident.gather(order)[0], vectors, atol=1e-6, rtol=1e-6)
    codes, lengths = index.gather_codes(order)
    assert codes.dtype == torch.uint8 and codes.shape == (int(mask.sum()), subspaces), "unpadded: the stored vectors"
    assert torch.equal(lengths, mask.sum(dim=1)) and torch.equal(quantiser.decode(codes.numpy()), vectors[mask])
    assert all(torch.equal(a, b) for a, b in zip(resident.gather_codes(order), (codes, lengths), strict=True))
    nothing = index.gather_codes([])
    assert nothing[0].shape == (0, subspaces) and nothing[1].shape == (0,)
    assert all(torch.equal(a, b) for a, b in zip(resident.gather_codes([]), nothing, strict=True))
    with pytest.raises(KeyError, match="'p9' is not in the index"):
        resident.gather_codes(["p9"])
    plain = build_index(model, words, TEXTS, list(TEXTS), tmp_path / "plain", progress=False)
    with pytest.raises(ValueError, match="stores float16 vectors, not product-quantised codes"):
        plain.gather_codes(order)
    with pytest.raises(ValueError, match="needs a fitted product quantiser"):
        build_index(model, words, TEXTS, list(TEXTS), tmp_path / "x", PQ, progress=False)
    narrow = fit_quantiser(np.random.default_rng(0).normal(size=(400, 6)).astype(np.float32), 3, iterations=1)
    with pytest.raises(ValueError, match="encodes 6-d vectors, the model stores 8-d ones"):
        build_index(model, words, TEXTS, list(TEXTS), tmp_path / "x", PQ, progress=False, quantiser=narrow)
    codebooks = tmp_path / "pq" / "codebooks.bin"
    codebooks.write_bytes(codebooks.read_bytes()[:100])
    with pytest.raises(ValueError, match=r"codebooks\.bin: 100 bytes"):
        load_index(tmp_path / "pq")


@pytest.mark.parametrize("dtype", ["float16", "int8", PQ])
def test_a_repeated_index_holds_copies_of_the_stored_passages_under_new_ids(tmp_path: Path, dtype: str) -> None:
    model, words = tk_and_words(TEXTS)
    quantiser = fit_quantiser(np.random.default_rng(0).normal(size=(400, 8)).astype(np.float32), 4, iterations=1)
    source = build_index(model, words, TEXTS, list(TEXTS), tmp_path / "real", dtype, progress=False,
                         quantiser=quantiser if dtype == PQ else None)  # fmt: skip
    padded = repeat_index(source, tmp_path / "padded", 10)  # 4 passages: two whole copies more, then half of one
    assert len(padded) == 10 and padded.header["copies"] == 3 and padded.dtype == dtype
    assert padded.pids == [*TEXTS, *(f"{pid}#copy1" for pid in TEXTS), "p1#copy2", "p2#copy2"]
    for pid, copy in [("p3", "p3#copy1"), ("p4", "p4#copy1"), ("p1", "p1#copy2"), ("p2", "p2#copy2")]:
        assert all(torch.equal(a, b) for a, b in zip(padded.gather([copy]), source.gather([pid]), strict=True))
    stored = sum(len(TEXTS[pid].split()) for pid in TEXTS)
    assert padded.header["vectors"] == 2 * stored + len(TEXTS["p1"].split()) + len(TEXTS["p2"].split())
    assert padded.offsets[-1] == padded.header["vectors"] and np.all(np.diff(padded.offsets) >= 0)
    assert load_index(tmp_path / "padded").pids == padded.pids and not (tmp_path / ".padded.partial").exists()
    assert padded.codebook_bytes == source.codebook_bytes
    same = repeat_index(source, tmp_path / "same", 4)
    assert same.pids == source.pids and np.array_equal(np.asarray(same.vectors), np.asarray(source.vectors))
    with pytest.raises(ValueError, match="parameter 'passages' must be >= the 4 passages"):
        repeat_index(source, tmp_path / "small", 3)


def test_a_sparse_tk_pq_index_stores_only_its_kept_terms_codes_and_refuses_a_weighted_one(tmp_path: Path) -> None:
    """TK-Sparse's gate keeps a term or removes it: its ``pq`` index holds the codes of the kept terms' vectors only,
    no ``scales.bin``, and reads them back as TK's do; an index written with a length beside each code (an older,
    continuous gate's ``"weighted"`` header) is refused, naming its folder."""
    _, words = tk_and_words(TEXTS)
    torch.manual_seed(0)
    model = TKSparse(torch.randn(len(words), 8), config=TKConfig(num_layers=1, num_heads=2, head_dim=4, ff_dim=8))
    model.eval()
    ids, mask = words.encode(list(TEXTS.values()), DOC_MAX_LENGTH)
    with torch.no_grad():
        _, scores = model._gate_inputs(ids, mask)
        model.threshold.fill_(float(scores[mask.bool()].median()))  # about half the terms removed: not stored
    quantiser = fit_quantiser(np.random.default_rng(0).normal(size=(400, 8)).astype(np.float32), 4, iterations=3)
    index = build_index(model, words, TEXTS, list(TEXTS), tmp_path / "pq", PQ, progress=False, quantiser=quantiser)
    order = ["p3", "p1", "p3"]
    doc_ids, doc_mask = words.encode([TEXTS[pid] for pid in order], DOC_MAX_LENGTH)
    with torch.no_grad():
        full, kept = model.encode_passages(doc_ids, doc_mask)
    assert 0 < int(kept.sum()) < int(doc_mask.sum()) and 0 < int(index.offsets[-1]) < int(mask.sum())
    assert index.scales is None and not (tmp_path / "pq" / "scales.bin").exists() and "weighted" not in index.header
    assert index.bytes_per_passage == pytest.approx((int(index.offsets[-1]) * 4 + 5 * 8) / 4), "codes alone"
    vectors, gathered_mask = index.gather(order)
    assert torch.equal(gathered_mask.sum(dim=1), kept.sum(dim=1)), "only the kept terms, packed"
    torch.testing.assert_close(vectors[gathered_mask], quantiser.decode(quantiser.encode(full[kept].numpy())))
    torch.testing.assert_close(index.resident("cpu").gather(order)[0], vectors, atol=1e-6, rtol=1e-6)
    header = json.loads((tmp_path / "pq" / "header.json").read_text(encoding="utf-8"))
    (tmp_path / "pq" / "header.json").write_text(json.dumps({**header, "weighted": True}), encoding="utf-8")
    with pytest.raises(ValueError, match=f"{tmp_path / 'pq'} .*older TK-Sparse gate .*must be rebuilt"):
        load_index(tmp_path / "pq")


def test_merged_ranges_start_on_pages_drop_empty_ones_and_join_those_that_touch() -> None:
    assert merged_ranges(np.array([10, 5000, 4100, 9000, 30]), np.array([20, 6000, 4200, 9000, 40]), page=4096) == [
        (0, 40),
        (4096, 6000),
    ]
    assert merged_ranges(np.array([0, 8192]), np.array([8192, 9000]), page=4096) == [(0, 9000)], "touching: one"
    assert merged_ranges(np.array([0, 8193]), np.array([100, 9000]), page=4096) == [(0, 100), (8192, 9000)]
    assert merged_ranges(np.array([], dtype=np.int64), np.array([], dtype=np.int64)) == []


class AdviceRecorder:
    """A memory map's stand-in that records every ``madvise`` it is given."""

    def __init__(self) -> None:
        self.advice: list[tuple[int, int, int]] = []

    def madvise(self, option: int, start: int, length: int) -> None:
        self.advice.append((option, start, length))


@pytest.mark.parametrize("dtype", ["float16", "int8", PQ])
def test_a_served_index_asks_for_each_candidates_rows_once_and_reads_the_same_however_mapped(
    tmp_path: Path, dtype: str
) -> None:
    """Loaded ``prefetched`` (the default), an index asks the kernel for the candidates' rows of each row file — one
    ``MADV_WILLNEED`` per run of rows that touch, page-aligned, covering exactly their bytes — and every way of
    mapping it reads the same vectors; ``random`` and ``read-around`` ask for nothing, and an unknown way is refused."""
    import mmap

    model, words = tk_and_words(TEXTS)
    quantiser = fit_quantiser(np.random.default_rng(0).normal(size=(400, 8)).astype(np.float32), 4, iterations=1)
    source = build_index(model, words, TEXTS, list(TEXTS), tmp_path / "real", dtype, progress=False,
                         quantiser=quantiser if dtype == PQ else None)  # fmt: skip
    padded = repeat_index(source, tmp_path / "padded", 4_000)  # row files of several pages
    assert padded.reads == "prefetched" and set(padded.maps) == {"vectors.bin", *(["scales.bin"] * (dtype == "int8"))}
    pids = ["p3#copy900", "p1", "p2", "p1#copy500", "p4#copy999"]
    recorders = {name: AdviceRecorder() for name in padded.maps}
    recorded = dataclasses.replace(padded, maps=recorders)
    assert recorded.prefetch(pids) == sum(len(recorder.advice) for recorder in recorders.values()) > 0
    arrays = {"vectors.bin": padded.vectors, "scales.bin": padded.scales}
    for name, recorder in recorders.items():
        row_bytes = arrays[name].strides[0]
        wanted = {
            byte
            for row in padded.rows(pids)
            for byte in range(padded.offsets[row] * row_bytes, padded.offsets[row + 1] * row_bytes)
        }
        asked = [range(start, start + length) for option, start, length in recorder.advice]
        assert all(option == mmap.MADV_WILLNEED for option, _, _ in recorder.advice)
        assert all(part.start % mmap.PAGESIZE == 0 for part in asked)
        assert wanted <= {byte for part in asked for byte in part}, "every candidate's bytes are asked for"
        assert [part.start for part in asked] == sorted(part.start for part in asked)
        assert all(a.stop < b.start for a, b in itertools.pairwise(asked)), "ranges that touch are one request"
    expected = padded.gather(pids)
    for reads in ("random", "read-around"):
        opened = load_index(tmp_path / "padded", reads)
        assert opened.prefetch(pids) == 0 and opened.reads == reads
        assert all(torch.equal(a, b) for a, b in zip(opened.gather(pids), expected, strict=True))
    assert padded.prefetch(pids) > 0 and padded.resident("cpu").prefetch(pids) == 0
    with pytest.raises(KeyError, match="'nope' is not in the index"):
        padded.prefetch(["nope"])
    with pytest.raises(ValueError, match="parameter 'reads' must be one of"):
        load_index(tmp_path / "padded", "sequential")
