"""Masked-LM pre-training of the small BERT (``lib.training.masked_lm``): pairs, masking, resume, the loss."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import BertForMaskedLM

import lib.training.masked_lm as masked_lm
from lib import data
from lib.representations.bert import (
    CLS_ID,
    MASK_ID,
    SEP_ID,
    WordPieceTokenizer,
    load_bert,
    load_tokenizer,
    small_bert_config,
)
from lib.training.masked_lm import PretrainConfig, mask_tokens, mlm_loss, pair_examples, pretrain_mlm

#: Tiny models run as fast on one thread, and a busy machine cannot stall a second one.
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def tiny_config():
    return small_bert_config(layers=2, hidden=32, heads=2, intermediate=64, max_position=64)


@pytest.fixture(scope="module")
def tokenizer(raw: Path) -> WordPieceTokenizer:
    return WordPieceTokenizer.from_vocab()


@pytest.fixture(scope="module")
def passages(converted: Path) -> list[str]:
    return list(data.load_collection("v1").values())[:300]


def load_bert_untrained():
    torch.manual_seed(0)
    return BertForMaskedLM(tiny_config())


def run(texts, out: Path, tokenizer: WordPieceTokenizer, steps: int = 6, **kwargs):
    kwargs = {"batch_size": 8, "seq_len": 48, "lr": 1e-3, "seed": 11, "device": "cpu", "progress": False, **kwargs}
    return pretrain_mlm(texts, out, PretrainConfig(steps=steps, **kwargs), config=tiny_config(), tokenizer=tokenizer)


def test_pairs_look_like_bert_cat_inputs() -> None:
    pieces = [[5000 + i] * n for i, n in enumerate([3, 40, 7, 2, 9])]
    sequences, first = pair_examples(pieces, seq_len=16, seed=0)
    assert len(sequences) == 3
    for sequence, split in zip(sequences, first, strict=True):
        assert len(sequence) <= 16 and sequence[0] == CLS_ID and sequence[-1] == SEP_ID
        assert sequence[split - 1] == SEP_ID and sequence.count(SEP_ID) in (1, 2)


def test_masking_follows_bert() -> None:
    ids = torch.randint(2000, 30000, (64, 128), generator=torch.Generator().manual_seed(0))
    ids[:, 0], ids[:, 60], ids[:, 100:] = CLS_ID, SEP_ID, 0
    attention = (ids != 0).long()
    masked, labels = mask_tokens(ids, attention, torch.Generator().manual_seed(1), 30522)
    chosen = labels != -100
    candidates = attention.bool() & (ids != CLS_ID) & (ids != SEP_ID)
    assert not (chosen & ~candidates).any()
    assert 0.13 < chosen.sum() / candidates.sum() < 0.17
    assert torch.equal(labels[chosen], ids[chosen])
    as_mask = (masked[chosen] == MASK_ID).float().mean()
    kept = (masked[chosen] == ids[chosen]).float().mean()
    assert 0.75 < as_mask < 0.85 and 0.06 < kept < 0.14
    assert torch.equal(masked[~chosen], ids[~chosen])


def test_pretrained_checkpoint_loads_with_identical_outputs(
    passages: list[str], tokenizer: WordPieceTokenizer, tmp_path: Path
) -> None:
    result = run(passages, tmp_path / "bert", tokenizer, steps=3)
    assert result.complete and len(result.losses) == 3 and result.tokens_per_second > 0
    assert (tmp_path / "bert" / "pretraining.json").is_file() and not (tmp_path / "bert" / "checkpoint.pt").exists()
    ids, mask = tokenizer.encode(["what is a manhattan project", "wi fi"], 30)
    trained = result.model.eval()
    loaded = load_bert(tmp_path / "bert").eval()
    with torch.no_grad():
        expected = trained.bert(input_ids=ids, attention_mask=mask.long()).last_hidden_state
        assert torch.equal(loaded(input_ids=ids, attention_mask=mask.long()).last_hidden_state, expected)
        with_head = load_bert(str(tmp_path / "bert"), lm_head=True).eval()
        assert torch.equal(with_head(input_ids=ids).logits, trained(input_ids=ids).logits)
    assert len(load_tokenizer(tmp_path / "bert")) == 30522
    # A complete folder with the same parameters is reused; other parameters are refused.
    again = run(passages, tmp_path / "bert", tokenizer, steps=3)
    assert again.steps_run == 0 and again.losses == result.losses
    with pytest.raises(ValueError, match="steps: 3 → 4"):
        run(passages, tmp_path / "bert", tokenizer, steps=4, mismatch="error")
    with pytest.warns(UserWarning, match="steps: 3 → 4"):
        retrained = run(passages, tmp_path / "bert", tokenizer, steps=4)
    assert (retrained.resumed_from, retrained.steps_run, len(retrained.losses)) == (0, 4, 4)


def test_resume_after_an_interruption_ends_with_the_uninterrupted_weights(
    passages: list[str], tokenizer: WordPieceTokenizer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = run(passages, tmp_path / "whole", tokenizer, steps=6, checkpoint_every=2)

    calls = {"n": 0}
    original = masked_lm.mask_tokens

    def interrupted(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 5:  # step 5: steps 1–4 ran, checkpoint at step 4
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(masked_lm, "mask_tokens", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run(passages, tmp_path / "cut", tokenizer, steps=6, checkpoint_every=2)
    monkeypatch.setattr(masked_lm, "mask_tokens", original)
    assert (tmp_path / "cut" / "checkpoint.pt").is_file() and not (tmp_path / "cut" / "pretraining.json").exists()
    resumed = run(passages, tmp_path / "cut", tokenizer, steps=6, checkpoint_every=2)
    assert resumed.resumed_from == 4 and resumed.steps_run == 2
    assert resumed.losses == whole.losses
    for (name, left), (_, right) in zip(
        whole.model.state_dict().items(), resumed.model.state_dict().items(), strict=True
    ):
        assert torch.equal(left, right), name

    # stop_after: a deliberate pause, resumed the same way.
    paused = run(passages, tmp_path / "paused", tokenizer, steps=6, checkpoint_every=4, stop_after=3)
    assert not paused.complete and len(paused.losses) == 3
    finished = run(passages, tmp_path / "paused", tokenizer, steps=6, checkpoint_every=4)
    assert finished.resumed_from == 3 and finished.losses == whole.losses


def test_mlm_loss_goes_down_on_real_passages(
    passages: list[str], tokenizer: WordPieceTokenizer, tmp_path: Path
) -> None:
    result = run(passages, tmp_path / "bert", tokenizer, steps=30, lr=5e-3)
    first, last = sum(result.losses[:5]) / 5, sum(result.losses[-5:]) / 5
    assert result.losses[0] == pytest.approx(10.33, abs=0.2)  # ln(30522): uniform at the start
    assert last < first - 1.0
    held_out = passages[-20:]
    loss = mlm_loss(result.model, held_out, tokenizer, seq_len=48)
    assert loss == mlm_loss(result.model, held_out, tokenizer, seq_len=48)  # fixed masks: comparable numbers
    assert loss < 9.5 < mlm_loss(load_bert_untrained(), held_out, tokenizer, seq_len=48)
