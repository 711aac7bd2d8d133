"""BERT-cat's pair vectors (``lib.analyses.pair_vectors``): cosine arithmetic, all-MiniLM-L6-v2's [CLS] by depth."""

from __future__ import annotations

from itertools import islice
from pathlib import Path

import pytest
import torch

from lib.analyses.pair_vectors import mean_pairwise_cosine, pair_vector_similarity, similarity_by_depth
from lib.data.readers import read_collection, read_queries
from lib.models.bert_cat import BertCat
from lib.representations.bert import load_tokenizer
from lib.representations.pretrained import minilm_folder

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_mean_pairwise_cosine_leaves_out_each_vector_with_itself() -> None:
    vectors = torch.tensor([[1.0, 0.0], [0.0, 2.0], [3.0, 0.0]])
    # Pairs: (1,2) cos 0, (1,3) cos 1, (2,3) cos 0 -> mean 1/3; identical rows would give 1.
    assert mean_pairwise_cosine(vectors) == pytest.approx(1 / 3)
    assert mean_pairwise_cosine(torch.ones(4, 3)) == pytest.approx(1.0)


def test_mean_pairwise_cosine_refuses_a_single_vector() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        mean_pairwise_cosine(torch.ones(1, 3))


@pytest.fixture(scope="module")
def real_pairs(converted: Path) -> list[tuple[str, str]]:
    """Eight real (dev-small query, book passage) pairs."""
    queries = list(islice(read_queries(converted / "queries.dev-small.tsv").values(), 8))
    passages = list(islice(read_collection(converted / "collection.tsv").values(), 8))
    return list(zip(queries, passages, strict=True))


def test_minilm_cls_vector_is_the_same_for_every_pair_and_its_mean_is_not(real_pairs) -> None:
    """The finding of chapter 2: the bi-encoder's [CLS] output does not tell pairs apart, its mean does."""
    model = BertCat(minilm_folder(), num_layers=3)
    model.train()
    similarity = pair_vector_similarity(model, load_tokenizer(minilm_folder()), real_pairs, batch_size=3)
    assert similarity["[CLS] vector"] > 0.99
    assert similarity["mean of the output vectors"] < 0.9
    assert model.training  # the model's mode is restored


def test_minilm_cls_vector_differs_only_after_its_last_layer(real_pairs) -> None:
    """After MiniLM's first 1-5 layers [CLS] is the same for every pair; the sixth makes it differ."""
    state = torch.random.get_rng_state()
    table = similarity_by_depth(minilm_folder(), load_tokenizer(minilm_folder()), real_pairs, depths=[3, 5, 6])
    assert torch.equal(torch.random.get_rng_state(), state), "the caller's random state is left alone"
    assert table.index.tolist() == [3, 5, 6]
    assert (table.loc[[3, 5], "[CLS] vector"] > 0.99).all()
    assert table.loc[6, "[CLS] vector"] < 0.9
    assert table.loc[3, "[CLS] vector"] == pytest.approx(
        pair_vector_similarity(BertCat(minilm_folder(), num_layers=3), load_tokenizer(minilm_folder()), real_pairs)[
            "[CLS] vector"
        ]
    )
    with pytest.raises(ValueError, match="'depths'"):
        similarity_by_depth(minilm_folder(), load_tokenizer(minilm_folder()), real_pairs, depths=[0])


def test_pair_vectors_refuse_fewer_than_two_pairs(real_pairs) -> None:
    model = BertCat(minilm_folder(), num_layers=1)
    with pytest.raises(ValueError, match="'pairs'"):
        pair_vector_similarity(model, load_tokenizer(minilm_folder()), real_pairs[:1])
