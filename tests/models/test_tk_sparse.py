"""TK-Sparse (``lib.models.tk_sparse``): the gate removes terms from the kernels, the L1 penalty, stored passages."""

from __future__ import annotations

import pytest
import torch

from lib.models.kernels import kernel_mus, kernel_sigmas, kernel_sums
from lib.models.tk import TK, TKConfig
from lib.models.tk_sparse import SPARSITY_WEIGHT, TKSparse
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
    model = TKSparse(embeddings(), config=TINY, sparsity_weight=0.3).train()
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
    model = TKSparse(embeddings(), config=TINY, sparsity_weight=5.0).train()
    optimizer = torch.optim.Adam(model.optimizer_groups(1e-2, 1e-2))
    q_ids, q_mask, d_ids, d_mask = batch()
    _, start = model.gates(d_ids, d_mask)
    for _ in range(30):
        optimizer.zero_grad()
        model(q_ids, q_mask, d_ids, d_mask)
        model.regularisation().backward()
        optimizer.step()
    _, end = model.gates(d_ids, d_mask)
    assert end[d_mask].mean() < 0.5 * start[d_mask].mean()
