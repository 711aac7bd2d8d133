"""duoBERT (``lib.models.duo_bert``): the joined passages, one logit per row, padding and batch invariance."""

from __future__ import annotations

import pytest
import torch
from transformers import BertModel

from lib.models.bert_cat import pack_pairs
from lib.models.duo_bert import DuoBert, join_passages
from lib.representations.bert import CLS_ID, SEP_ID, small_bert_config

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def tiny_duo(max_position: int = 64) -> DuoBert:
    torch.manual_seed(0)
    config = small_bert_config(
        vocab_size=3000, layers=2, hidden=32, heads=2, intermediate=64, max_position=max_position
    )
    return DuoBert(BertModel(config)).eval()


def ids(rows: list[list[int]], width: int) -> tuple[torch.Tensor, torch.Tensor]:
    tensor = torch.zeros((len(rows), width), dtype=torch.long)
    for index, row in enumerate(rows):
        tensor[index, : len(row)] = torch.tensor(row)
    return tensor, tensor != 0


def test_the_input_is_cls_q_sep_a_sep_b_sep_with_a_and_b_in_segment_b() -> None:
    a, a_mask = ids([[31, 32], [41]], 3)
    b, b_mask = ids([[51], [61, 62, 63]], 4)
    joint, joint_mask = join_passages(a, a_mask, b, b_mask, SEP_ID, cap=10)
    assert joint.tolist() == [[31, 32, SEP_ID, 51, 0], [41, SEP_ID, 61, 62, 63]]
    assert joint_mask.tolist() == [[True, True, True, True, False], [True] * 5]
    query, query_mask = ids([[11], [21, 22]], 2)
    packed, types, _ = pack_pairs(query, query_mask, joint, joint_mask)
    assert packed[0].tolist()[:7] == [CLS_ID, 11, SEP_ID, 31, 32, SEP_ID, 51] and packed[0, 7] == SEP_ID
    assert types[0].tolist()[:8] == [0, 0, 0, 1, 1, 1, 1, 1]


def test_each_passage_is_cut_to_the_cap_so_the_second_always_stays() -> None:
    a, a_mask = ids([list(range(1000, 1020))], 20)
    b, b_mask = ids([list(range(2000, 2020))], 20)
    joint, joint_mask = join_passages(a, a_mask, b, b_mask, SEP_ID, cap=5)
    assert joint[0].tolist() == [1000, 1001, 1002, 1003, 1004, SEP_ID, 2000, 2001, 2002, 2003, 2004]
    assert joint_mask.all()
    with pytest.raises(ValueError, match="batch sizes differ"):
        join_passages(a, a_mask, b[:0], b_mask[:0], SEP_ID, cap=5)


def test_one_logit_per_row_whatever_the_padding_and_the_batch() -> None:
    model = tiny_duo()
    query, query_mask = ids([[1500, 1501], [1600]], 2)
    a, a_mask = ids([[1700, 1701, 1702], [1800]], 3)
    b, b_mask = ids([[1900], [2000, 2001]], 2)
    with torch.no_grad():
        logits = model(query, query_mask, a, a_mask, b, b_mask)
        padded = model(*(torch.nn.functional.pad(t, (0, 4)) for t in (query, query_mask, a, a_mask, b, b_mask)))
        alone = model(query[1:], query_mask[1:], a[1:], a_mask[1:], b[1:], b_mask[1:])
        swapped = model(query, query_mask, b, b_mask, a, a_mask)
    assert logits.shape == (2,) and torch.allclose(logits, padded, atol=1e-5)
    assert torch.allclose(logits[1:], alone, atol=1e-5)
    assert not torch.allclose(logits, swapped)  # the order of the passages is read
    names = [group["name"] for group in model.optimizer_groups()]
    assert names == ["bert", "head"]


def test_a_long_pair_fits_the_positions() -> None:
    model = tiny_duo(max_position=32)
    query, query_mask = ids([[1500, 1501, 1502, 1503]], 4)
    a, a_mask = ids([list(range(1000, 1030))], 30)
    b, b_mask = ids([list(range(2000, 2030))], 30)
    with torch.no_grad():
        assert torch.isfinite(model(query, query_mask, a, a_mask, b, b_mask)).all()
