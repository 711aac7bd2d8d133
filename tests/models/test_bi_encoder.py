"""The bi-encoder (``lib.models.bi_encoder``) and BERT-cat on all-MiniLM-L6-v2, loaded with no network."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional

from lib.models.bert_cat import BertCat
from lib.models.bi_encoder import BiEncoder, wrap
from lib.representations.bert import WordPieceTokenizer
from lib.representations.pretrained import minilm_folder

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def tokenizer(raw) -> WordPieceTokenizer:
    return WordPieceTokenizer.from_vocab()


@pytest.fixture(scope="module")
def model(monkeypatch_module) -> BiEncoder:
    return BiEncoder(minilm_folder()).eval()


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setenv("TRANSFORMERS_OFFLINE", "1")
        yield patch


def test_wrap_adds_cls_and_sep_around_the_real_pieces() -> None:
    ids = torch.tensor([[5, 6, 0], [7, 0, 0]])
    wrapped, attention = wrap(ids, ids != 0)
    assert wrapped.tolist() == [[101, 5, 6, 102, 0], [101, 7, 102, 0, 0]]
    assert attention.tolist() == [[1, 1, 1, 1, 0], [1, 1, 1, 0, 0]]


def test_score_is_the_cosine_of_the_mean_pooled_vectors(model: BiEncoder, tokenizer: WordPieceTokenizer) -> None:
    queries = ["what is a kernel in ranking", "who wrote hamlet"]
    passages = ["Kernel pooling counts soft matches between query and document terms.", "Hamlet is a tragedy."]
    query_ids, query_mask = tokenizer.encode(queries, 30)
    doc_ids, doc_mask = tokenizer.encode(passages, 200)
    with torch.inference_mode():
        scores = model(query_ids, query_mask, doc_ids, doc_mask)
        by_hand = functional.cosine_similarity(model.encode(query_ids, query_mask), model.encode(doc_ids, doc_mask))
        padded = model(*tokenizer.encode(queries, 30), *(t for t in _pad(doc_ids, doc_mask, 7)))
    assert torch.allclose(scores, by_hand, atol=1e-6)
    assert torch.allclose(scores, padded, atol=1e-5), "extra padding leaves the scores unchanged"
    swapped = model(query_ids, query_mask, doc_ids.flip(0), doc_mask.flip(0))
    assert scores[0] > swapped[0] and scores[1] > swapped[1], "each query prefers its own passage"


def test_vectors_equal_sentence_transformers_own_encoding_truncation_included(
    model: BiEncoder, tokenizer: WordPieceTokenizer
) -> None:
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(minilm_folder()), device="cpu")
    reference.max_seq_length = 200 + 2  # the book's 200 passage pieces plus [CLS] and [SEP]
    texts = ["what is a kernel in ranking", "Naïve café owners of the 1990s, re-ranking!", "kernel pooling " * 150]
    with torch.inference_mode():
        expected = reference.encode(texts, convert_to_tensor=True, normalize_embeddings=True)
        ours = functional.normalize(model.encode(*tokenizer.encode(texts, 200)), dim=-1)
    assert tokenizer.encode(texts, 200)[1].sum(dim=1).tolist()[2] == 200, "the long text is cut"
    assert torch.allclose(ours, expected, atol=1e-5)


def _pad(ids: torch.Tensor, mask: torch.Tensor, extra: int):
    return (
        torch.cat([ids, torch.zeros(ids.shape[0], extra, dtype=ids.dtype)], dim=1),
        torch.cat([mask, torch.zeros(mask.shape[0], extra, dtype=mask.dtype)], dim=1),
    )


def test_bert_cat_starts_from_minilm_offline_with_fewer_layers(monkeypatch_module, tokenizer) -> None:
    full = BertCat(minilm_folder())
    assert len(full.bert.encoder.layer) == 6 and full.bert.config.hidden_size == 384
    cut = BertCat(minilm_folder(), num_layers=2)
    assert len(cut.bert.encoder.layer) == 2 and cut.bert.config.num_hidden_layers == 2
    query_ids, query_mask = tokenizer.encode(["what is a kernel"], 30)
    doc_ids, doc_mask = tokenizer.encode(["Kernel pooling counts soft matches."], 200)
    assert cut.eval()(query_ids, query_mask, doc_ids, doc_mask).shape == (1,)
    with pytest.raises(ValueError, match="'num_layers'"):
        BertCat(minilm_folder(), num_layers=7)
