"""How chapters show a table: without pandas' row numbers (0, 1, 2, … carry nothing) and with floats rounded."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from pandas.io.formats.style import Styler


def plain(frame: pd.DataFrame | Any, precision: int = 4, decimals: Mapping[str, int] | None = None) -> Styler | Any:
    """``frame`` for display: its index hidden, floats shown with ``precision`` decimals (a column of ``decimals``
    with its own), NaN as an empty cell. Anything else — the note a chapter shows where its data lack a table — is
    shown as it is."""
    if not isinstance(frame, pd.DataFrame):
        return frame
    formats = {column: f"{{:,.{places}f}}" for column, places in (decimals or {}).items() if column in frame}
    return frame.style.hide(axis="index").format(formats, precision=precision, na_rep="", thousands=",")


__all__ = ["plain"]
