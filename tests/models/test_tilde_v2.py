"""TILDEv2 (``lib.models.tilde_v2``): exact-match scoring by hand, weights per passage piece, save and load."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from lib.models.tilde_v2 import TildeV2, exact_match_scores, pad_pieces
from tests.tilde_helpers import tiny_tilde_v2

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_exact_match_takes_each_query_pieces_best_passage_weight_and_sums() -> None:
    doc_ids = torch.tensor([[5, 7, 5, 0], [9, 9, 9, 9]])
    weights = torch.tensor([[1.0, 2.0, 3.0, 0.0], [0.5, 0.25, 0.0, 1.0]])
    query_ids, query_mask = pad_pieces([[5, 7, 5], [9, 4]])
    scores = exact_match_scores(query_ids, query_mask, doc_ids, weights)
    # query 1: 5 → 3 (its best occurrence), 7 → 2, 5 again → 3; passage 2 holds none of them
    # query 2: 9 → 1 in passage 2, 4 nowhere
    assert scores.tolist() == [[8.0, 0.0], [0.0, 1.0]]


def test_pad_pieces_cuts_and_masks() -> None:
    ids, mask = pad_pieces([[1, 2, 3], [4]], cap=2)
    assert ids.tolist() == [[1, 2], [4, 0]] and mask.tolist() == [[True, True], [True, False]]
    assert pad_pieces([[]])[0].shape == (1, 1)


def test_weights_are_non_negative_zero_at_padding_and_independent_of_the_batch() -> None:
    model = tiny_tilde_v2().eval()
    with torch.no_grad():
        ids, weights = model.piece_weights([[2023, 2003, 1037], [3231]])
        _, alone = model.piece_weights([[3231]])
    assert weights.shape == (2, 3) and bool((weights >= 0).all())
    assert weights[1, 1:].tolist() == [0.0, 0.0]
    assert torch.allclose(weights[1, :1], alone[0], atol=1e-6)


def test_train_only_top_freezes_the_embeddings_and_lower_layers(tmp_path: Path) -> None:
    model = tiny_tilde_v2()
    trainable = {id(p) for p in model.train_only_top(1)}
    assert id(model.projection.weight) in trainable and id(model.bert.encoder.layer[1].output.dense.weight) in trainable
    assert id(model.bert.encoder.layer[0].output.dense.weight) not in trainable
    assert id(model.bert.embeddings.word_embeddings.weight) not in trainable
    assert len(model.train_only_top(None)) == len(list(model.parameters()))
    with pytest.raises(ValueError, match="'layers'"):
        model.train_only_top(3)


def test_save_and_load_give_the_same_weights(tmp_path: Path) -> None:
    model = tiny_tilde_v2().eval()
    model.save(tmp_path / "v2")
    loaded = TildeV2.load(tmp_path / "v2").eval()
    with torch.no_grad():
        assert torch.equal(model.piece_weights([[2023, 2003]])[1], loaded.piece_weights([[2023, 2003]])[1])
    with pytest.raises(FileNotFoundError, match="not a saved TILDEv2 model"):
        TildeV2.load(tmp_path)
