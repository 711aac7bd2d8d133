"""Random-weight models of the paper's sizes: the right shapes, and they score real-shaped batches."""

from __future__ import annotations

import pytest
import torch

from lib.models.bert_cat import BertCat
from lib.models.paper_size import (
    ARCHITECTURES,
    WORD_DIM,
    architecture,
    bert_config,
    build_timing_model,
    parameter_count,
)
from lib.models.tk import TK
from tests.models.helpers import pad, random_pairs


def test_bert_shapes_are_the_papers() -> None:
    base, large = bert_config("bert-base"), bert_config("bert-large")
    assert (base.num_hidden_layers, base.hidden_size, base.num_attention_heads, base.intermediate_size) == (
        12, 768, 12, 3072,
    )  # fmt: skip
    assert (large.num_hidden_layers, large.hidden_size, large.num_attention_heads, large.intermediate_size) == (
        24, 1024, 16, 4096,
    )  # fmt: skip
    assert base.vocab_size == large.vocab_size == 30522
    assert bert_config("bert-cat-book").num_hidden_layers == 2
    with pytest.raises(ValueError, match="not a BERT"):
        bert_config("tk2")


def test_bert_base_has_bert_base_parameter_count() -> None:
    model = build_timing_model("bert-base")
    assert isinstance(model, BertCat) and not model.training
    # bert-base-uncased without its pooler: 108.9M parameters, plus the 769 of the scoring layer
    assert 108_800_000 < parameter_count(model) < 109_000_000


@pytest.mark.parametrize("layers", [1, 2, 3])
def test_tk_sizes(layers: int) -> None:
    model = build_timing_model(f"tk{layers}", vocab_size=100)
    assert isinstance(model, TK)
    assert len(model.contextualiser.layers) == layers
    assert model.embedding.weight.shape == (100, WORD_DIM)


@pytest.mark.parametrize("name", ["knrm", "conv-knrm", "tk1", "bert-cat-book"])
def test_every_small_architecture_scores_a_batch(name: str) -> None:
    model = build_timing_model(name, vocab_size=50)
    queries, docs = random_pairs([(3, 9), (2, 4)])
    with torch.inference_mode():
        scores = model(*pad(queries), *pad(docs))
    assert scores.shape == (2,) and torch.isfinite(scores).all()


def test_builds_are_seeded_and_names_checked() -> None:
    one, two = build_timing_model("knrm", vocab_size=30, seed=3), build_timing_model("knrm", vocab_size=30, seed=3)
    assert torch.equal(one.embedding.weight, two.embedding.weight)
    with pytest.raises(ValueError, match="unknown architecture 'tk9'"):
        architecture("tk9")
    with pytest.raises(ValueError, match="vocab_size"):
        build_timing_model("tk1", vocab_size=1)
    assert {spec.family for spec in ARCHITECTURES.values()} == {"word", "wordpiece"}
