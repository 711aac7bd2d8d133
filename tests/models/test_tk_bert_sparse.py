"""TK-BERT with TK-Sparse's stopword gate (``lib.models.tk_bert_sparse``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from lib.models.tk_bert import TKBert
from lib.models.tk_bert_sparse import BERT_RAMP_STEPS, BERT_REMOVAL_TARGET, TKBertSparse
from lib.models.tk_sparse import GATE_LR, REMOVAL_TARGET, quantile_threshold
from tests.models.helpers import pad, random_pairs

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def batch(seed: int = 1) -> tuple[torch.Tensor, ...]:
    queries, docs = random_pairs([(3, 12), (2, 7), (4, 20)], seed=seed)
    return (*pad(queries), *pad(docs))


def test_with_every_term_kept_it_scores_as_tk_bert(bert_folder: Path) -> None:
    torch.manual_seed(0)
    sparse = TKBertSparse(bert_folder, 2).eval()  # untrained: the running threshold is −∞
    plain = TKBert(bert_folder, 2).eval()
    plain.load_state_dict({key: value for key, value in sparse.state_dict().items() if key in plain.state_dict()})
    with torch.no_grad():
        torch.testing.assert_close(sparse(*batch()), plain(*batch()), atol=1e-5, rtol=1e-5)


def test_from_a_trained_tk_bert_it_keeps_every_weight_and_adds_a_new_gate_of_its_own(bert_folder: Path) -> None:
    torch.manual_seed(3)
    full = TKBert(bert_folder, 2).eval()
    with torch.no_grad():
        full.alpha.fill_(0.3)  # a weight the registry's build would not have
    sparse = TKBertSparse.from_trained(full, removal_target=0.2, ramp_steps=5).eval()
    assert isinstance(sparse, TKBertSparse) and (sparse.removal_target, sparse.ramp_steps) == (0.2, 5)
    built = TKBertSparse(bert_folder, 2)
    assert set(sparse.state_dict()) == set(built.state_dict()), "the registry's model, resumable as it"
    shared = {key: value for key, value in sparse.state_dict().items() if key in full.state_dict()}
    assert shared.keys() == full.state_dict().keys()
    assert all(torch.equal(value, full.state_dict()[key]) for key, value in shared.items())
    assert all(param.data_ptr() != other.data_ptr() for param in sparse.parameters() for other in full.parameters())
    with torch.no_grad():  # a new gate's running threshold is −∞: every term kept, TK-BERT's scores
        torch.testing.assert_close(sparse(*batch()), full(*batch()), atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="must be a full TK-BERT"):
        TKBertSparse.from_trained(sparse)
    with pytest.raises(ValueError, match="must be a full TK-BERT"):
        TKBertSparse.from_trained(full.compacted(torch.eye(full.embedding.word_embeddings.embedding_dim)[:4]))


def test_the_stored_index_keeps_only_kept_pieces_and_scores_as_forward(bert_folder: Path) -> None:
    torch.manual_seed(1)
    model = TKBertSparse(bert_folder, 2).eval()
    q_ids, q_mask, d_ids, d_mask = batch()
    with torch.no_grad():
        _, scores = model._gate_inputs(d_ids, d_mask.bool())
        model.threshold.fill_(float(scores[d_mask.bool()].median()))  # about half the terms removed
        full = model(q_ids, q_mask, d_ids, d_mask)
        stored, kept = model.encode_passages(d_ids, d_mask)
        _, gate = model.gates(d_ids, d_mask)
        scores = torch.stack([model.score_encoded(q_ids[i : i + 1], q_mask[i : i + 1], stored[i : i + 1],
                                                  kept[i : i + 1])[0] for i in range(3)])  # fmt: skip
    torch.testing.assert_close(full, scores, atol=1e-5, rtol=1e-5)
    assert torch.equal(kept, gate > 0) and 0 < int(kept.sum()) < int(d_mask.bool().sum())
    assert model.scores_from_match, "stored as TK-BERT's own vectors, scored as TK-BERT scores them"


def test_the_gate_trains_in_its_own_group_and_its_target_ramps_in(bert_folder: Path) -> None:
    model = TKBertSparse(bert_folder, 2, removal_target=0.4, ramp_steps=4)
    groups = {group["name"]: group for group in model.optimizer_groups(bert_lr=1e-5, head_lr=1e-3)}
    assert set(groups) == {"bert", "head", "gate"} and groups["gate"]["lr"] == GATE_LR
    gate = {id(param) for param in groups["gate"]["params"]}
    assert gate == {id(param) for param in model.gate_parameters()}
    assert not gate & {id(param) for param in groups["head"]["params"] + groups["bert"]["params"]}
    counted = sum(param.numel() for group in groups.values() for param in group["params"])
    assert counted == sum(param.numel() for param in model.parameters()), "every parameter in exactly one group"
    model.train()
    for module in model.modules():  # the BERT's dropout off, so that the two passes see the same gates
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    q_ids, q_mask, d_ids, d_mask = batch()
    model(q_ids, q_mask, d_ids, d_mask)
    _, scores = model._gate_inputs(d_ids, d_mask.bool())
    assert model.current_target() == pytest.approx(0.1)
    assert model.threshold == quantile_threshold(scores, d_mask.bool(), 0.1), "a tenth of the batch's terms removed"
    assert (BERT_REMOVAL_TARGET, BERT_RAMP_STEPS) == (REMOVAL_TARGET, 120)
    with pytest.raises(ValueError, match="'removal_target' must be in"):
        TKBertSparse(bert_folder, 1, removal_target=-1.0)
