"""TK on a pre-trained contextualiser (``lib.models.tk_bert``): eq. 1 on a BERT's first layers, TK's eq. 4–10."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from lib.models.bi_encoder import wrap
from lib.models.tk_bert import TKBert
from lib.representations.bert import load_bert
from lib.representations.pretrained import minilm_folder
from tests.models.helpers import pad, random_pairs

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def batch(seed: int = 1) -> tuple[torch.Tensor, ...]:
    queries, docs = random_pairs([(3, 12), (2, 7), (4, 20)], seed=seed)
    return (*pad(queries), *pad(docs))


def tk_bert(folder: Path, layers: int = 2) -> TKBert:
    torch.manual_seed(0)
    return TKBert(folder, layers).eval()


def test_eq1_inputs_are_the_berts_embedding_layer_and_first_layers_over_cls_pieces_sep(bert_folder: Path) -> None:
    model = tk_bert(bert_folder, 2)
    ids, mask = pad([[5, 6, 7, 8], [9, 10]])
    embeddings, context = model.embed_and_context(ids, mask)
    bert = load_bert(bert_folder).eval()
    wrapped, attention = wrap(ids, mask)
    with torch.no_grad():
        states = bert(input_ids=wrapped, attention_mask=attention, output_hidden_states=True).hidden_states
    keep = mask.unsqueeze(-1).float()
    torch.testing.assert_close(embeddings, states[0][:, 1:5] * keep)
    torch.testing.assert_close(context, states[2][:, 1:5] * keep, atol=1e-5, rtol=1e-5)
    assert torch.count_nonzero(context[1, 2:]) == 0


def test_the_score_is_tks_explained_score_and_decomposes_over_the_kernels(bert_folder: Path) -> None:
    model = tk_bert(bert_folder)
    with torch.no_grad():
        scores = model(*batch())
        explanation = model.explain(*batch())
    torch.testing.assert_close(scores, explanation.s, atol=1e-5, rtol=1e-5)
    parts = explanation.log_terms.sum(-1) + explanation.len_terms.sum(-1)
    torch.testing.assert_close(parts, explanation.s, atol=1e-5, rtol=1e-5)
    mixed = (
        explanation.alpha * explanation.query_embeddings
        + (1 - explanation.alpha) * (model.embed_and_context(*batch()[:2])[1])
    )
    torch.testing.assert_close(explanation.query_vectors, mixed * batch()[1].unsqueeze(-1), atol=1e-5, rtol=1e-5)


def test_padding_and_the_batch_do_not_change_a_score(bert_folder: Path) -> None:
    model = tk_bert(bert_folder)
    queries, docs = random_pairs([(3, 12), (2, 7)], seed=4)
    with torch.no_grad():
        together = model(*pad(queries), *pad(docs))
        alone = model(*pad(queries[1:]), *pad(docs[1:]))
        padded = model(*pad(queries, 6), *pad(docs, 30))
    torch.testing.assert_close(together[1:], alone, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(together, padded, atol=1e-5, rtol=1e-5)


def test_stored_passages_score_as_the_forward_pass(bert_folder: Path) -> None:
    model = tk_bert(bert_folder)
    queries, docs = random_pairs([(3, 12), (3, 7), (3, 20)], seed=5)
    query_ids, query_mask = pad([queries[0]] * 3)
    doc_ids, doc_mask = pad(docs)
    with torch.no_grad():
        stored, stored_mask = model.encode_passages(doc_ids, doc_mask)
        from_index = model.score_encoded(query_ids[:1], query_mask[:1], stored, stored_mask)
        direct = model(query_ids, query_mask, doc_ids, doc_mask)
    torch.testing.assert_close(from_index, direct, atol=1e-5, rtol=1e-5)


def test_two_adam_groups_the_pretrained_part_at_the_bert_rate_the_scoring_at_its_own(bert_folder: Path) -> None:
    model = tk_bert(bert_folder, 1)
    groups = {group["name"]: group for group in model.optimizer_groups(bert_lr=2e-5)}
    assert groups["bert"]["lr"] == 2e-5 and groups["head"]["lr"] == 1e-3
    head = {id(p) for p in groups["head"]["params"]}
    assert head == {id(p) for p in (model.alpha, model.w_log.weight, model.w_len.weight, model.beta, model.gamma)}
    every = {id(p) for group in groups.values() for p in group["params"]}
    assert every == {id(p) for p in model.parameters()} and len(model.contextualiser.layers) == 1


def test_a_depth_beyond_the_berts_layers_is_an_error_naming_the_parameter(bert_folder: Path) -> None:
    with pytest.raises(ValueError, match="'num_layers' must be an integer in 1..3"):
        TKBert(bert_folder, 4)


def test_minilms_first_two_layers_are_the_contextualiser_and_a_step_moves_the_scores() -> None:
    model = tk_bert(minilm_folder(), 2)
    ids, mask = pad([[2129, 2000, 3357], [7128, 3466]])
    bert = load_bert(minilm_folder()).eval()
    wrapped, attention = wrap(ids, mask)
    with torch.no_grad():
        states = bert(input_ids=wrapped, attention_mask=attention, output_hidden_states=True).hidden_states
        _, context = model.embed_and_context(ids, mask)
    torch.testing.assert_close(context, states[2][:, 1:4] * mask.unsqueeze(-1), atol=1e-4, rtol=1e-4)
    optimizer = torch.optim.Adam(model.optimizer_groups(bert_lr=1e-4))
    before = model(ids, mask, ids.flip(0), mask.flip(0)).detach()
    (-model(ids, mask, ids.flip(0), mask.flip(0)).sum()).backward()
    optimizer.step()
    assert not torch.allclose(model(ids, mask, ids.flip(0), mask.flip(0)).detach(), before)


def test_the_compact_index_projects_both_sides_to_d_and_stores_d_numbers_per_piece(bert_folder: Path) -> None:
    torch.manual_seed(0)
    compact = TKBert(bert_folder, 2, projection_dim=8).eval()
    queries, docs = random_pairs([(3, 12), (3, 7), (3, 20)], seed=5)
    query_ids, query_mask = pad([queries[0]] * 3)
    doc_ids, doc_mask = pad(docs)
    with torch.no_grad():
        stored, stored_mask = compact.encode_passages(doc_ids, doc_mask)
        assert stored.shape == (3, doc_ids.shape[1], 8)
        assert torch.equal(stored[~stored_mask], torch.zeros_like(stored[~stored_mask])), "padding stays 0"
        explained = compact.explain(query_ids, query_mask, doc_ids, doc_mask)
        assert explained.query_vectors.shape[-1] == 8
        from_index = compact.score_encoded(query_ids[:1], query_mask[:1], stored, stored_mask)
        torch.testing.assert_close(from_index, compact(query_ids, query_mask, doc_ids, doc_mask), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(explained.s, from_index, atol=1e-5, rtol=1e-5)
    weight = compact.projection.weight
    torch.testing.assert_close(weight @ weight.T, torch.eye(8), atol=1e-5, rtol=0)  # starts orthogonal
    head = {id(p) for group in compact.optimizer_groups() if group["name"] == "head" for p in group["params"]}
    assert id(weight) in head, "P trains with the scoring layers"
    with pytest.raises(ValueError, match="'projection_dim' must be a positive width"):
        TKBert(bert_folder, 2, projection_dim=0)


def test_the_query_is_encoded_once_and_scored_against_stored_passages(bert_folder: Path) -> None:
    model = tk_bert(bert_folder)
    queries, docs = random_pairs([(3, 12), (3, 7), (3, 20)], seed=5)
    query_ids, query_mask = pad([queries[0]])
    doc_ids, doc_mask = pad(docs)
    with torch.no_grad():
        stored, stored_mask = model.encode_passages(doc_ids, doc_mask)
        query = model.encode_query(query_ids, query_mask)
        halves = [model.score_stored(*query, stored[i : i + 2], stored_mask[i : i + 2]) for i in (0, 2)]
        whole = model.score_encoded(query_ids, query_mask, stored, stored_mask)
        as_float16 = model.score_stored(*query, stored.half(), stored_mask)
    torch.testing.assert_close(torch.cat(halves), whole)
    torch.testing.assert_close(as_float16, whole, atol=1e-2, rtol=1e-2)


def test_compacted_adds_the_given_projection_to_a_copy_of_the_full_tk(bert_folder: Path) -> None:
    full = tk_bert(bert_folder)
    query_ids, query_mask, doc_ids, doc_mask = batch(seed=3)
    projection = torch.linalg.qr(torch.randn(32, 32, generator=torch.Generator().manual_seed(2)))[0][:6]
    compact = full.compacted(projection).eval()
    assert full.projection is None, "the full TK is left unchanged"
    with torch.no_grad():
        full_vectors, mask = full.encode_passages(doc_ids, doc_mask)
        compact_vectors, _ = compact.encode_passages(doc_ids, doc_mask)
        torch.testing.assert_close(compact_vectors, full_vectors @ projection.T, atol=1e-5, rtol=1e-5)
        # an orthogonal P onto every dimension keeps every cosine: the full TK's scores
        rotation = torch.linalg.qr(torch.randn(32, 32, generator=torch.Generator().manual_seed(4)))[0]
        torch.testing.assert_close(
            full.compacted(rotation)(query_ids, query_mask, doc_ids, doc_mask),
            full(query_ids, query_mask, doc_ids, doc_mask), atol=1e-5, rtol=1e-4,
        )  # fmt: skip
    assert torch.equal(compact.alpha, full.alpha) and compact.alpha is not full.alpha
    with pytest.raises(ValueError, match="already compact"):
        compact.compacted(projection)
    with pytest.raises(ValueError, match="'projection' must be"):
        full.compacted(torch.zeros(4, 31))
