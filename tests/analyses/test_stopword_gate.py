"""TK-Sparse's contextualised stopwords (``lib.analyses.stopword_gate``)."""

from __future__ import annotations

import pytest
import torch

from lib.analyses import stopword_gate
from lib.models.tk import TKConfig
from lib.models.tk_sparse import TKSparse
from lib.representations.text import Vocabulary

pytestmark = pytest.mark.usefixtures("one_torch_thread")

#: A one-layer TK small enough for these tests.
TINY_TK = TKConfig(num_layers=1, num_heads=2, head_dim=4, ff_dim=8)


def test_gate_occurrences_and_the_stopword_tables() -> None:
    texts = ["the cat sat on the mat", "the dog and the zebu"]
    vocabulary = Vocabulary.build(texts, min_count=2)  # "cat", "zebu" … map to [UNK] but keep their word
    torch.manual_seed(0)
    model = TKSparse(torch.randn(len(vocabulary), 8), config=TINY_TK).eval()
    assert not torch.isfinite(model.threshold)  # an untrained gate keeps every term
    occurrences = stopword_gate.gate_occurrences(model, vocabulary, texts, 200, batch_size=1)
    assert occurrences["term"].tolist() == "the cat sat on the mat the dog and the zebu".split()
    assert not occurrences["removed"].any()
    occurrences["removed"] = occurrences["term"].isin({"the", "zebu"})
    table = stopword_gate.stopword_table(occurrences, top=2)
    assert table.index.tolist() == ["the", "zebu"]
    assert table.loc["the", "share removed"] == 1.0 and table.loc["the", "NLTK stopword"]
    overlap = stopword_gate.stopword_overlap(occurrences)
    assert overlap["removed"] == pytest.approx(5 / 11)
    assert overlap["removed that are NLTK stopwords"] == pytest.approx(4 / 5)
    assert overlap["NLTK stopwords removed"] == pytest.approx(4 / 6)


def test_the_verdict_names_a_collapsed_an_idle_an_identical_and_an_overlapping_gate() -> None:
    def overlap(removed: float, removed_listed: float, listed_removed: float) -> dict[str, float]:
        return {
            "removed": removed, "NLTK stopwords": 0.4, "removed that are NLTK stopwords": removed_listed,
            "NLTK stopwords removed": listed_removed,
        }  # fmt: skip

    assert "collapsed" in stopword_gate.gate_verdict(overlap(1.0, 0.4, 1.0))
    assert "no word" in stopword_gate.gate_verdict(overlap(0.0004, 1.0, 0.001))
    assert stopword_gate.gate_verdict(overlap(0.4, 1.0, 1.0)) == "removes exactly the listed stopwords"
    assert "overlap without being the same" in stopword_gate.gate_verdict(overlap(0.3, 0.8, 0.6))
