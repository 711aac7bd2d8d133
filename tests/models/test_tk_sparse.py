"""TK-Sparse (``lib.models.tk_sparse``): the gate removes terms from the kernels, the L1 penalty, stored passages."""

from __future__ import annotations

import pytest
import torch

from lib.models.kernels import kernel_mus, kernel_sigmas, kernel_sums
from lib.models.tk import TK, TKConfig
from lib.models.tk_sparse import GATE_LR, MAX_REMOVED, SPARSITY_RAMP_STEPS, SPARSITY_WEIGHT, TKSparse
from lib.training.pairwise import regularisation

pytestmark = pytest.mark.usefixtures("one_torch_thread")

#: A one-layer TK small enough for these tests.
TINY = TKConfig(num_layers=1, num_heads=2, head_dim=8, ff_dim=8)


def embeddings() -> torch.Tensor:
    torch.manual_seed(0)
    return torch.randn(200, 16)


def batch(seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    q_ids = torch.randint(2, 200, (1, 4), generator=generator).expand(3, -1).clone()
    d_ids = torch.randint(2, 200, (3, 12), generator=generator)
    d_mask = torch.ones(3, 12, dtype=torch.bool)
    d_mask[1, 8:] = False
    d_ids[~d_mask] = 0
    return q_ids, torch.ones(3, 4, dtype=torch.bool), d_ids, d_mask


def test_a_weight_of_zero_removes_a_term_from_the_kernel_sums() -> None:
    match = torch.rand(1, 2, 3) * 2 - 1
    q_mask, d_mask = torch.ones(1, 2, dtype=torch.bool), torch.ones(1, 3, dtype=torch.bool)
    mus, sigmas = torch.tensor(kernel_mus()), torch.tensor(kernel_sigmas())
    weighted = kernel_sums(match, q_mask, d_mask, mus, sigmas, doc_weights=torch.tensor([[1.0, 0.0, 1.0]]))
    without = kernel_sums(match[:, :, [0, 2]], q_mask, d_mask[:, :2], mus, sigmas)
    assert torch.allclose(weighted, without, atol=1e-6)


def test_with_every_gate_at_one_tk_sparse_is_tk() -> None:
    """The gate starts at b₂ = 1; with the hidden layer's output zeroed every gate is exactly 1."""
    torch.manual_seed(3)
    sparse = TKSparse(embeddings(), config=TINY).eval()
    torch.nn.init.zeros_(sparse.gate_out.weight)
    tk = TK(embeddings(), config=TINY).eval()
    tk.load_state_dict({k: v for k, v in sparse.state_dict().items() if k in tk.state_dict()})
    with torch.no_grad():
        assert torch.allclose(sparse(*batch()), tk(*batch()), atol=1e-5)


def test_stored_passages_keep_only_gated_terms_and_score_as_forward() -> None:
    torch.manual_seed(1)
    model = TKSparse(embeddings(), config=TINY).eval()
    with torch.no_grad():
        model.gate_out.bias.fill_(-0.2)  # some gates at 0
        q_ids, q_mask, d_ids, d_mask = batch()
        full = model(q_ids, q_mask, d_ids, d_mask)
        stored, kept = model.encode_passages(d_ids, d_mask)
        encoded = model.score_encoded(q_ids[:1], q_mask[:1], stored, kept)
        _, gate = model.gates(d_ids, d_mask)
    assert torch.allclose(full, encoded, atol=1e-5)
    assert torch.equal(kept, gate > 0)
    assert 0 < int(kept.sum()) < int(d_mask.sum())
    assert not torch.any(kept & ~d_mask)
    assert TK.scores_from_match and not model.scores_from_match, "a stored vector's length (its gate) is read too"


def test_the_l1_penalty_is_the_mean_gate_over_real_terms_and_is_added_to_the_loss() -> None:
    model = TKSparse(embeddings(), config=TINY, sparsity_weight=0.3, ramp_steps=0).train()
    q_ids, q_mask, d_ids, d_mask = batch()
    model(q_ids, q_mask, d_ids, d_mask)
    _, gate = model.gates(d_ids, d_mask)
    expected = 0.3 * gate[d_mask].mean()
    assert torch.allclose(regularisation(model), expected, atol=1e-6)
    assert regularisation(TK(embeddings(), config=TKConfig(num_layers=1))) == 0.0
    with pytest.raises(RuntimeError, match="forward pass"):
        model.regularisation()  # consumed by the first call
    with pytest.raises(ValueError, match="sparsity_weight"):
        TKSparse(embeddings(), sparsity_weight=-1.0)
    assert SPARSITY_WEIGHT > 0


def test_the_penalty_drives_gates_down() -> None:
    torch.manual_seed(2)
    model = TKSparse(embeddings(), config=TINY, sparsity_weight=5.0, ramp_steps=0).train()
    optimizer = torch.optim.Adam(model.optimizer_groups(1e-2, 1e-2, 1e-2))
    q_ids, q_mask, d_ids, d_mask = batch()
    _, start = model.gates(d_ids, d_mask)
    for _ in range(30):
        optimizer.zero_grad()
        model(q_ids, q_mask, d_ids, d_mask)
        model.regularisation().backward()
        optimizer.step()
    _, end = model.gates(d_ids, d_mask)
    assert end[d_mask].mean() < 0.5 * start[d_mask].mean()


def test_lambda_rises_from_zero_over_the_ramp_and_a_resumed_model_continues_it() -> None:
    model = TKSparse(embeddings(), config=TINY, sparsity_weight=2.0, ramp_steps=4).train()
    weights = []
    for _ in range(6):
        model(*batch())
        weights.append(model.current_weight())
        model.regularisation()
    assert weights == [0.5, 1.0, 1.5, 2.0, 2.0, 2.0]
    resumed = TKSparse(embeddings(), config=TINY, sparsity_weight=2.0, ramp_steps=4)
    resumed.load_state_dict(model.state_dict())
    assert int(resumed.steps_seen) == 6 and resumed.current_weight() == 2.0
    with torch.no_grad():
        model.eval()(*batch())  # evaluation is no training step
    assert int(model.steps_seen) == 6
    with pytest.raises(ValueError, match="ramp_steps"):
        TKSparse(embeddings(), ramp_steps=-1)


def test_the_gate_has_its_own_adam_group_at_its_own_rate() -> None:
    model = TKSparse(embeddings(), config=TINY)
    groups = {group["name"]: group for group in model.optimizer_groups()}
    gate = {id(param) for param in groups["gate"]["params"]}
    expected = [model.stop_alpha, *model.gate_hidden.parameters(), *model.gate_out.parameters()]
    assert gate == {id(param) for param in expected} and groups["gate"]["lr"] == GATE_LR == 1e-3
    others = [id(param) for name, group in groups.items() if name != "gate" for param in group["params"]]
    assert not gate & set(others)
    assert len(others) + len(gate) == len(list(model.parameters()))  # every parameter in exactly one group


def test_a_gate_at_zero_still_learns_from_the_ranking_but_the_penalty_never_pushes_it_down() -> None:
    torch.manual_seed(4)
    model = TKSparse(embeddings(), config=TINY, ramp_steps=0).train()
    with torch.no_grad():
        model.gate_out.bias.fill_(-5.0)  # every gate dead
    q_ids, q_mask, d_ids, d_mask = batch()
    model(q_ids, q_mask, d_ids, d_mask).sum().backward()
    ranking = model.gate_out.bias.grad.clone()
    assert ranking.abs().item() > 0  # a plain ReLU would give exactly 0: the gate could never come back
    model.zero_grad()
    model(q_ids, q_mask, d_ids, d_mask)
    model.regularisation().backward()
    assert model.gate_out.bias.grad.abs().item() == 0.0  # the L1 on the true ReLU output
    with torch.no_grad():
        scores = model.eval()(q_ids, q_mask, d_ids, d_mask)
    empty = TKSparse(embeddings(), config=TINY).eval()
    empty.load_state_dict(model.state_dict())
    assert torch.allclose(scores, empty(q_ids, q_mask, d_ids, d_mask))  # scoring: a dead gate still removes


def test_the_validation_record_gives_the_removed_share_and_refuses_an_unramped_or_collapsed_gate() -> None:
    from lib.representations.text import Vocabulary

    vocabulary = Vocabulary(["[PAD]", "[UNK]", *(f"w{i}" for i in range(198))])
    texts = ["w1 w2 w3 w4", "w5 w6"]
    model = TKSparse(embeddings(), config=TINY, ramp_steps=5).eval()
    with torch.no_grad():
        model.gate_out.weight.zero_()
        assert model.validation_records(vocabulary, texts, 200) == {"removed": 0.0, "eligible": False}, "ramp not over"
        model.steps_seen.fill_(5)
        assert model.validation_records(vocabulary, texts, 200) == {"removed": 0.0, "eligible": True}
        model.gate_out.bias.fill_(-1.0)
        assert model.validation_records(vocabulary, texts, 200) == {"removed": 1.0, "eligible": False}
    assert MAX_REMOVED == 0.99


def test_the_ramp_takes_at_most_a_share_of_the_training_schedule() -> None:
    model = TKSparse(embeddings(), config=TINY)
    model.fit_schedule(1000)
    assert model.ramp_steps == SPARSITY_RAMP_STEPS == 300, "TK-2's schedule keeps the full ramp"
    model.fit_schedule(6)
    assert model.ramp_steps == 2, "a short schedule reaches its λ (and an eligible checkpoint) within 30 % of it"


def test_a_checkpoint_of_another_lambda_or_ramp_is_not_resumed() -> None:
    from lib.core.types import JudgedSet
    from lib.training.pairwise import TrainingConfig, training_fingerprint

    validation = JudgedSet("v", {"q": "x"}, {}, {"q": {"p": 1.0}})
    config = TrainingConfig(batch_size=2, max_steps=4, validate_every=2, device="cpu")
    prints = [
        training_fingerprint(
            TKSparse(embeddings(), config=TINY, sparsity_weight=w, ramp_steps=r),
            [("q", "p", "n")],
            validation,
            config,
            None,
        )  # fmt: skip
        for w, r in ((1.0, 3), (2.0, 3), (1.0, 4), (1.0, 3))
    ]
    assert prints[0] != prints[1] and prints[0] != prints[2] and prints[0] == prints[3]
    assert prints[0]["model_settings"] == {"sparsity_weight": 1.0, "ramp_steps": 3}
