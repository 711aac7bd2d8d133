"""Fixtures shared by the model tests."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import BertForMaskedLM

from lib.representations.bert import small_bert_config


@pytest.fixture(scope="session")
def bert_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny three-layer BERT with a masked-LM head, saved as a pre-trained folder (the TK-BERT family starts from
    one)."""
    folder = tmp_path_factory.mktemp("bert")
    torch.manual_seed(0)
    BertForMaskedLM(small_bert_config(vocab_size=120, layers=3, hidden=32, heads=2, intermediate=64)).save_pretrained(
        folder
    )
    return folder
