"""KNRM: the exact-match kernel, padding and batch invariance, optimizer groups, autocast."""

from __future__ import annotations

import math

import pytest
import torch

from lib.models import knrm
from lib.models.knrm import KNRM
from tests.models.helpers import pad, random_pairs

VOCAB, DIM = 40, 16
LENGTHS = [(3, 7), (1, 12), (5, 2)]


def embeddings(vocab: int = VOCAB, dim: int = DIM, seed: int = 0) -> torch.Tensor:
    matrix = torch.randn(vocab, dim, generator=torch.Generator().manual_seed(seed))
    matrix[0] = 0.0
    return matrix


def make_model(seed: int = 0, **settings) -> KNRM:
    torch.manual_seed(seed)
    return KNRM(embeddings(), **settings).eval()


def test_exact_match_kernel_counts_exact_matches() -> None:
    """Query [5], document [5, 6]: the μ = 1, σ = 0.001 kernel sees exactly one match (soft-TF 1)."""
    model = make_model()
    with torch.no_grad():
        features = model.features(*pad([[5]]), *pad([[5, 6]]))
        no_match = model.features(*pad([[5]]), *pad([[6, 7]]))
    assert features.shape == (1, 11)
    assert features[0, 0].item() == pytest.approx(0.01 * math.log(1.0), abs=1e-5)  # 0.01 · ln(1) = 0
    assert no_match[0, 0].item() == pytest.approx(0.01 * math.log(1e-10), abs=1e-4)  # the clamp
    assert (model.kernel_pooling.sigmas[1:] == 0.1).all()
    assert model.kernel_pooling.sigmas[0].item() == pytest.approx(0.001)


@pytest.mark.parametrize("settings", [{}, {"bias": False, "use_tanh": False}])
def test_padding_invariance(settings: dict) -> None:
    model = make_model(**settings)
    queries, docs = random_pairs(LENGTHS)
    with torch.no_grad():
        tight = model(*pad(queries), *pad(docs))
        for lq, ld in [(9, None), (None, 20), (12, 60)]:
            assert torch.allclose(model(*pad(queries, lq), *pad(docs, ld)), tight, atol=1e-5)


def test_batch_invariance() -> None:
    model = make_model(use_tanh=False)
    queries, docs = random_pairs(LENGTHS)
    with torch.no_grad():
        batch = model(*pad(queries), *pad(docs))
        alone = torch.cat([model(*pad([q]), *pad([d])) for q, d in zip(queries, docs, strict=True)])
    assert batch.shape == (3,) and batch.dtype == torch.float32
    assert torch.allclose(batch, alone, atol=1e-5)


@pytest.mark.parametrize("freeze", [False, True])
def test_optimizer_groups_cover_every_parameter_once(freeze: bool) -> None:
    model = KNRM(embeddings(), freeze_embeddings=freeze)
    groups = model.optimizer_groups()
    assert [group["name"] for group in groups] == (["other"] if freeze else ["embeddings", "other"])
    grouped = [id(param) for group in groups for param in group["params"]]
    trainable = [id(param) for param in model.parameters() if param.requires_grad]
    assert len(grouped) == len(set(grouped)) and set(grouped) == set(trainable)
    lrs = {group["name"]: group["lr"] for group in groups}
    assert lrs["other"] == knrm.OTHER_LR == 1e-3 and lrs.get("embeddings", 1e-4) == knrm.EMBEDDING_LR == 1e-4
    custom = model.optimizer_groups(embedding_lr=0.5, other_lr=0.25)
    assert {group["name"]: group["lr"] for group in custom}["other"] == 0.25


def test_gradients_flow() -> None:
    model = make_model().train()
    queries, docs = random_pairs(LENGTHS)
    model(*pad(queries), *pad(docs)).sum().backward()
    assert model.dense.weight.grad.abs().sum() > 0 and model.embedding.weight.grad.abs().sum() > 0


def test_device_and_cpu_autocast() -> None:
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = make_model().to(device)
    queries, docs = random_pairs(LENGTHS)
    inputs = [tensor.to(device) for tensor in (*pad(queries), *pad(docs))]
    with torch.no_grad():
        full = model(*inputs)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            mixed = model(*inputs)
    assert mixed.device.type == device.type and mixed.dtype == torch.float32
    assert torch.isfinite(mixed).all() and torch.allclose(mixed, full, atol=1e-4)  # KNRM is all float32
