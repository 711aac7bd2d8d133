"""TILDE's losses (``lib.training.tilde_losses``): eq. 7's vocabulary-wide binary cross-entropy and BiQDL (eq. 8)."""

from __future__ import annotations

import math

import pytest
import torch

from lib.training.tilde_losses import biqdl_loss, dl_loss, ql_loss, vocabulary_bce

LN2, LN3 = math.log(2), math.log(3)
#: A 4-piece vocabulary whose piece 2 is a stopword: |V| = 3.
KEEP = torch.tensor([True, True, False, True])
#: Two pairs. σ(0) = 1/2, σ(ln 3) = 3/4, σ(-ln 3) = 1/4; the logits at the stop id are arbitrary.
LOGITS = torch.tensor([[0.0, LN3, 5.0, -LN3], [LN3, 0.0, -7.0, 0.0]])
#: The targets; the 1 at the stop id of the second row must be ignored.
TARGETS = torch.tensor([[1.0, 0.0, 0.0, 1.0], [0.0, 1.0, 1.0, 0.0]])


def test_loss_equals_the_hand_computed_value() -> None:
    # Pair 1: -[log ½ + log(1 - ¾) + log ¼] / 3 = (ln 2 + ln 4 + ln 4) / 3 = 5 ln 2 / 3.
    # Pair 2: -[log(1 - ¾) + log ½ + log(1 - ½)] / 3 = (ln 4 + ln 2 + ln 2) / 3 = 4 ln 2 / 3.
    per_pair = vocabulary_bce(LOGITS, TARGETS, KEEP)
    torch.testing.assert_close(per_pair, torch.tensor([5 * LN2 / 3, 4 * LN2 / 3]))
    torch.testing.assert_close(ql_loss(LOGITS, TARGETS, KEEP), torch.tensor(3 * LN2))  # summed over the pairs (eq. 7)


def test_stop_ids_never_count() -> None:
    other_logits, other_targets = LOGITS.clone(), TARGETS.clone()
    other_logits[:, 2] = torch.tensor([-30.0, 30.0])
    other_targets[:, 2] = torch.tensor([1.0, 0.0])
    torch.testing.assert_close(vocabulary_bce(other_logits, other_targets, KEEP), vocabulary_bce(LOGITS, TARGETS, KEEP))
    everything = vocabulary_bce(LOGITS, TARGETS, torch.ones(4, dtype=torch.bool))
    assert not torch.allclose(everything, vocabulary_bce(LOGITS, TARGETS, KEEP))  # the full vocabulary differs


def test_biqdl_is_the_mean_of_the_two_directions() -> None:
    query_logits = torch.tensor([[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])  # every σ = ½: ℓ = ln 2 per pair
    passage_targets = torch.tensor([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    torch.testing.assert_close(dl_loss(query_logits, passage_targets, KEEP), torch.tensor(2 * LN2))
    total = biqdl_loss(LOGITS, query_logits, TARGETS, passage_targets, KEEP)
    torch.testing.assert_close(total, torch.tensor((3 * LN2 + 2 * LN2) / 2))


def test_the_loss_has_gradients_and_checks_shapes() -> None:
    logits = LOGITS.clone().requires_grad_()
    ql_loss(logits, TARGETS, KEEP).backward()
    assert logits.grad is not None and bool((logits.grad[:, 2] == 0).all())  # no gradient at the stop id
    with pytest.raises(ValueError, match="shapes differ"):
        vocabulary_bce(LOGITS, TARGETS[:, :3], KEEP)
