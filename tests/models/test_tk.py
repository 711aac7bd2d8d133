"""TK (eq. 1–10): padding and batch invariance, the exact score decomposition, gradients, optimizer groups."""

from __future__ import annotations

import pytest
import torch

from lib.models import kernels, tk
from lib.models.tk import TK, TKConfig, sinusoidal_encoding
from tests.models.helpers import pad, random_pairs

VOCAB, DIM = 40, 16
#: Tiny Transformer settings for fast tests (the paper's 16 heads × 32 and FF 100 are the defaults).
TINY = {"num_heads": 2, "head_dim": 4, "ff_dim": 8}


def embeddings(vocab: int = VOCAB, dim: int = DIM, seed: int = 0) -> torch.Tensor:
    matrix = torch.randn(vocab, dim, generator=torch.Generator().manual_seed(seed))
    matrix[0] = 0.0
    return matrix


def make_model(seed: int = 0, **settings) -> TK:
    torch.manual_seed(seed)
    return TK(embeddings(dim=settings.pop("dim", DIM)), config=TKConfig(**{**TINY, **settings})).eval()


LENGTHS = [(3, 7), (1, 12), (5, 2)]

VARIANTS = [
    {},
    {"num_layers": 1},
    {"num_layers": 3},
    {"block_order": "attention_first"},
    {"norm": "pre"},
    {"norm": "none", "ff_residual": False},
    {"length_plus_one": True, "feature_scaler": True},
]


@pytest.mark.parametrize("settings", VARIANTS)
def test_padding_invariance(settings: dict) -> None:
    model = make_model(**settings)
    queries, docs = random_pairs(LENGTHS)
    with torch.no_grad():
        tight = model(*pad(queries), *pad(docs))
        more_query = model(*pad(queries, 9), *pad(docs))
        more_doc = model(*pad(queries), *pad(docs, 20))
        both = model(*pad(queries, 12), *pad(docs, 60))
    for scores in (more_query, more_doc, both):
        assert torch.allclose(scores, tight, atol=1e-5)


def test_padding_ids_and_position_of_padding_do_not_matter() -> None:
    """Garbage ids under the mask and left padding (positions count real tokens) leave scores unchanged."""
    model = make_model()
    queries, docs = random_pairs(LENGTHS)
    (q_ids, q_mask), (d_ids, d_mask) = pad(queries, 6), pad(docs, 14)
    with torch.no_grad():
        tight = model(q_ids, q_mask, d_ids, d_mask)
        garbage_q, garbage_d = q_ids.masked_fill(~q_mask, 7), d_ids.masked_fill(~d_mask, 9)
        assert torch.allclose(model(garbage_q, q_mask, garbage_d, d_mask), tight, atol=1e-5)
        left_ids = torch.stack([row.roll(int((~mask).sum())) for row, mask in zip(q_ids, q_mask, strict=True)])
        left_mask = torch.stack([mask.roll(int((~mask).sum())) for mask in q_mask])  # padding on the left
        assert left_mask[0].tolist() == [False, False, False, True, True, True]
        assert torch.allclose(model(left_ids, left_mask, d_ids, d_mask), tight, atol=1e-5)


@pytest.mark.parametrize("settings", [{}, {"num_layers": 3, "norm": "pre"}])
def test_batch_invariance(settings: dict) -> None:
    model = make_model(**settings)
    queries, docs = random_pairs(LENGTHS)
    with torch.no_grad():
        batch = model(*pad(queries), *pad(docs))
        alone = torch.cat([model(*pad([q]), *pad([d])) for q, d in zip(queries, docs, strict=True)])
    assert batch.shape == (3,) and batch.dtype == torch.float32
    assert torch.allclose(batch, alone, atol=1e-5)


@pytest.mark.parametrize("num_layers", [1, 2, 3])
def test_paper_sizes_run(num_layers: int) -> None:
    """The paper's settings: 300-d, 16 heads of 32, FF 100, 1–3 layers."""
    torch.manual_seed(0)
    model = TK(embeddings(dim=300), config=TKConfig(num_layers=num_layers)).eval()
    assert len(model.contextualiser.layers) == num_layers
    attention = model.contextualiser.layers[0].attention
    assert attention.qkv.weight.shape == (3 * 16 * 32, 300) and attention.out.weight.shape == (300, 512)
    assert model.contextualiser.layers[0].ff[0].weight.shape == (100, 300)
    queries, docs = random_pairs(LENGTHS)
    with torch.no_grad():
        scores = model(*pad(queries), *pad(docs))
    assert scores.shape == (3,) and torch.isfinite(scores).all()


def test_explanation_shapes_and_exact_decomposition() -> None:
    model = make_model(feature_scaler=True)
    with torch.no_grad():  # non-default learned scalars, so every weight shows in the decomposition
        model.beta.fill_(0.7)
        model.gamma.fill_(-1.3)
        model.scaler.fill_(0.2)
    queries, docs = random_pairs(LENGTHS)
    (q_ids, q_mask), (d_ids, d_mask) = pad(queries), pad(docs)
    batch, lq, ld, k = 3, q_ids.shape[1], d_ids.shape[1], 11
    with torch.no_grad():
        parts = model.explain(q_ids, q_mask, d_ids, d_mask)
        scores = model(q_ids, q_mask, d_ids, d_mask)

    assert parts.query_vectors.shape == parts.query_embeddings.shape == (batch, lq, DIM)
    assert parts.doc_vectors.shape == parts.doc_embeddings.shape == (batch, ld, DIM)
    assert parts.match.shape == (batch, lq, ld)
    assert parts.kernel_sums.shape == (batch, lq, k)
    for name in ("s_log_k", "s_len_k", "log_terms", "len_terms"):
        assert getattr(parts, name).shape == (batch, k), name
    for name in ("s_log", "s_len", "s"):
        assert getattr(parts, name).shape == (batch,), name
    assert parts.mus.tolist() == pytest.approx(kernels.kernel_mus()) and (parts.sigmas == 0.1).all()

    # padded positions are zero vectors
    assert (parts.query_vectors[~q_mask] == 0).all() and (parts.doc_vectors[~d_mask] == 0).all()
    # eq. 10 and the per-kernel decomposition
    assert torch.equal(parts.s, scores)
    assert torch.allclose(parts.log_terms.sum(-1) + parts.len_terms.sum(-1), parts.s, atol=1e-5)
    assert torch.allclose(parts.beta * parts.s_log + parts.gamma * parts.s_len, parts.s, atol=1e-6)
    # eq. 9 with the learned weights
    w_log, w_len = model.w_log.weight[0], model.w_len.weight[0]
    assert torch.allclose(parts.log_terms, 0.7 * 0.2 * w_log * parts.s_log_k, atol=1e-6)
    assert torch.allclose(parts.len_terms, -1.3 * 0.2 * w_len * parts.s_len_k, atol=1e-6)
    assert torch.allclose(parts.s_log, 0.2 * (parts.s_log_k * w_log).sum(-1), atol=1e-5)
    # eq. 4–8 from the exposed vectors
    match = kernels.cosine_match_matrix(parts.query_vectors, parts.doc_vectors, q_mask, d_mask)
    assert torch.allclose(parts.match, match)
    sums = kernels.kernel_sums(match, q_mask, d_mask, parts.mus, parts.sigmas)
    assert torch.allclose(parts.kernel_sums, sums)
    assert torch.allclose(parts.s_log_k, kernels.log_normalise(sums, q_mask, base=2.0))
    assert torch.allclose(parts.s_len_k, kernels.length_normalise(sums, q_mask, d_mask))
    # eq. 1: the hybrid of the plain embedding (no positional encoding) and its context
    context = model.contextualiser(parts.query_embeddings, q_mask)
    mixed = (parts.alpha * parts.query_embeddings + (1 - parts.alpha) * context) * q_mask.unsqueeze(-1)
    assert torch.allclose(parts.query_vectors, mixed, atol=1e-6)
    assert torch.allclose(model.contextualise(q_ids, q_mask), parts.query_vectors)


@pytest.mark.parametrize("settings", VARIANTS)
def test_forward_shares_each_distinct_query_and_equals_explain(settings: dict) -> None:
    """A re-ranking batch: two queries, their rows interleaved; forward (one pass per distinct query) == explain."""
    model = make_model(**settings)
    queries, docs = random_pairs([(3, 7), (5, 2), (3, 11), (4, 6), (5, 9), (3, 1)])
    queries = [queries[0], queries[1], queries[0], queries[1], queries[1], queries[0]]
    q_ids, q_mask = pad(queries, 6)
    distinct_ids, distinct_mask, rows = tk.distinct_queries(q_ids, q_mask)
    assert distinct_ids.shape[0] == 2
    assert torch.equal(distinct_ids[rows], q_ids) and torch.equal(distinct_mask[rows], q_mask.bool())
    with torch.no_grad():
        fast = model(q_ids, q_mask, *pad(docs))
        reference = model.explain(q_ids, q_mask, *pad(docs)).s
    assert torch.allclose(fast, reference, rtol=1e-5, atol=1e-6)


def test_position_table_equals_the_sinusoids_and_longer_inputs_compute_theirs() -> None:
    model = make_model()
    table = model.contextualiser.position_table
    assert table.shape == (tk.POSITION_TABLE, DIM)
    assert "contextualiser.position_table" not in model.state_dict()  # checkpoints stay as they were
    assert torch.equal(table, sinusoidal_encoding(torch.arange(tk.POSITION_TABLE)[None, :], DIM)[0])
    queries, docs = random_pairs([(3, 7)])
    long_ids = torch.randint(1, VOCAB, (1, tk.POSITION_TABLE + 5))
    long_mask = torch.ones_like(long_ids, dtype=torch.bool)
    with torch.no_grad():
        assert torch.isfinite(model(*pad(queries), long_ids, long_mask)).all()


def test_mixer_input_has_no_positional_encoding() -> None:
    """With α = 1, t̂ is exactly the word embedding (eq. 1): positions enter only the Transformer."""
    model = make_model(alpha_init=1.0)
    queries, _ = random_pairs(LENGTHS)
    ids, mask = pad(queries)
    with torch.no_grad():
        assert torch.equal(model.contextualise(ids, mask), model.embedding(ids) * mask.unsqueeze(-1))
    # and with the default α = 0.5, word order matters through the positional encoding
    model = make_model()
    ids = torch.tensor([[3, 5, 7, 11]])
    mask = torch.ones_like(ids, dtype=torch.bool)
    with torch.no_grad():
        forward, backward = model.contextualise(ids, mask), model.contextualise(ids.flip(-1), mask)
    assert not torch.allclose(forward, backward.flip(1), atol=1e-4)


def test_sinusoidal_encoding() -> None:
    encoding = sinusoidal_encoding(torch.tensor([[0, 1, 2]]), 6)
    assert encoding.shape == (1, 3, 6)
    assert encoding[0, 0].tolist() == pytest.approx([0, 1, 0, 1, 0, 1])
    assert encoding[0, 1, 0].item() == pytest.approx(torch.sin(torch.tensor(1.0)).item())
    assert encoding[0, 2, 3].item() == pytest.approx(torch.cos(torch.tensor(2.0 / 10000 ** (2 / 6))).item())
    assert sinusoidal_encoding(torch.tensor([[4]]), 5).shape == (1, 1, 5)


def test_gradients_reach_alpha_and_the_scalars() -> None:
    model = make_model().train()
    queries, docs = random_pairs(LENGTHS)
    model(*pad(queries), *pad(docs)).sum().backward()
    for name in ("alpha", "beta", "gamma"):
        grad = getattr(model, name).grad
        assert grad is not None and grad.abs().item() > 0, name
    assert model.w_log.weight.grad.abs().sum() > 0 and model.w_len.weight.grad.abs().sum() > 0
    assert model.contextualiser.layers[0].attention.qkv.weight.grad.abs().sum() > 0
    assert (model.embedding.weight.grad[0] == 0).all()  # the padding row stays zero


@pytest.mark.parametrize("freeze", [False, True])
def test_optimizer_groups_cover_every_parameter_once(freeze: bool) -> None:
    model = TK(embeddings(), freeze_embeddings=freeze, config=TKConfig(feature_scaler=True, **TINY))
    groups = model.optimizer_groups()
    names = [group["name"] for group in groups]
    expected = ["contextualisation", "other"] if freeze else ["embeddings", "contextualisation", "other"]
    assert names == expected
    grouped = [id(param) for group in groups for param in group["params"]]
    trainable = [id(param) for param in model.parameters() if param.requires_grad]
    assert len(grouped) == len(set(grouped)) and set(grouped) == set(trainable)
    lrs = {group["name"]: group["lr"] for group in groups}
    assert lrs["contextualisation"] == 1e-4 and lrs["other"] == 1e-3
    assert lrs.get("embeddings", 1e-4) == 1e-4
    assert tk.EMBEDDING_LR == 1e-4 and tk.OTHER_LR == 1e-3
    other = {id(param) for param in next(g for g in groups if g["name"] == "other")["params"]}
    assert {id(model.alpha), id(model.beta), id(model.gamma), id(model.w_log.weight)} <= other
    assert model.embedding.weight.requires_grad is not freeze

    custom = {group["name"]: group["lr"] for group in model.optimizer_groups(embedding_lr=0.5, other_lr=0.25)}
    assert custom["contextualisation"] == 0.5 and custom["other"] == 0.25
    torch.optim.Adam(groups)  # torch accepts the groups as they are


def test_embeddings_are_copied() -> None:
    matrix = embeddings()
    model = TK(matrix, config=TKConfig(**TINY))
    with torch.no_grad():
        model.embedding.weight.add_(1.0)
    assert (matrix[0] == 0).all()
    with pytest.raises(ValueError):
        TK(torch.zeros(3), config=TKConfig(**TINY))


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
    assert torch.isfinite(mixed).all()
    assert torch.allclose(mixed, full, atol=0.5)  # loose: the Transformer ran in bfloat16


def test_take_rows_is_indexing_with_a_gradient_that_is_the_same_every_time() -> None:
    generator = torch.Generator().manual_seed(0)
    values = torch.randn(64, 30, 128, generator=generator)
    rows = torch.randint(0, 64, (512,), generator=generator)  # every row taken 8 times on average
    weights = torch.randn(512, 30, 128, generator=generator)

    def gradient() -> torch.Tensor:
        leaf = values.clone().requires_grad_()
        (tk.take_rows(leaf, rows) * weights).sum().backward()
        return leaf.grad

    assert torch.equal(tk.take_rows(values, rows), values[rows])
    first = gradient()
    assert torch.allclose(first, torch.zeros_like(values).index_add_(0, rows, weights), atol=1e-4)
    assert all(torch.equal(gradient(), first) for _ in range(20))  # advanced indexing's differed in most of 20


def test_a_training_step_of_a_batch_with_repeated_queries_is_the_same_every_time() -> None:
    """TK encodes each distinct query once and hands its vectors to every row (module doc): the gradient that flows
    back through the repeated rows must add up in one order, or a training run differs in every process."""
    generator = torch.Generator().manual_seed(1)
    model = make_model(dim=64, num_heads=4, head_dim=16, ff_dim=64).train()
    queries = [torch.randint(1, VOCAB, (length,), generator=generator).tolist() for length in (4, 9, 6, 12)]
    docs = [torch.randint(1, VOCAB, (length,), generator=generator).tolist() for length in range(20, 148)]
    batch_queries = [queries[i % len(queries)] for i in range(len(docs))]

    def gradients() -> list[torch.Tensor]:
        model.zero_grad(set_to_none=True)
        torch.manual_seed(0)  # the same dropout draws
        model(*pad(batch_queries), *pad(docs)).sum().backward()
        return [parameter.grad.clone() for parameter in model.parameters() if parameter.grad is not None]

    first = gradients()
    for _ in range(10):
        assert all(torch.equal(a, b) for a, b in zip(gradients(), first, strict=True))


@pytest.mark.parametrize("settings", [{}, {"length_plus_one": True, "feature_scaler": True}])
def test_scoring_the_real_cosines_alone_equals_scoring_the_stored_passages(settings: dict) -> None:
    """``score_rows`` (eq. 4's real columns only, no kernel for padding) gives ``score_stored``'s scores."""
    model = make_model(**settings)
    queries, docs = random_pairs([(4, 7), (4, 12), (4, 2), (4, 9)])
    with torch.no_grad():
        query_vectors, query_mask = model.encode_query(*pad(queries[:1], 6))
        doc_vectors, doc_mask = model.encode_passages(*pad(docs))
        stored = model.score_stored(query_vectors, query_mask, doc_vectors, doc_mask)
        match = kernels.cosine_match_matrix(query_vectors.expand(4, -1, -1), doc_vectors, query_mask.expand(4, -1),
                                            doc_mask)  # fmt: skip
        rows = model.score_rows(match.transpose(1, 2)[doc_mask], doc_mask.sum(dim=1), query_mask[0])
    assert rows.shape == (4,) and torch.allclose(rows, stored, rtol=1e-5, atol=1e-5)
