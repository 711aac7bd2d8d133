"""Static word-piece vectors distilled from a BERT's outputs (``lib.representations.piece_vectors``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from sklearn.decomposition import PCA
from transformers import BertForMaskedLM

from lib.representations import piece_vectors as module
from lib.representations.bert import CLS_ID, SEP_ID, load_bert, load_tokenizer, small_bert_config
from lib.representations.pretrained import minilm_folder

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bert")
    torch.manual_seed(0)
    config = small_bert_config(vocab_size=120, layers=1, hidden=16, heads=2, intermediate=32)
    BertForMaskedLM(config).save_pretrained(folder)
    return folder


def test_a_piece_output_is_the_mean_of_the_berts_three_output_vectors(tiny_bert: Path) -> None:
    outputs = module.piece_outputs(tiny_bert, batch_size=7, progress=False)
    bert = load_bert(tiny_bert).eval()
    with torch.no_grad():
        by_hand = bert(input_ids=torch.tensor([[CLS_ID, 111, SEP_ID]])).last_hidden_state.mean(dim=1)[0]
    assert outputs.shape == (120, 16)
    torch.testing.assert_close(outputs[111], by_hand)
    chosen = module.piece_outputs(tiny_bert, pieces=[111, 5], progress=False)
    torch.testing.assert_close(chosen, outputs[[111, 5]])


def test_principal_components_match_sklearns_pca_up_to_sign_and_zero_the_padding_row() -> None:
    generator = torch.Generator().manual_seed(3)
    vectors = torch.randn(200, 12, generator=generator) @ torch.randn(12, 12, generator=generator)
    projected = module.principal_components(vectors, 4)
    reference = PCA(n_components=4).fit(vectors[1:].numpy()).transform(vectors[1:].numpy())
    signs = np.sign((projected[1:].numpy() * reference).sum(axis=0))
    np.testing.assert_allclose(projected[1:].numpy(), reference * signs, atol=1e-4)
    assert torch.count_nonzero(projected[0]) == 0
    variances = projected[1:].var(dim=0)
    assert torch.all(variances[:-1] >= variances[1:])
    torch.testing.assert_close(module.principal_components(vectors, 4), projected)
    with pytest.raises(ValueError, match="'dim' must be in 1..12"):
        module.principal_components(vectors, 13)


def test_piece_vectors_are_computed_once_then_read_from_the_cache(
    tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "pieces.npy"
    first = module.piece_vectors(tiny_bert, cache, dim=8, progress=False)
    assert first.shape == (120, 8) and cache.is_file()

    def never(*_args, **_kwargs):
        raise AssertionError("the cached vectors were computed again")

    monkeypatch.setattr(module, "piece_outputs", never)
    torch.testing.assert_close(module.piece_vectors(tiny_bert, cache, dim=8), first)
    with pytest.raises(ValueError, match=r"pieces\.npy: 8-d piece vectors, but 4-d"):
        module.piece_vectors(tiny_bert, cache, dim=4)
    monkeypatch.undo()
    cache.write_bytes(cache.read_bytes()[:100])  # truncated: set aside with a warning, computed again
    with pytest.warns(UserWarning, match=r"pieces\.npy: a cache of piece vectors .* moved aside"):
        torch.testing.assert_close(module.piece_vectors(tiny_bert, cache, dim=8, progress=False), first)
    assert (tmp_path / "pieces.npy.broken").is_file()


def test_minilms_piece_outputs_put_a_word_near_its_relatives_not_near_unrelated_words() -> None:
    tokenizer = load_tokenizer(minilm_folder())
    words = ["flight", "flights", "airplane", "receptor", "ligand", "president"]
    ids = [tokenizer.pieces([word])[0][0] for word in words]
    vectors = F.normalize(module.piece_outputs(minilm_folder(), pieces=ids, progress=False), dim=-1)
    similarity = vectors @ vectors.T
    assert similarity[0, 1] > similarity[0, 3] and similarity[0, 2] > similarity[0, 5]
    assert similarity[3, 4] > similarity[3, 0]
