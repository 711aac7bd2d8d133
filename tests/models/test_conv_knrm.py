"""Conv-KNRM: n-gram masks, cross-matching, padding and batch invariance, optimizer groups, autocast."""

from __future__ import annotations

import pytest
import torch

from lib.models import tk
from lib.models.conv_knrm import ConvKNRM, ConvKNRMConfig, ngram_mask
from tests.models.helpers import pad, random_pairs

VOCAB, DIM, FILTERS = 40, 16, 8
LENGTHS = [(3, 7), (1, 12), (5, 2)]


def embeddings(vocab: int = VOCAB, dim: int = DIM, seed: int = 0) -> torch.Tensor:
    matrix = torch.randn(vocab, dim, generator=torch.Generator().manual_seed(seed))
    matrix[0] = 0.0
    return matrix


def make_model(seed: int = 0, **settings) -> ConvKNRM:
    torch.manual_seed(seed)
    return ConvKNRM(embeddings(), config=ConvKNRMConfig(**{"n_filters": FILTERS, **settings})).eval()


def test_ngram_masks() -> None:
    mask = torch.tensor([[True, True, True, False, False], [True, False, False, False, False]])
    assert ngram_mask(mask, 1).tolist() == mask.tolist()
    assert ngram_mask(mask, 2).tolist() == [[True, True, False, False, False], [False] * 5]
    assert ngram_mask(mask, 3).tolist() == [[True, False, False, False, False], [False] * 5]
    assert ngram_mask(mask, 3, "start").tolist() == mask.tolist()
    full = torch.ones(1, 3, dtype=torch.bool)  # no padding at all: the last n-grams are incomplete
    assert ngram_mask(full, 2).tolist() == [[True, True, False]]


def test_cross_matching_features() -> None:
    model = make_model()
    queries, docs = random_pairs(LENGTHS)
    with torch.no_grad():
        features = model.features(*pad(queries), *pad(docs))
    assert model.pairs == [(q, d) for q in range(3) for d in range(3)]
    assert features.shape == (3, 9 * 11) and model.dense.in_features == 99
    # the one-token query (row 1) has no bigrams or trigrams: its (2, ·) and (3, ·) matrices give 0
    assert (features[1, 3 * 11 :] == 0).all() and (features[1, : 3 * 11] != 0).any()
    same_size = make_model(cross_match=False)
    assert same_size.pairs == [(0, 0), (1, 1), (2, 2)] and same_size.dense.in_features == 33
    assert [conv.kernel_size[0] for conv in model.convs] == [1, 2, 3]


@pytest.mark.parametrize("settings", [{}, {"ngram_mask": "start"}, {"cross_match": False, "use_tanh": False}])
def test_padding_invariance(settings: dict) -> None:
    model = make_model(**settings)
    queries, docs = random_pairs(LENGTHS)
    with torch.no_grad():
        tight = model(*pad(queries), *pad(docs))
        for lq, ld in [(9, None), (None, 20), (12, 60)]:
            assert torch.allclose(model(*pad(queries, lq), *pad(docs, ld)), tight, atol=1e-5)


@pytest.mark.parametrize("mode", ["complete", "start"])
def test_batch_invariance(mode: str) -> None:
    model = make_model(ngram_mask=mode, use_tanh=False)
    queries, docs = random_pairs(LENGTHS)
    with torch.no_grad():
        batch = model(*pad(queries), *pad(docs))
        alone = torch.cat([model(*pad([q]), *pad([d])) for q, d in zip(queries, docs, strict=True)])
    assert batch.shape == (3,) and batch.dtype == torch.float32
    assert torch.allclose(batch, alone, atol=1e-5)


@pytest.mark.parametrize("freeze", [False, True])
def test_optimizer_groups_cover_every_parameter_once(freeze: bool) -> None:
    model = ConvKNRM(embeddings(), freeze_embeddings=freeze, config=ConvKNRMConfig(n_filters=FILTERS))
    groups = model.optimizer_groups()
    assert [group["name"] for group in groups] == (["other"] if freeze else ["embeddings", "other"])
    grouped = [id(param) for group in groups for param in group["params"]]
    trainable = [id(param) for param in model.parameters() if param.requires_grad]
    assert len(grouped) == len(set(grouped)) and set(grouped) == set(trainable)
    lrs = {group["name"]: group["lr"] for group in groups}
    assert lrs["other"] == tk.OTHER_LR == 1e-3
    assert lrs.get("embeddings", 1e-4) == tk.EMBEDDING_LR == 1e-4
    custom = model.optimizer_groups(embedding_lr=0.5, other_lr=0.25)
    assert {group["name"]: group["lr"] for group in custom}["other"] == 0.25


def test_gradients_flow() -> None:
    model = make_model().train()
    queries, docs = random_pairs(LENGTHS)
    model(*pad(queries), *pad(docs)).sum().backward()
    assert all(conv.weight.grad.abs().sum() > 0 for conv in model.convs)
    assert model.embedding.weight.grad.abs().sum() > 0


def test_paper_sizes_run() -> None:
    torch.manual_seed(0)
    model = ConvKNRM(embeddings(dim=300)).eval()
    assert model.convs[0].out_channels == 128
    queries, docs = random_pairs(LENGTHS)
    with torch.no_grad():
        assert torch.isfinite(model(*pad(queries), *pad(docs))).all()


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
    assert torch.isfinite(mixed).all() and torch.allclose(mixed, full, atol=0.1)  # the convolutions ran in bfloat16
