"""Chapters' tables: no row numbers, rounded floats."""

from __future__ import annotations

import math

import pandas as pd

from lib.chapters.tables import plain


def test_a_plain_table_hides_the_row_numbers_and_rounds() -> None:
    html = plain(
        pd.DataFrame({"model": ["TK-2", "BM25"], "nDCG@10": [0.512345, math.nan], "ms": [1234.5, 2.0]})
    ).to_html()
    assert "0.5123" in html and "0.512345" not in html and "1,234.5000" in html
    assert 'class="row_heading' not in html  # the index is hidden
