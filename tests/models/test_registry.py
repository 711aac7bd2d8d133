"""The model registry (``lib.models.registry``): every model builds and scores, labels, unknown names."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import BertForMaskedLM

from lib.models.paper_size import ARCHITECTURES
from lib.models.registry import MODELS, label, model_spec
from lib.representations.bert import small_bert_config
from tests.models.helpers import VOCAB, pad, random_pairs


@pytest.fixture(scope="module")
def bert_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bert")
    BertForMaskedLM(small_bert_config(vocab_size=3000, layers=6, hidden=32, heads=2, intermediate=64)).save_pretrained(
        folder
    )
    return folder


@pytest.mark.parametrize("name", list(MODELS))
def test_every_registered_model_builds_and_scores_a_batch(name: str, bert_folder: Path) -> None:
    spec = model_spec(name)
    torch.manual_seed(0)
    model = spec.build(bert_folder, num_layers=1) if spec.family == "wordpiece" else spec.build(torch.randn(VOCAB, 10))
    queries, docs = random_pairs([(3, 12), (2, 7), (4, 20)])
    scores = model.eval()(*pad(queries), *pad(docs))
    assert scores.shape == (3,) and torch.isfinite(scores).all()
    grouped = {id(p) for group in model.optimizer_groups() for p in group["params"]}
    assert grouped == {id(p) for p in model.parameters() if p.requires_grad}


def test_labels_are_unique_and_paper_architectures_exist() -> None:
    labels = [spec.label for spec in MODELS.values()]
    assert len(set(labels)) == len(labels)
    assert label("tk2") == "TK-2" and label("bert-cat") == "BERT-cat"
    assert all(spec.paper_architecture in (*ARCHITECTURES, None) for spec in MODELS.values())
    assert [name for name, spec in MODELS.items() if spec.zero_shot] == ["bi-encoder"]
    assert all(spec.name == name for name, spec in MODELS.items())


def test_tk_width_follows_the_embeddings_and_keeps_the_papers_sizes_at_300d() -> None:
    narrow = model_spec("tk2").build(torch.randn(VOCAB, 50))
    paper = model_spec("tk2").build(torch.randn(VOCAB, 300))
    first = narrow.contextualiser.layers[0]
    assert (first.attention.num_heads, first.attention.head_dim, first.ff[0].out_features) == (5, 10, 100)
    first = paper.contextualiser.layers[0]
    assert (first.attention.num_heads, first.attention.head_dim, first.ff[0].out_features) == (16, 32, 100)
    assert len(narrow.contextualiser.layers) == 2


def test_an_unknown_model_is_an_error_listing_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown model 'tk9'.*tk2"):
        model_spec("tk9")


def test_the_kernel_pooling_baselines_score_without_tanh_so_they_can_reach_a_teachers_margins() -> None:
    embeddings = torch.randn(6, 8, generator=torch.Generator().manual_seed(0))
    for name in ("knrm", "conv-knrm"):
        model = model_spec(name).build(embeddings)
        assert model.use_tanh is False and model.dense.bias is None, name
        with torch.no_grad():
            model.dense.weight.fill_(1000.0)
        ids, mask = torch.tensor([[2, 3, 4]]), torch.ones(1, 3, dtype=torch.bool)
        assert model(ids, mask, ids, mask).abs().item() > 1.0, f"{name}: the score is not bounded by tanh"
