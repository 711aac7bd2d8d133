"""Chapter 6's table of chapter 3's latencies (``lib.chapters.tilde_latencies``)."""

from __future__ import annotations

import pandas as pd

from lib.chapters.tilde_latencies import paper_size_latencies


def test_paper_size_latencies_keep_bert_base_bert_large_and_tk2() -> None:
    row = {"label": "x", "latency_100_ms": 1.0, "latency_100_measured": True, "latency_1000_ms": 10.0,
           "latency_1000_measured": False, "device": "cpu"}  # fmt: skip
    speed = {"results": [{**row, "model": m, "label": m.upper()} for m in ("knrm", "tk2", "bert-base", "bert-large")]}
    table = paper_size_latencies(speed)
    assert table["model (chapter 3, random weights)"].tolist() == ["TK2", "BERT-BASE", "BERT-LARGE"]
    assert isinstance(table, pd.DataFrame) and table["ms for 1,000"].tolist() == [10.0] * 3
