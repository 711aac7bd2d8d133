"""The ablation's TILDE variants (``lib.training.tilde_variants``): names, labels, and training them from one BERT."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import BertForMaskedLM

from lib import data
from lib.models.tilde import Tilde
from lib.representations.bert import WordPieceTokenizer, small_bert_config
from lib.training.tilde import TildeTrainingConfig, relevant_pairs
from lib.training.tilde_variants import MAIN_VARIANT, VARIANTS, Variant, check_variants, train_variants

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_the_variants_cover_the_papers_table_3_rows() -> None:
    assert VARIANTS[MAIN_VARIANT] == Variant("biqdl", "cleaned")
    pairs = {(v.loss, v.vocabulary) for v in VARIANTS.values()}
    assert {("ql", "full"), ("ql", "cleaned"), ("dl", "cleaned"), ("biqdl", "cleaned")} <= pairs
    assert Variant("ql", "cleaned").label == "L_QL"
    assert Variant("biqdl", "full").label == "L_BiQDL (full vocabulary)"


def test_check_variants_puts_the_papers_model_first_and_names_bad_input() -> None:
    assert check_variants(["ql", "biqdl", "ql"]) == ["biqdl", "ql"]
    with pytest.raises(ValueError, match="'variants'.*'softmax'"):
        check_variants(["biqdl", "softmax"])
    with pytest.raises(ValueError, match="must include the paper's model"):
        check_variants(["ql", "dl"])


def test_every_variant_starts_from_the_same_bert_and_a_finished_one_is_reused(converted: Path, tmp_path: Path) -> None:
    torch.manual_seed(0)
    config = small_bert_config(layers=1, hidden=32, heads=2, intermediate=64, max_position=256)
    BertForMaskedLM(config).save_pretrained(tmp_path / "bert")
    tokenizer = WordPieceTokenizer.from_vocab()
    texts = data.load_collection("v1")
    pairs = relevant_pairs(data.load_qrels("dl20"), texts)[:8]
    config = TildeTrainingConfig(steps=2, batch_size=4, lr=1e-3, seed=1, device="cpu", progress=False)
    results = train_variants(
        ["ql", "biqdl"],
        lambda: Tilde(tmp_path / "bert"),
        tokenizer,
        pairs,
        data.load_queries("dl20"),
        texts,
        tmp_path / "m",
        config,
    )
    assert list(results) == ["biqdl", "ql"]
    assert results["biqdl"].params["initial_weights_sha256"] == results["ql"].params["initial_weights_sha256"]
    assert (results["biqdl"].params["loss"], results["ql"].params["loss"]) == ("biqdl", "ql")
    assert all((tmp_path / "m" / name / "training.json").is_file() for name in ("biqdl", "ql"))
    again = train_variants(
        ["biqdl"],
        lambda: Tilde(tmp_path / "bert"),
        tokenizer,
        pairs,
        data.load_queries("dl20"),
        texts,
        tmp_path / "m",
        config,
    )
    assert again["biqdl"].steps_run == 0 and again["biqdl"].losses == results["biqdl"].losses
