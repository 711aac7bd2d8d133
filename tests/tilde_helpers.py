"""Shared builders of the TILDE tests: a tiny BERT on the real vocabulary, a hand-made index."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from transformers import BertForMaskedLM, BertModel

from lib.models.tilde import Tilde
from lib.models.tilde_v2 import TildeV2
from lib.models.tilde_vocabulary import TargetVocabulary
from lib.representations.bert import small_bert_config
from lib.reranking.tilde_index import TildeIndex, load_index, write_index

#: The tiny BERT's positions; passages are cut to fit.
POSITIONS = 64


def tiny_bert(vocab_size: int = 30522, seed: int = 0) -> BertForMaskedLM:
    """A randomly initialised 2-layer, 32-wide BERT with the LM head (seconds to train on one core)."""
    torch.manual_seed(seed)
    config = small_bert_config(
        vocab_size=vocab_size, layers=2, hidden=32, heads=2, intermediate=64, max_position=POSITIONS
    )
    return BertForMaskedLM(config)


def tiny_tilde(vocab_size: int = 30522, seed: int = 0) -> Tilde:
    return Tilde(tiny_bert(vocab_size, seed), max_passage_length=POSITIONS - 2, max_query_length=16)


def hand_index(folder: Path, seed: int = 0) -> tuple[TildeIndex, np.ndarray, list[np.ndarray]]:
    """An index of 3 passages over an 8-piece vocabulary whose pieces 0 and 5 are removed."""
    keep = np.array([False, True, True, True, True, False, True, True])
    vocabulary = TargetVocabulary("cleaned", keep)
    rng = np.random.default_rng(seed)
    log_probs = np.log(rng.uniform(0.01, 0.99, size=(3, 8))).astype(np.float16)
    terms = [np.array([1, 2, 2, 7]), np.array([], dtype=np.int64), np.array([3])]
    write_index(folder, ["p1", "p2", "p3"], [(log_probs[:2], terms[:2]), (log_probs[2:], terms[2:])], vocabulary)
    return load_index(folder), log_probs, terms


def tiny_tilde_v2(seed: int = 0) -> TildeV2:
    """TILDEv2 on a randomly initialised 2-layer, 32-wide BERT encoder over the real vocabulary."""
    torch.manual_seed(seed)
    config = small_bert_config(layers=2, hidden=32, heads=2, intermediate=64, max_position=POSITIONS)
    return TildeV2(BertModel(config, add_pooling_layer=False), max_passage_length=POSITIONS - 2)
