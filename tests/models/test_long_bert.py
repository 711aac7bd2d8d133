"""Long documents with BERT-cat (``lib.models.long_bert``): windows, FirstP and MaxP against BERT-cat by hand."""

from __future__ import annotations

import pytest
import torch
from transformers import BertModel

from lib.models.bert_cat import BertCat
from lib.models.bi_encoder import BiEncoder
from lib.models.long_bert import FirstP, MaxP, as_bert_cat, as_scorer, document_windows
from lib.representations.bert import small_bert_config
from tests.models.helpers import long_batch, pad, random_texts, tiny_bert_cat

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_windows_by_hand() -> None:
    docs = [list(range(11, 19)), [21, 22], [], list(range(31, 38))]
    ids, mask = pad(docs, 9)
    windows = document_windows(ids, mask, size=3, stride=2)
    assert windows.counts.tolist() == [4, 1, 1, 3]
    assert windows.ids.tolist() == [
        [11, 12, 13], [13, 14, 15], [15, 16, 17], [17, 18, 0],  # the last window partial
        [21, 22, 0],  # shorter than one window
        [0, 0, 0],  # an empty document: one empty window
        [31, 32, 33], [33, 34, 35], [35, 36, 37],  # no window starts after one has reached the end
    ]  # fmt: skip
    assert windows.mask.tolist() == [[i != 0 for i in row] for row in windows.ids.tolist()]
    assert windows.document.tolist() == [0, 0, 0, 0, 1, 2, 3, 3, 3]
    assert windows.number.tolist() == [0, 1, 2, 3, 0, 0, 0, 1, 2]
    assert windows.valid().tolist() == [[True] * 4, [True, False, False, False], [True, False, False, False],
                                        [True, True, True, False]]  # fmt: skip
    dense = windows.per_document(torch.arange(9.0), -1.0)
    assert dense.tolist() == [[0, 1, 2, 3], [4, -1, -1, -1], [5, -1, -1, -1], [6, 7, 8, -1]]


def test_windows_with_overlap_and_a_holey_mask() -> None:
    ids = torch.tensor([[11, 0, 12, 13, 14, 15, 0, 0]])
    mask = ids != 0  # real tokens 11..15, with a hole: taken in order
    windows = document_windows(ids, mask, size=2, stride=2, overlap=1)
    assert windows.counts.tolist() == [3]
    assert windows.ids.tolist() == [[0, 11, 12, 13], [12, 13, 14, 15], [14, 15, 0, 0]]
    assert windows.mask.tolist() == [[False, True, True, True], [True] * 4, [True, True, False, False]]


def test_windows_do_not_depend_on_padding_or_the_batch() -> None:
    docs = random_texts([23, 5, 40], seed=3)
    together = document_windows(*pad(docs), size=6, stride=4, overlap=2)
    padded = document_windows(*pad(docs, 60), size=6, stride=4, overlap=2)
    alone = document_windows(*pad(docs[2:]), size=6, stride=4, overlap=2)
    assert torch.equal(together.ids, padded.ids) and torch.equal(together.mask, padded.mask)
    assert torch.equal(together.ids[together.document == 2], alone.ids)
    with pytest.raises(ValueError, match="stride"):
        document_windows(*pad(docs), size=6, stride=0)


def test_first_p_is_bert_cat_on_the_cut_document() -> None:
    bert_cat = tiny_bert_cat().eval()
    q_ids, q_mask, d_ids, d_mask = long_batch([3, 7], [100, 30])
    with torch.no_grad():
        for max_length, model in [(64, FirstP(bert_cat)), (20, FirstP(bert_cat, max_length=20))]:
            scores = model(q_ids, q_mask, d_ids, d_mask)
            for row in range(2):
                room = min(max_length - 3 - int(q_mask[row].sum()), int(d_mask[row].sum()))
                by_hand = bert_cat(
                    q_ids[row, None], q_mask[row, None], d_ids[row, None, :room], d_mask[row, None, :room]
                )
                assert torch.allclose(scores[row], by_hand[0], atol=1e-5)
    assert FirstP(bert_cat, max_length=512).max_length == 64  # at most BERT's positions
    with pytest.raises(ValueError, match="max_length"):
        FirstP(bert_cat, max_length=3)


def test_max_p_is_the_best_window_scored_alone() -> None:
    bert_cat = tiny_bert_cat().eval()
    model = MaxP(bert_cat, size=20, stride=10)
    q_ids, q_mask, d_ids, d_mask = long_batch([3, 5, 2], [57, 12, 30])
    with torch.no_grad():
        scores = model(q_ids, q_mask, d_ids, d_mask)
        for row, length in enumerate([57, 12, 30]):
            starts = [0] + list(range(10, length - 10, 10))  # 57: 0, 10, …, 40 (the one at 40 reaches the end)
            windows = [d_ids[row, None, start : start + 20] for start in starts]
            alone = torch.cat([bert_cat(q_ids[row, None], q_mask[row, None], w, w != 0) for w in windows])
            assert torch.allclose(scores[row], alone.max(), atol=1e-5)
        window_scores, valid = model.window_scores(q_ids, q_mask, d_ids, d_mask)
    assert valid.sum(dim=1).tolist() == [5, 1, 2] and torch.isinf(window_scores[~valid]).all()


def test_max_p_ignores_padding_and_the_rest_of_the_batch() -> None:
    model = MaxP(tiny_bert_cat().eval(), size=16, stride=8)
    lengths = ([3, 5, 2], [50, 9, 33])
    with torch.no_grad():
        plain = model(*long_batch(*lengths))
        padded = model(*long_batch(*lengths, extra=11))
        q_ids, q_mask, d_ids, d_mask = long_batch(*lengths)
        alone = torch.cat([model(q_ids[i, None], q_mask[i, None], d_ids[i, None], d_mask[i, None]) for i in range(3)])
    assert torch.allclose(plain, padded, atol=1e-5) and torch.allclose(plain, alone, atol=1e-5)


def test_max_p_window_must_fit_and_groups_are_bert_cats() -> None:
    bert_cat = tiny_bert_cat().eval()
    with pytest.raises(ValueError, match="does not fit"):
        MaxP(bert_cat, size=61)
    model = MaxP(bert_cat, size=20, stride=10)
    groups = model.optimizer_groups()
    assert [g["name"] for g in groups] == ["bert", "head"]
    grouped = [id(p) for g in groups for p in g["params"]]
    assert len(grouped) == len(set(grouped)) and set(grouped) == {id(p) for p in model.parameters()}
    assert [g["lr"] for g in FirstP(bert_cat).optimizer_groups(bert_lr=1e-6)][0] == 1e-6


def test_a_bert_is_wrapped_and_a_bert_cat_is_reused() -> None:
    bert_cat = tiny_bert_cat().eval()
    assert as_bert_cat(bert_cat, None) is bert_cat and MaxP(bert_cat, size=20).scorer is bert_cat
    with pytest.raises(ValueError, match="num_layers"):
        as_bert_cat(bert_cat, 1)
    config = small_bert_config(vocab_size=3000, layers=2, hidden=32, heads=2, intermediate=64, max_position=64)
    built = FirstP(BertModel(config), num_layers=1)
    assert isinstance(built.scorer, BertCat) and len(built.scorer.bert.encoder.layer) == 1


def test_max_p_trains_through_the_best_window() -> None:
    model = MaxP(tiny_bert_cat().eval(), size=16, stride=8).train()
    scores = model(*long_batch([3, 4], [40, 20]))
    (scores[0] - scores[1]).backward()
    assert model.scorer.score.weight.grad is not None and model.scorer.score.weight.grad.abs().sum() > 0


def test_a_bi_encoder_reads_documents_as_first_p_and_max_p_without_the_query_in_its_room() -> None:
    config = small_bert_config(vocab_size=3000, layers=2, hidden=32, heads=2, intermediate=64, max_position=64)
    torch.manual_seed(0)
    bi_encoder = BiEncoder(BertModel(config)).eval()
    q_ids, q_mask, d_ids, d_mask = long_batch([3, 9], [100, 30])
    first, best = FirstP(bi_encoder, max_length=40), MaxP(bi_encoder, size=20, stride=20)
    assert as_scorer(bi_encoder, None) is bi_encoder and first.scorer is bi_encoder
    with torch.no_grad():
        firsts, bests = first(q_ids, q_mask, d_ids, d_mask), best(q_ids, q_mask, d_ids, d_mask)
        for row, length in enumerate([100, 30]):
            room = min(40 - 2, length)  # [CLS] d [SEP]: the query packs apart, whatever its length
            by_hand = bi_encoder(q_ids[row, None], q_mask[row, None], d_ids[row, None, :room], d_mask[row, None, :room])
            assert torch.allclose(firsts[row], by_hand[0], atol=1e-5)
            windows = [d_ids[row, None, start : start + 20] for start in range(0, length, 20)]
            alone = torch.cat([bi_encoder(q_ids[row, None], q_mask[row, None], w, w != 0) for w in windows])
            assert torch.allclose(bests[row], alone.max(), atol=1e-5)
    assert FirstP(bi_encoder).max_length == 64
    with pytest.raises(ValueError, match="num_layers"):
        as_scorer(bi_encoder, 1)
    with pytest.raises(ValueError, match="does not fit"):
        MaxP(bi_encoder, size=63)
