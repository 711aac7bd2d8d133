"""TILDE's network (``lib.models.tilde``): marker inputs, the LM head at position 0, sigmoid log-likelihoods."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from lib.models.tilde import PASSAGE_MARKER_ID, QUERY_MARKER_ID, Tilde
from lib.representations.bert import CLS_ID, SEP_ID, WordPieceTokenizer
from tests.tilde_helpers import POSITIONS, tiny_bert, tiny_tilde

VOCAB = 3000


#: Tiny models run as fast on one thread, and a busy machine cannot stall a second one.
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture()
def model() -> Tilde:
    return tiny_tilde(VOCAB).eval()


def test_inputs_are_marker_text_sep_then_padding(model: Tilde) -> None:
    ids, attention = model.inputs([[1500, 1501], [1600], []], "passage")
    assert ids.tolist() == [
        [PASSAGE_MARKER_ID, 1500, 1501, SEP_ID],
        [PASSAGE_MARKER_ID, 1600, SEP_ID, 0],
        [PASSAGE_MARKER_ID, SEP_ID, 0, 0],
    ]
    assert attention.tolist() == [[1, 1, 1, 1], [1, 1, 1, 0], [1, 1, 0, 0]]
    query_ids, _ = model.inputs([[1500, 1501]], "query")
    assert query_ids.tolist() == [[QUERY_MARKER_ID, 1500, 1501, SEP_ID]]
    assert (PASSAGE_MARKER_ID, QUERY_MARKER_ID) == (1, 2)  # [unused0], [unused1] of bert-base-uncased


def test_inputs_are_cut_at_the_caps(model: Tilde) -> None:
    ids, _ = model.inputs([list(range(1000, 1000 + 3 * POSITIONS))], "passage")
    assert ids.shape == (1, POSITIONS) and ids[0, -1] == SEP_ID
    ids, _ = model.inputs([list(range(1000, 1100))], "query")
    assert ids.shape == (1, 16 + 2)


def test_logits_are_the_lm_head_at_position_zero(model: Tilde) -> None:
    ids, attention = model.inputs([[1500, 1501, 1502]], "query")
    with torch.no_grad():
        logits = model(ids, attention)
        expected = model.bert(input_ids=ids, attention_mask=attention).logits[:, 0]
    assert logits.shape == (1, VOCAB) and logits.dtype == torch.float32
    torch.testing.assert_close(logits, expected)


def test_the_direction_changes_only_the_marker(model: Tilde) -> None:
    pieces = [[1500, 1501, 1502]]
    with torch.no_grad():
        passage, query = model.logits(pieces, "passage"), model.logits(pieces, "query")
    assert not torch.allclose(passage, query)
    same = Tilde(model.bert, passage_marker_id=CLS_ID, query_marker_id=CLS_ID, max_passage_length=8)
    with torch.no_grad():
        torch.testing.assert_close(same.logits(pieces, "passage"), same.logits(pieces, "query"))


def test_padding_does_not_change_a_text_s_logits(model: Tilde) -> None:
    with torch.no_grad():
        alone = model.logits([[1600]], "passage")
        batched = model.logits([[1500, 1501, 1502, 1503, 1504], [1600]], "passage")
    torch.testing.assert_close(batched[1:], alone, atol=1e-5, rtol=1e-5)


def test_log_probs_are_log_sigmoid_of_the_logits(raw: Path) -> None:
    tokenizer = WordPieceTokenizer.from_vocab()
    model = tiny_tilde().train()
    texts = ["what is the manhattan project", "wi fi"]
    log_probs = model.log_probs(tokenizer, texts, "passage", batch_size=1)
    assert model.training  # the mode is restored
    model.eval()
    with torch.no_grad():
        expected = torch.nn.functional.logsigmoid(model.logits(tokenizer.pieces(texts), "passage"))
    assert log_probs.shape == (2, 30522) and bool((log_probs < 0).all())
    torch.testing.assert_close(log_probs, expected)


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    model = Tilde(tiny_bert(VOCAB), passage_marker_id=5, query_marker_id=6, max_passage_length=20, max_query_length=7)
    model.save(tmp_path / "tilde")
    loaded = Tilde.load(tmp_path / "tilde").eval()
    assert loaded.settings() == model.settings()
    pieces = [[1500, 1501]]
    with torch.no_grad():
        torch.testing.assert_close(loaded.logits(pieces, "query"), model.eval().logits(pieces, "query"))
    with pytest.raises(FileNotFoundError, match="not a saved TILDE model"):
        Tilde.load(tmp_path)


def test_bad_arguments_are_clear_errors(model: Tilde) -> None:
    with pytest.raises(ValueError, match="'direction'"):
        model.inputs([[1]], "document")
    with pytest.raises(ValueError, match="'max_passage_length'"):
        Tilde(tiny_bert(VOCAB), max_passage_length=POSITIONS)
    with pytest.raises(ValueError, match="'query_marker_id'"):
        Tilde(tiny_bert(VOCAB), max_passage_length=8, query_marker_id=VOCAB)
    with pytest.raises(TypeError, match="'bert'"):
        Tilde(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match="'texts'"):
        model.log_probs(None, "one string", "query")


def test_head_alone_unties_the_decoder_and_freezes_the_encoder(tmp_path: Path) -> None:
    model = tiny_tilde(VOCAB)
    embeddings = model.bert.bert.embeddings.word_embeddings.weight
    assert model.decoder_tied
    trainable = model.train_only_top(0)
    decoder = model.bert.cls.predictions.decoder.weight
    assert not model.decoder_tied and torch.equal(decoder, embeddings)
    head = {id(p) for p in model.bert.cls.parameters()}
    assert {id(p) for p in trainable} == head and decoder.requires_grad and not embeddings.requires_grad
    assert not any(p.requires_grad for p in model.bert.bert.parameters())
    with torch.no_grad():
        decoder.add_(1.0)  # the decoder learns apart from the input embeddings, and keeps it when saved
    model.save(tmp_path / "tilde")
    loaded = Tilde.load(tmp_path / "tilde")
    assert not loaded.decoder_tied
    torch.testing.assert_close(loaded.bert.cls.predictions.decoder.weight, decoder)
    torch.testing.assert_close(loaded.bert.bert.embeddings.word_embeddings.weight, embeddings)
    with pytest.raises(ValueError, match="'layers'"):
        model.train_only_top(-1)


def test_logits_are_the_head_on_the_pooled_vectors(model: Tilde) -> None:
    pieces = [[1500, 1501, 1502], [1600]]
    pooled = model.pooled(pieces, "passage", batch_size=1)
    assert pooled.shape == (2, model.bert.config.hidden_size)
    with torch.no_grad():
        torch.testing.assert_close(model.head(pooled), model.logits(pieces, "passage"))
