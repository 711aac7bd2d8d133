"""TKL: chunked local self-attention, windowed kernel pooling with a learned saturation, the top regions."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from lib.models.tkl import (
    TKL,
    LearnedSaturation,
    TKLBert,
    TKLConfig,
    chunk_layout,
    select_regions,
    window_count,
)
from tests.models.helpers import pad

pytestmark = pytest.mark.usefixtures("one_torch_thread")

VOCAB, DIM = 40, 16
#: Tiny Transformer settings (the authors' 10 heads of 30 and FF 300 are the defaults).
TINY = {"num_heads": 2, "head_dim": 4, "ff_dim": 8}


def embeddings(seed: int = 0) -> torch.Tensor:
    matrix = torch.randn(VOCAB, DIM, generator=torch.Generator().manual_seed(seed))
    matrix[0] = 0.0
    return matrix


def make_model(seed: int = 0, **settings) -> TKL:
    torch.manual_seed(seed)
    return TKL(embeddings(), config=TKLConfig(**{**TINY, **settings})).eval()


def random_ids(length: int, seed: int, low: int = 2) -> list[int]:
    return torch.randint(low, VOCAB, (length,), generator=torch.Generator().manual_seed(seed)).tolist()


def batch(doc_lengths: tuple[int, ...] = (260, 97, 12), doc_width: int | None = None, query_width: int | None = None):
    queries = [random_ids(length, seed) for seed, length in enumerate((3, 1, 5))]
    docs = [random_ids(length, 10 + seed) for seed, length in enumerate(doc_lengths)]
    return (*pad(queries, query_width), *pad(docs, doc_width))


def test_chunk_layout_reads_each_chunk_with_its_overlap_and_every_token_once() -> None:
    positions, inside, slot = chunk_layout(10, chunk_size=4, overlap=1)
    assert positions[0][inside[0]].tolist() == [0, 1, 2, 3, 4]  # the first chunk has no left overlap
    assert positions[1][inside[1]].tolist() == [3, 4, 5, 6, 7, 8]
    assert positions[2][inside[2]].tolist() == [7, 8, 9]  # clipped at the end
    tokens = torch.arange(10)
    assert torch.equal(positions[tokens // 4, slot], tokens)


def test_window_count_covers_the_document() -> None:
    counts = window_count(torch.tensor([0, 1, 30, 31, 32, 33, 100]), window_size=30, stride=2)
    assert counts.tolist() == [0, 1, 1, 2, 2, 3, 36]  # the last window of 100 tokens starts at 70


def test_stitched_vectors_are_each_chunk_contextualised_alone() -> None:
    """One vector per real token, each the hybrid vector (TK eq. 1) of its chunk read with its overlaps only."""
    model = make_model(chunk_size=8, chunk_overlap=2)
    doc = random_ids(29, seed=3)
    ids, mask = pad([doc, doc[:5]], 33)
    with torch.no_grad():
        vectors, stored_mask = model.encode_passages(ids, mask)
        expected = torch.zeros(29, DIM)
        for chunk in range(4):
            first, last = max(8 * chunk - 2, 0), min(8 * chunk + 10, 29)
            read = model.contextualise(torch.tensor([doc[first:last]]), torch.ones(1, last - first, dtype=torch.bool))
            own = slice(8 * chunk, min(8 * chunk + 8, 29))
            expected[own] = read[0, own.start - first : own.stop - first]
    assert vectors.shape == (2, 33, DIM) and torch.equal(stored_mask, mask)
    torch.testing.assert_close(vectors[0, :29], expected, atol=1e-5, rtol=1e-5)
    assert torch.count_nonzero(vectors[0, 29:]) == 0 and torch.count_nonzero(vectors[1, 5:]) == 0
    assert not model.scores_from_match, "TKL pools its match matrix by windows, not as TK's score_match does"


def test_local_attention_sees_its_chunk_and_the_overlap_only() -> None:
    """Chunks of 40 read 5 tokens on either side: token 10 (chunk 0, reading 0–44) sees token 42, not token 46."""
    model = make_model()
    doc = random_ids(120, seed=4)
    ids, mask = pad([doc])

    def vectors_after(position: int) -> torch.Tensor:
        changed = ids.clone()
        changed[0, position] = 1 if changed[0, position] != 1 else 2
        with torch.no_grad():
            return model.encode_passages(changed, mask)[0][0]

    with torch.no_grad():
        original = model.encode_passages(ids, mask)[0][0]
    for position, seen_by_10 in [(30, True), (42, True), (44, True), (45, False), (46, False), (100, False)]:
        assert (not torch.allclose(vectors_after(position)[10], original[10], atol=1e-6)) == seen_by_10, position
    assert not torch.allclose(vectors_after(46)[50], original[50], atol=1e-6)  # chunk 1 reads 35–84
    assert torch.allclose(vectors_after(100)[50], original[50], atol=1e-6)


@pytest.mark.parametrize("settings", [{}, {"saturation": "log"}, {"window_stride": 3, "region_neighbours": 1}])
def test_padding_invariance(settings: dict) -> None:
    model = make_model(**settings)
    with torch.no_grad():
        tight = model.explain_regions(*batch())
        padded = model.explain_regions(*batch(doc_width=347, query_width=9))  # more chunks and windows
    torch.testing.assert_close(padded.score, tight.score, atol=1e-5, rtol=1e-5)
    assert torch.equal(padded.region_starts, tight.region_starts)
    torch.testing.assert_close(padded.region_scores, tight.region_scores, atol=1e-5, rtol=1e-5)
    width = tight.window_scores.shape[1]
    assert not padded.windows[:, width:].any()
    torch.testing.assert_close(padded.window_scores[:, :width], tight.window_scores, atol=1e-5, rtol=1e-5)


def test_batch_invariance_and_stored_passages() -> None:
    model = make_model()
    q_ids, q_mask, d_ids, d_mask = batch()
    with torch.no_grad():
        scores = model(q_ids, q_mask, d_ids, d_mask)
        alone = torch.cat(
            [model(q_ids[i : i + 1], q_mask[i : i + 1], d_ids[i : i + 1], d_mask[i : i + 1]) for i in range(3)]
        )
        stored = model.encode_passages(d_ids, d_mask)
        first_query = model.score_encoded(q_ids[:1], q_mask[:1], *stored)
        first_query_batch = model(q_ids[:1].expand(3, -1), q_mask[:1].expand(3, -1), d_ids, d_mask)
    assert scores.shape == (3,) and scores.dtype == torch.float32
    torch.testing.assert_close(scores, alone, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(first_query, first_query_batch, atol=1e-5, rtol=1e-5)


def test_regions_do_not_overlap_and_lie_in_the_document() -> None:
    model = make_model(top_regions=4)
    q_ids, q_mask, d_ids, d_mask = batch((400, 250, 70))
    with torch.no_grad():
        parts = model.explain_regions(q_ids, q_mask, d_ids, d_mask)
    lengths = d_mask.sum(-1)
    for row in range(3):
        found = parts.region_starts[row] >= 0
        starts, ends = parts.region_starts[row][found], parts.region_ends[row][found]
        assert found[0] and (starts % 2 == 0).all() and (starts < lengths[row]).all()
        assert torch.equal(ends, torch.clamp(starts + 30, max=int(lengths[row])))
        assert all(abs(a - b) >= 30 for i, a in enumerate(starts.tolist()) for b in starts.tolist()[i + 1 :])
        scores = parts.region_scores[row][found]
        assert (scores[:-1] >= scores[1:]).all()  # greedy: best first
        assert torch.equal(scores, parts.window_scores[row, starts // 2])
    assert parts.region_starts[2].tolist()[2:] == [-1, -1]  # 70 tokens hold two windows 30 apart, not three


def test_the_score_is_the_weighted_sum_of_the_regions_and_their_neighbours() -> None:
    model = make_model()
    with torch.no_grad():
        model.region_weights.zero_()
        model.region_weights[0] = torch.tensor([1.0, 0.5, 0.25])  # offset 0: the regions themselves
        parts = model.explain_regions(*batch())
        expected = (parts.region_scores * torch.tensor([1.0, 0.5, 0.25])).sum(-1)
        torch.testing.assert_close(parts.score, expected)
        model.region_weights.zero_()
        model.region_weights[4, 0] = 1.0  # offset +2 of the best region
        shifted = model.explain_regions(*batch())
    best = parts.region_starts[:, 0] // 2
    last = parts.windows.sum(-1) - 1
    neighbour = torch.minimum(best + 2, last)
    torch.testing.assert_close(shifted.score, parts.window_scores.gather(1, neighbour[:, None])[:, 0])


@pytest.mark.parametrize("saturation", ["embedding", "log"])
def test_the_top_region_is_where_the_query_term_sits(saturation: str) -> None:
    """Query term 1 occurs 3 times from position 200 and once at 50 in random text without it: the best region
    covers 200–202 and the second one 50, once the windows score the exact-match kernel alone (α = 1: plain
    embeddings)."""
    model = make_model(saturation=saturation)
    doc = random_ids(320, seed=5)
    doc[200:203] = [1, 1, 1]
    doc[50] = 1
    with torch.no_grad():
        model.alpha.fill_(1.0)
        model.w_window.weight.zero_()
        model.w_window.weight[0, 0] = 1.0  # the kernel at μ = 1
        parts = model.explain_regions(*pad([[1]]), *pad([doc]))
    first, second = parts.region_starts[0, :2].tolist()
    assert first <= 200 and parts.region_ends[0, 0] > 202
    assert second <= 50 < parts.region_ends[0, 1]


def test_learned_saturation_starts_close_to_the_natural_log() -> None:
    torch.manual_seed(0)
    saturation = LearnedSaturation(DIM, clamp=1e-10)
    sums = torch.tensor([0.1, 0.5, 1.0, 3.0, 10.0]).view(1, 1, 5, 1).expand(2, 3, 5, 4)
    with torch.no_grad():
        saturated = saturation(sums, torch.randn(2, 3, DIM), torch.full((2, 5), 30.0))
    torch.testing.assert_close(saturated, sums.log(), atol=0.1, rtol=0)


def test_select_regions_is_greedy_and_stops_when_no_window_is_left() -> None:
    scores = torch.tensor([[5.0, 9.0, 1.0, 8.0, 7.0]])
    chosen, found = select_regions(scores, torch.ones(1, 5, dtype=torch.bool), torch.arange(5) * 2, 4, 3)
    assert chosen.tolist() == [[1, 3, 0]] and found.tolist() == [[True, True, False]]


@pytest.mark.parametrize("saturation", ["embedding", "log"])
def test_gradients_reach_every_parameter_and_groups_cover_each_once(saturation: str) -> None:
    model = make_model(saturation=saturation).train()
    model(*batch()).sum().backward()
    for name, param in model.named_parameters():
        assert param.grad is not None and torch.isfinite(param.grad).all(), name
        assert name == "embedding.weight" or param.grad.abs().sum() > 0, name
    groups = model.optimizer_groups()
    grouped = [id(param) for group in groups for param in group["params"]]
    assert len(grouped) == len(set(grouped)) and set(grouped) == {id(param) for param in model.parameters()}
    assert {group["name"]: group["lr"] for group in groups} == {
        "embeddings": 1e-4,
        "contextualisation": 1e-4,
        "other": 1e-3,
    }
    frozen = TKL(embeddings(), freeze_embeddings=True, config=TKLConfig(**TINY))
    assert [group["name"] for group in frozen.optimizer_groups()] == ["contextualisation", "other"]


@pytest.mark.parametrize("length", [0, 1, 7, 29, 41])
def test_short_documents_score_finitely(length: int) -> None:
    model = make_model()
    docs = [random_ids(length, seed=6), random_ids(90, seed=7)]
    with torch.no_grad():
        parts = model.explain_regions(*pad([[3, 4], [3, 4]]), *pad(docs))
    assert torch.isfinite(parts.score).all()
    assert parts.windows[0].sum() == (0 if length == 0 else 1 + max(0, math.ceil((length - 30) / 2)))
    if length == 0:
        assert parts.score[0] == 0 and parts.region_starts[0].tolist() == [-1, -1, -1]
    else:  # one region: every window of a document this short overlaps every other
        assert parts.region_starts[0, 0] >= 0 and parts.region_starts[0, 1:].tolist() == [-1, -1]


def test_invalid_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="window_stride"):
        make_model(window_stride=0)
    with pytest.raises(ValueError, match="saturation"):
        make_model(saturation="idf")


def test_tkl_on_a_bert_is_local_padding_invariant_and_trains_everything(bert_folder: Path) -> None:
    torch.manual_seed(0)
    model = TKLBert(bert_folder, 2).eval()
    doc = random_ids(120, seed=8)
    ids, mask = pad([doc])
    changed = ids.clone()
    changed[0, 100] = 1 if changed[0, 100] != 1 else 2
    with torch.no_grad():
        original, moved = model.encode_passages(ids, mask)[0][0], model.encode_passages(changed, mask)[0][0]
        tight, padded = model(*batch()), model(*batch(doc_width=300, query_width=7))
    assert torch.allclose(moved[10], original[10], atol=1e-6) and not torch.allclose(moved[90], original[90])
    torch.testing.assert_close(padded, tight, atol=1e-5, rtol=1e-5)
    model.train()
    model(*batch()).sum().backward()
    groups = model.optimizer_groups()
    assert [group["name"] for group in groups] == ["bert", "head"]
    grouped = [id(param) for group in groups for param in group["params"]]
    assert len(grouped) == len(set(grouped)) and set(grouped) == {id(param) for param in model.parameters()}
    head = {id(param) for param in groups[1]["params"]}
    assert all(param.grad is not None for param in model.parameters() if id(param) in head)
