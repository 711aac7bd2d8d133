"""TK-BERT with TK-Sparse's stopword gate (``lib.models.tk_bert_sparse``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import BertForMaskedLM

from lib.models.tk_bert import TKBert
from lib.models.tk_bert_sparse import BERT_RAMP_STEPS, BERT_SPARSITY_WEIGHT, TKBertSparse
from lib.models.tk_sparse import GATE_LR, SPARSITY_WEIGHT
from lib.representations.bert import small_bert_config
from lib.training.pairwise import regularisation
from tests.models.helpers import pad, random_pairs

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def bert_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bert")
    torch.manual_seed(0)
    config = small_bert_config(vocab_size=120, layers=3, hidden=32, heads=2, intermediate=64)
    BertForMaskedLM(config).save_pretrained(folder)
    return folder


def batch(seed: int = 1) -> tuple[torch.Tensor, ...]:
    queries, docs = random_pairs([(3, 12), (2, 7), (4, 20)], seed=seed)
    return (*pad(queries), *pad(docs))


def test_with_every_gate_at_one_it_scores_as_tk_bert(bert_folder: Path) -> None:
    torch.manual_seed(0)
    sparse = TKBertSparse(bert_folder, 2).eval()
    torch.nn.init.zeros_(sparse.gate_out.weight)
    plain = TKBert(bert_folder, 2).eval()
    plain.load_state_dict({key: value for key, value in sparse.state_dict().items() if key in plain.state_dict()})
    with torch.no_grad():
        torch.testing.assert_close(sparse(*batch()), plain(*batch()), atol=1e-5, rtol=1e-5)


def test_the_stored_index_keeps_only_kept_pieces_and_scores_as_forward(bert_folder: Path) -> None:
    torch.manual_seed(1)
    model = TKBertSparse(bert_folder, 2).eval()
    q_ids, q_mask, d_ids, d_mask = batch()
    with torch.no_grad():
        model.gate_out.bias.fill_(0.0)  # about half the gates at 0
        full = model(q_ids, q_mask, d_ids, d_mask)
        stored, kept = model.encode_passages(d_ids, d_mask)
        _, gate = model.gates(d_ids, d_mask)
        scores = torch.stack([model.score_encoded(q_ids[i : i + 1], q_mask[i : i + 1], stored[i : i + 1],
                                                  kept[i : i + 1])[0] for i in range(3)])  # fmt: skip
    torch.testing.assert_close(full, scores, atol=1e-5, rtol=1e-5)
    assert torch.equal(kept, gate > 0) and 0 < int(kept.sum()) < int(d_mask.bool().sum())
    torch.testing.assert_close(stored.norm(dim=-1), gate, atol=1e-5, rtol=1e-5)
    assert model.stored_weights and not model.scores_from_match


def test_the_gate_trains_in_its_own_group_and_its_penalty_ramps_in(bert_folder: Path) -> None:
    model = TKBertSparse(bert_folder, 2, sparsity_weight=2.0, ramp_steps=4)
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
    _, gate_values = model.gates(d_ids, d_mask)
    expected = 2.0 / 4 * torch.relu(gate_values)[d_mask.bool()].mean()
    torch.testing.assert_close(regularisation(model), expected, atol=1e-5, rtol=1e-5)
    assert (BERT_SPARSITY_WEIGHT, BERT_RAMP_STEPS) == (SPARSITY_WEIGHT, 120)
    with pytest.raises(ValueError, match="'sparsity_weight' must be >= 0"):
        TKBertSparse(bert_folder, 1, sparsity_weight=-1.0)
