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
    assert page_numbers_rows(html) is False


def test_a_note_in_a_tables_place_is_shown_as_it_is() -> None:
    note = "no table: the data folder lacks it"
    assert plain(note) is note


def test_columns_may_keep_their_own_decimals() -> None:
    frame = pd.DataFrame({"bytes": [65216.58, math.nan], "nDCG@10": [0.62345, 0.5], "ms": [15.06, 9.85]})
    html = plain(frame, precision=1, decimals={"bytes": 0, "nDCG@10": 3, "absent": 2}).to_html()
    assert "65,217<" in html and "0.623<" in html and "0.500<" in html and "15.1<" in html and "nan" not in html


def page_numbers_rows(html: str) -> bool:
    """Whether a table's HTML numbers its rows 0, 1, 2, … with an unnamed index (the check of the executed pages)."""
    from tests.chapters.test_pages import numbers_rows

    return numbers_rows(html)


def test_the_pages_check_finds_pandas_row_numbers() -> None:
    frame = pd.DataFrame({"model": ["TK-2", "BM25"], "nDCG@10": [0.5, 0.4]})
    assert page_numbers_rows(frame.to_html()) and page_numbers_rows(frame.style.to_html())
    assert not page_numbers_rows(frame.set_index("model").to_html())
    assert not page_numbers_rows(frame.rename_axis("k").to_html())  # a named index carries something
