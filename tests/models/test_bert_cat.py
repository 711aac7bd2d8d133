"""BERT-cat (``lib.models.bert_cat``): packing, shapes, padding and batch invariance, optimizer groups."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import BertForMaskedLM, BertModel

from lib.models.bert_cat import BOOK_BERT_LR, HEAD_LR, BertCat, pack_pairs
from lib.representations.bert import CLS_ID, SEP_ID, small_bert_config

#: Tiny models run as fast on one thread, and a busy machine cannot stall a second one.
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def tiny_bert() -> BertModel:
    torch.manual_seed(0)
    return BertModel(small_bert_config(vocab_size=3000, layers=2, hidden=32, heads=2, intermediate=64, max_position=64))


def batch(lengths: list[tuple[int, int]], pad_q: int = 0, pad_d: int = 0, seed: int = 0):
    """Random word-piece ids (no special ids) with ``lengths`` = (query, doc) real tokens per row."""
    generator = torch.Generator().manual_seed(seed)
    lq = max(q for q, _ in lengths) + pad_q
    ld = max(d for _, d in lengths) + pad_d
    q_ids = torch.zeros((len(lengths), lq), dtype=torch.long)
    d_ids = torch.zeros((len(lengths), ld), dtype=torch.long)
    for row, (q, d) in enumerate(lengths):
        q_ids[row, :q] = torch.randint(999, 3000, (q,), generator=generator)
        d_ids[row, :d] = torch.randint(999, 3000, (d,), generator=generator)
    return q_ids, q_ids != 0, d_ids, d_ids != 0


@pytest.fixture()
def model() -> BertCat:
    torch.manual_seed(1)
    return BertCat(tiny_bert()).eval()


def test_packing_is_cls_q_sep_d_sep_then_padding() -> None:
    q_ids = torch.tensor([[11, 12, 0], [21, 0, 0]])
    d_ids = torch.tensor([[31, 0, 0], [41, 42, 43]])
    ids, types, attention = pack_pairs(q_ids, q_ids != 0, d_ids, d_ids != 0)
    assert ids.tolist() == [[CLS_ID, 11, 12, SEP_ID, 31, SEP_ID, 0], [CLS_ID, 21, SEP_ID, 41, 42, 43, SEP_ID]]
    assert types.tolist() == [[0, 0, 0, 0, 1, 1, 0], [0, 0, 0, 1, 1, 1, 1]]
    assert attention.tolist() == [[1, 1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1, 1]]
    for row in ids:
        assert row[0] == CLS_ID and int((row == SEP_ID).sum()) == 2 and int((row == CLS_ID).sum()) == 1


def test_packing_cuts_the_passage_to_the_positions() -> None:
    q_ids, q_mask, d_ids, d_mask = batch([(5, 50), (2, 3)])
    ids, _, attention = pack_pairs(q_ids, q_mask, d_ids, d_mask, max_length=20)
    assert ids.shape[1] == 20 and attention[0].sum() == 20 and attention[1].sum() == 8
    assert ids[0, -1] == SEP_ID and torch.equal(ids[0, 7:19], d_ids[0, :12])


def test_scores_have_one_value_per_pair(model: BertCat) -> None:
    scores = model(*batch([(3, 10), (5, 4), (1, 1)]))
    assert scores.shape == (3,) and scores.dtype == torch.float32


def test_extra_padding_leaves_scores_unchanged(model: BertCat) -> None:
    lengths = [(3, 10), (5, 4)]
    with torch.no_grad():
        plain = model(*batch(lengths))
        padded_q = model(*batch(lengths, pad_q=6))
        padded_d = model(*batch(lengths, pad_d=9))
    assert torch.allclose(plain, padded_q, atol=1e-5) and torch.allclose(plain, padded_d, atol=1e-5)


def test_scores_do_not_depend_on_the_rest_of_the_batch(model: BertCat) -> None:
    lengths = [(3, 10), (5, 4), (2, 17)]
    q_ids, q_mask, d_ids, d_mask = batch(lengths)
    with torch.no_grad():
        together = model(q_ids, q_mask, d_ids, d_mask)
        alone = torch.cat([model(q_ids[i, None], q_mask[i, None], d_ids[i, None], d_mask[i, None]) for i in range(3)])
    assert torch.allclose(together, alone, atol=1e-5)


@pytest.mark.parametrize("use_pooler", [False, True])
def test_the_score_is_the_full_berts_cls_vector_scored(use_pooler: bool) -> None:
    """The forward pass runs the last layer for ``[CLS]`` alone; BERT's own full pass gives the same score."""
    torch.manual_seed(1)
    bert = BertModel(small_bert_config(vocab_size=3000, layers=2, hidden=32, heads=2, intermediate=64, max_position=64))
    model = BertCat(bert, use_pooler=use_pooler).eval()
    inputs = batch([(3, 10), (5, 4), (2, 20)], pad_d=3)
    with torch.no_grad():
        hidden, _ = model.encode_pairs(*inputs)
        vector = model.bert.pooler(hidden) if use_pooler else hidden[:, 0]
        assert torch.allclose(model(*inputs), model.score(vector).squeeze(-1), atol=1e-5)


def test_optimizer_groups_cover_every_trainable_parameter(model: BertCat) -> None:
    groups = model.optimizer_groups()
    assert [(g["name"], g["lr"]) for g in groups] == [("bert", BOOK_BERT_LR), ("head", HEAD_LR)]
    grouped = {id(p) for g in groups for p in g["params"]}
    assert grouped == {id(p) for p in model.parameters()}
    assert model.bert.pooler is None
    assert [g["lr"] for g in model.optimizer_groups(bert_lr=1e-6, head_lr=1e-4)] == [1e-6, 1e-4]
    torch.optim.Adam(groups)  # accepted as is


def test_a_training_step_moves_the_scores() -> None:
    model = BertCat(tiny_bert()).train()
    inputs = batch([(3, 10), (5, 4)])
    optimizer = torch.optim.Adam(model.optimizer_groups())
    before = model.eval()(*inputs).detach()
    model.train()
    loss = -model(*inputs)[0] + model(*inputs)[1]
    loss.backward()
    optimizer.step()
    assert not torch.allclose(model.eval()(*inputs).detach(), before)


def test_constructor_takes_a_checkpoint_folder_or_an_mlm_model(tmp_path: Path) -> None:
    torch.manual_seed(0)
    mlm = BertForMaskedLM(small_bert_config(vocab_size=3000, layers=2, hidden=32, heads=2, intermediate=64))
    mlm.save_pretrained(tmp_path / "bert")
    from_folder = BertCat(tmp_path / "bert").eval()
    from_model = BertCat(mlm).eval()
    from_folder.score.load_state_dict(from_model.score.state_dict())
    inputs = batch([(3, 10), (5, 4)])
    with torch.no_grad():
        assert torch.allclose(from_folder(*inputs), from_model(*inputs), atol=1e-6)
    with pytest.raises(TypeError, match="'bert'"):
        BertCat(torch.nn.Linear(2, 2))
