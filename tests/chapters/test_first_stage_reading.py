"""Chapter 1's reading (``lib.chapters.first_stage_reading``): the published numbers beside the measured ones."""

from __future__ import annotations

import pandas as pd

from lib.chapters.first_stage_reading import published_comparison, published_reading

PUBLISHED = {
    ("dl19", "bm25"): 0.5058,
    ("dl20", "bm25"): 0.4796,
    ("dl19", "bm25-rm3"): 0.5216,
    ("dl20", "bm25-rm3"): 0.4896,
}


def _measured(shift: float = 0.0) -> pd.DataFrame:
    rows = [{"set": s, "system": system, "nDCG@10": value + shift} for (s, system), value in PUBLISHED.items()]
    return pd.DataFrame([*rows, {"set": "dl19", "system": "tas-b", "nDCG@10": 0.7}])


def test_the_comparison_checks_four_places() -> None:
    assert published_comparison(PUBLISHED, _measured(0.00001))["equal to 4 places"].all()
    assert not published_comparison(PUBLISHED, _measured(0.001))["equal to 4 places"].any()
    assert list(published_comparison(PUBLISHED, _measured())["system"]) == ["bm25", "bm25", "bm25-rm3", "bm25-rm3"]


def test_the_reading_quotes_the_measured_values() -> None:
    text = published_reading(published_comparison(PUBLISHED, _measured()))
    assert text.startswith(
        "BM25 reaches nDCG@10 = 0.5058 on DL19 and 0.4796 on DL20, BM25+RM3 0.5216 and 0.4896: the published"
    )
    assert published_reading(None).startswith("Without those scored runs, nothing here is compared")
