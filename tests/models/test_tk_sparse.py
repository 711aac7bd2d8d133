"""TK-Sparse (``lib.models.tk_sparse``): the gate removes terms from the kernels, a target share of them, learned
straight-through; stored passages."""

from __future__ import annotations

import pytest
import torch

from lib.models.kernels import kernel_mus, kernel_sigmas, kernel_sums
from lib.models.tk import TK, TKConfig
from lib.models.tk_sparse import (
    GATE_FORM,
    GATE_LR,
    MAX_REMOVED,
    REMOVAL_TARGET,
    SPARSITY_RAMP_STEPS,
    THRESHOLD_MOMENTUM,
    TKSparse,
    _StraightThroughGate,
    quantile_threshold,
)

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


def test_with_every_term_kept_tk_sparse_is_tk() -> None:
    """Before any training the running threshold is −∞: every term is kept, and TK-Sparse scores as TK."""
    torch.manual_seed(3)
    sparse = TKSparse(embeddings(), config=TINY).eval()
    tk = TK(embeddings(), config=TINY).eval()
    tk.load_state_dict({k: v for k, v in sparse.state_dict().items() if k in tk.state_dict()})
    with torch.no_grad():
        assert torch.allclose(sparse(*batch()), tk(*batch()), atol=1e-5)


def with_median_threshold(model: TKSparse, d_ids: torch.Tensor, d_mask: torch.Tensor) -> None:
    """Set the model's running threshold to the median score of the batch's real terms: about half are removed."""
    with torch.no_grad():
        _, scores = model._gate_inputs(d_ids, d_mask)
        model.threshold.fill_(float(scores[d_mask].median()))


def test_stored_passages_keep_only_kept_terms_and_tk_scores_them_as_forward() -> None:
    torch.manual_seed(1)
    model = TKSparse(embeddings(), config=TINY).eval()
    q_ids, q_mask, d_ids, d_mask = batch()
    with_median_threshold(model, d_ids, d_mask)
    with torch.no_grad():
        full = model(q_ids, q_mask, d_ids, d_mask)
        stored, kept = model.encode_passages(d_ids, d_mask)
        encoded = model.score_encoded(q_ids[:1], q_mask[:1], stored, kept)  # TK's own stored scoring
        _, gate = model.gates(d_ids, d_mask)
    assert torch.allclose(full, encoded, atol=1e-5)
    assert torch.equal(kept, gate > 0) and set(gate.unique().tolist()) == {0.0, 1.0}
    assert 0 < int(kept.sum()) < int(d_mask.sum())
    assert not torch.any(kept & ~d_mask)
    assert model.scores_from_match, "a product-quantised index scores it from its codes, as TK"


def test_training_removes_the_target_share_of_each_batch_whatever_the_scores_scale_and_the_threshold_follows() -> None:
    model = TKSparse(embeddings(), config=TINY, removal_target=0.4, ramp_steps=0).train()
    q_ids, q_mask, d_ids, d_mask = batch()
    real = int(d_mask.sum())
    removed = []
    for scale in (1.0, 10.0, -3.0):  # the quantile does not see the scores' scale (nor, with it, their sign's share)
        with torch.no_grad():
            model.gate_out.weight.mul_(scale)
        scores = model._gate_inputs(d_ids, d_mask)[1]
        threshold = quantile_threshold(scores, d_mask, 0.4)
        removed.append(int(((scores <= threshold) & d_mask).sum()))
    assert removed == [int(0.4 * real)] * 3
    assert not torch.isfinite(model.threshold), "no batch seen yet"
    model(q_ids, q_mask, d_ids, d_mask)
    first = model.threshold.clone()
    scores = model._gate_inputs(d_ids, d_mask)[1]
    assert first == quantile_threshold(scores, d_mask, 0.4), "the first batch's quantile is taken as it is"
    other = batch(seed=1)
    model(*other)
    batch_quantile = quantile_threshold(model._gate_inputs(other[2], other[3])[1], other[3], 0.4)
    assert torch.allclose(model.threshold, first + THRESHOLD_MOMENTUM * (batch_quantile - first))
    assert quantile_threshold(scores, d_mask, 0.0) == float("-inf")


def test_the_gate_is_0_or_1_forward_and_passes_a_smooth_gradient_to_kept_and_removed_terms() -> None:
    above = torch.tensor([-2.0, -0.1, 0.1, 3.0], requires_grad=True)
    gate = _StraightThroughGate.apply(above)
    assert gate.tolist() == [0.0, 0.0, 1.0, 1.0]
    gate.sum().backward()
    smooth = torch.sigmoid(above.detach())
    assert torch.allclose(above.grad, smooth * (1 - smooth)) and torch.all(above.grad > 0)
    scores, mask = torch.randn(2, 6, requires_grad=True), torch.ones(2, 6, dtype=torch.bool)
    gates = _StraightThroughGate.apply(scores - quantile_threshold(scores, mask, 0.5))
    (gates * torch.rand(2, 6)).sum().backward()
    assert abs(float(scores.grad.sum())) < 1e-6, "no gradient on a common shift of the scores (through τ)"
    torch.manual_seed(4)
    model = TKSparse(embeddings(), config=TINY, removal_target=0.5, ramp_steps=0).train()
    model(*batch()).sum().backward()
    assert model.gate_out.weight.grad.abs().sum() > 0, "the ranking reaches the gate's scores"


def test_the_target_rises_from_zero_over_the_ramp_and_a_resumed_model_continues_it() -> None:
    model = TKSparse(embeddings(), config=TINY, removal_target=0.4, ramp_steps=4).train()
    targets = []
    for _ in range(6):
        model(*batch())
        targets.append(model.current_target())
    assert targets == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.4, 0.4])
    resumed = TKSparse(embeddings(), config=TINY, removal_target=0.4, ramp_steps=4)
    resumed.load_state_dict(model.state_dict())
    assert int(resumed.steps_seen) == 6 and resumed.current_target() == 0.4
    assert resumed.threshold == model.threshold, "the running threshold is part of the checkpoint"
    with torch.no_grad():
        model.eval()(*batch())  # evaluation is no training step and leaves the threshold alone
    assert int(model.steps_seen) == 6 and model.threshold == resumed.threshold
    with pytest.raises(ValueError, match="ramp_steps"):
        TKSparse(embeddings(), ramp_steps=-1)
    for target in (-0.1, MAX_REMOVED):
        with pytest.raises(ValueError, match="removal_target"):
            TKSparse(embeddings(), removal_target=target)
    assert 0 < REMOVAL_TARGET < MAX_REMOVED


def test_the_gate_has_its_own_adam_group_at_its_own_rate() -> None:
    model = TKSparse(embeddings(), config=TINY)
    groups = {group["name"]: group for group in model.optimizer_groups()}
    gate = {id(param) for param in groups["gate"]["params"]}
    expected = [model.stop_alpha, *model.gate_hidden.parameters(), *model.gate_out.parameters()]
    assert gate == {id(param) for param in expected} and groups["gate"]["lr"] == GATE_LR == 1e-3
    others = [id(param) for name, group in groups.items() if name != "gate" for param in group["params"]]
    assert not gate & set(others)
    assert len(others) + len(gate) == len(list(model.parameters()))  # every parameter in exactly one group


def test_the_validation_record_gives_the_removed_share_and_refuses_an_unramped_or_collapsed_gate() -> None:
    from lib.representations.text import Vocabulary

    vocabulary = Vocabulary(["[PAD]", "[UNK]", *(f"w{i}" for i in range(198))])
    texts = ["w1 w2 w3 w4", "w5 w6"]
    model = TKSparse(embeddings(), config=TINY, ramp_steps=5).eval()
    with torch.no_grad():
        assert model.validation_records(vocabulary, texts, 200) == {"removed": 0.0, "eligible": False}, "ramp not over"
        model.steps_seen.fill_(5)
        assert model.validation_records(vocabulary, texts, 200) == {"removed": 0.0, "eligible": True}
        model.threshold.fill_(float("inf"))
        assert model.validation_records(vocabulary, texts, 200) == {"removed": 1.0, "eligible": False}
    assert MAX_REMOVED == 0.99


def test_the_ramp_takes_at_most_a_share_of_the_training_schedule() -> None:
    model = TKSparse(embeddings(), config=TINY)
    model.fit_schedule(1000)
    assert model.ramp_steps == SPARSITY_RAMP_STEPS == 300, "TK-2's schedule keeps the full ramp"
    model.fit_schedule(6)
    assert model.ramp_steps == 2, "a short schedule reaches its λ (and an eligible checkpoint) within 30 % of it"


def test_a_checkpoint_of_another_target_or_ramp_is_not_resumed() -> None:
    from lib.core.types import JudgedSet
    from lib.training.pairwise import TrainingConfig, training_fingerprint

    validation = JudgedSet("v", {"q": "x"}, {}, {"q": {"p": 1.0}})
    config = TrainingConfig(batch_size=2, max_steps=4, validate_every=2, device="cpu")
    prints = [
        training_fingerprint(
            TKSparse(embeddings(), config=TINY, removal_target=w, ramp_steps=r),
            [("q", "p", "n")],
            validation,
            config,
            None,
        )  # fmt: skip
        for w, r in ((0.1, 3), (0.2, 3), (0.1, 4), (0.1, 3))
    ]
    assert prints[0] != prints[1] and prints[0] != prints[2] and prints[0] == prints[3]
    assert prints[0]["model_settings"] == {"removal_target": 0.1, "ramp_steps": 3, "gate": GATE_FORM}
