"""PreTTR, ColBERT and BERT's layers run by hand (``lib.models.prettr``, ``.colbert``, ``.bert_layers``).

The models of lecture 8 that split BERT: scores against stored passages equal the full forward pass,
padding changes nothing, the split is checked, MaxSim is ColBERT eq. 3, and a real MiniLM slice works.
"""

from __future__ import annotations

import pytest
import torch
from transformers import BertModel

from lib.models.bert_cat import BOOK_BERT_LR, HEAD_LR
from lib.models.bert_layers import cls_vector, run_layers
from lib.models.colbert import COLBERT_DIM, ColBERT, maxsim
from lib.models.prettr import PASSAGE_OFFSET, PreTTR, close_passage
from lib.representations.bert import SEP_ID, small_bert_config

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def tiny_bert(seed: int = 0) -> BertModel:
    torch.manual_seed(seed)
    return BertModel(small_bert_config(vocab_size=3000, layers=3, hidden=32, heads=2, intermediate=64, max_position=96))


def batch(lengths: list[tuple[int, int]], pad: int = 0, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    q_ids = torch.zeros((len(lengths), max(q for q, _ in lengths) + pad), dtype=torch.long)
    d_ids = torch.zeros((len(lengths), max(d for _, d in lengths) + pad), dtype=torch.long)
    for row, (q, d) in enumerate(lengths):
        q_ids[row, :q] = torch.randint(999, 3000, (q,), generator=generator)
        d_ids[row, :d] = torch.randint(999, 3000, (d,), generator=generator)
    return q_ids, q_ids != 0, d_ids, d_ids != 0


def test_run_layers_equals_bert_model() -> None:
    bert = tiny_bert().eval()
    ids = torch.tensor([[101, 1500, 1600, 102, 0], [101, 1700, 102, 0, 0]])
    mask = ids != 0
    with torch.no_grad():
        expected = bert(input_ids=ids, attention_mask=mask.long()).last_hidden_state
        hidden = run_layers(
            bert.encoder.layer, bert.embeddings(input_ids=ids, token_type_ids=torch.zeros_like(ids)), mask
        )
    assert torch.allclose(hidden[mask], expected[mask], atol=1e-5)


def test_the_cls_row_alone_of_the_last_layer_is_the_full_layers_cls_row() -> None:
    bert = tiny_bert().eval()
    ids = torch.tensor([[101, 1500, 1600, 102, 0, 0], [101, 1700, 102, 1800, 1900, 102]])
    mask = ids != 0
    hidden = bert.embeddings(input_ids=ids, token_type_ids=torch.zeros_like(ids))
    with torch.no_grad():
        for layers in (bert.encoder.layer, bert.encoder.layer[2:], bert.encoder.layer[:0]):
            expected = run_layers(layers, hidden, mask)[:, 0]
            assert torch.allclose(cls_vector(layers, hidden, mask), expected, atol=1e-5)
    bert.train()
    torch.manual_seed(3)
    dropped = cls_vector(bert.encoder.layer, hidden, mask)
    torch.manual_seed(4)
    assert not torch.allclose(dropped, cls_vector(bert.encoder.layer, hidden, mask)), "dropout in training"
    dropped.sum().backward()
    assert all(p.grad is not None for p in bert.encoder.layer[-1].parameters()), "every weight of the layer learns"


def test_close_passage_appends_sep_after_the_real_pieces() -> None:
    ids = torch.tensor([[5, 6, 7], [8, 0, 0]])
    closed, mask = close_passage(ids, ids != 0)
    assert closed.tolist() == [[5, 6, 7, SEP_ID], [8, SEP_ID, 0, 0]]
    assert mask.tolist() == [[True] * 4, [True, True, False, False]]


@pytest.mark.parametrize("split", [0, 1, 2, 3])
def test_prettr_stored_passages_score_as_the_forward_pass(split: int) -> None:
    model = PreTTR(tiny_bert(), split=split).eval()
    q_ids, q_mask, d_ids, d_mask = batch([(4, 9), (4, 5), (4, 12)])
    q_ids[1:], q_mask[1:] = q_ids[0], q_mask[0]  # one query, three candidates
    with torch.no_grad():
        full = model(q_ids, q_mask, d_ids, d_mask)
        stored, stored_mask = model.encode_passages(d_ids, d_mask)
        encoded = model.score_encoded(q_ids[:1], q_mask[:1], stored, stored_mask)
    assert torch.allclose(full, encoded, atol=1e-5)
    assert stored.shape == (3, d_ids.shape[1] + 1, 32)


def test_prettr_padding_and_batch_do_not_change_a_score() -> None:
    model = PreTTR(tiny_bert()).eval()
    lengths = [(3, 7), (5, 11)]
    with torch.no_grad():
        tight = model(*batch(lengths))
        padded = model(*batch(lengths, pad=4))
        alone = model(*[t[1:] for t in batch(lengths)])
    assert torch.allclose(tight, padded, atol=1e-5)
    assert torch.allclose(tight[1:], alone, atol=1e-5)


def test_prettr_passage_side_ignores_the_query() -> None:
    """A stored passage cannot depend on the query: the lower layers see the passage alone."""
    model = PreTTR(tiny_bert(), split=2).eval()
    _, _, d_ids, d_mask = batch([(3, 8)])
    with torch.no_grad():
        first, _ = model.encode_passages(d_ids, d_mask)
        again, _ = model.encode_passages(d_ids, d_mask)
    assert torch.equal(first, again)
    assert PASSAGE_OFFSET == 32


def test_prettr_default_split_and_bad_split() -> None:
    assert PreTTR(tiny_bert()).split == 2
    assert PreTTR(tiny_bert(), num_layers=2).split == 1
    with pytest.raises(ValueError, match="'split'"):
        PreTTR(tiny_bert(), split=4)
    groups = PreTTR(tiny_bert()).optimizer_groups()
    assert [(g["name"], g["lr"]) for g in groups] == [("bert", BOOK_BERT_LR), ("head", HEAD_LR)]


def test_maxsim_is_colbert_eq3_by_hand() -> None:
    query = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [9.0, 9.0]]])
    doc = torch.tensor([[[0.6, 0.8], [1.0, 0.0], [50.0, 50.0]]])
    query_mask = torch.tensor([[True, True, False]])
    doc_mask = torch.tensor([[True, True, False]])
    # query token 1: max(0.6, 1.0) = 1.0; token 2: max(0.8, 0.0) = 0.8; the padded ones count nothing
    assert torch.allclose(maxsim(query, query_mask, doc, doc_mask), torch.tensor([1.8]))


def test_colbert_stored_passages_score_as_the_forward_pass_and_vectors_are_unit() -> None:
    model = ColBERT(tiny_bert(), dim=16).eval()
    q_ids, q_mask, d_ids, d_mask = batch([(4, 9), (4, 5)])
    q_ids[1], q_mask[1] = q_ids[0], q_mask[0]
    with torch.no_grad():
        full = model(q_ids, q_mask, d_ids, d_mask)
        stored, stored_mask = model.encode_passages(d_ids, d_mask)
        encoded = model.score_encoded(q_ids[:1], q_mask[:1], stored, stored_mask)
    assert torch.allclose(full, encoded, atol=1e-5)
    norms = stored.norm(dim=-1)
    assert torch.allclose(norms[stored_mask], torch.ones(int(stored_mask.sum())), atol=1e-5)
    assert torch.all(norms[~stored_mask] == 0)
    assert stored.shape[-1] == 16 and COLBERT_DIM == 128


def test_colbert_learns_on_one_batch() -> None:
    model = ColBERT(tiny_bert(), dim=16)
    q_ids, q_mask, d_ids, d_mask = batch([(4, 9), (4, 5)])
    optimizer = torch.optim.Adam(model.optimizer_groups())
    before = model(q_ids, q_mask, d_ids, d_mask).detach()
    for _ in range(5):
        optimizer.zero_grad()
        loss = (model(q_ids, q_mask, d_ids, d_mask) - torch.tensor([5.0, -5.0])).pow(2).mean()
        loss.backward()
        optimizer.step()
    after = model(q_ids, q_mask, d_ids, d_mask).detach()
    assert (after[0] - after[1]) > (before[0] - before[1])


def test_real_minilm_slice_scores_a_relevant_passage_higher() -> None:
    """On all-MiniLM-L6-v2's first 3 layers, untrained ColBERT already prefers the matching passage."""
    from lib.representations.bert import load_tokenizer
    from lib.representations.pretrained import minilm_folder

    tokenizer = load_tokenizer(minilm_folder())
    q_ids, q_mask = tokenizer.encode(["what is the capital of austria"] * 2, 30)
    d_ids, d_mask = tokenizer.encode(
        ["vienna is the capital of austria and its largest city", "photosynthesis converts light into energy"], 200
    )
    torch.manual_seed(0)
    model = ColBERT(minilm_folder(), num_layers=3).eval()
    with torch.no_grad():
        scores = model(q_ids, q_mask, d_ids, d_mask)
    assert scores[0] > scores[1]


def test_prettr_forward_splits_equals_each_split_of_the_same_weights() -> None:
    model = PreTTR(tiny_bert(), split=0).eval()
    q_ids, q_mask, d_ids, d_mask = batch([(4, 9), (2, 5), (4, 12), (3, 7)])
    q_ids[2], q_mask[2] = q_ids[0], q_mask[0]  # a repeated query is encoded once
    with torch.no_grad():
        every = model.forward_splits(q_ids, q_mask, d_ids, d_mask, [3, 0, 2])
        for column, split in enumerate([3, 0, 2]):
            model.split = split
            assert torch.allclose(every[:, column], model(q_ids, q_mask, d_ids, d_mask), atol=1e-5), split
    assert every.shape == (4, 3)
