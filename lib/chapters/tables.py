"""How chapters show a table: without pandas' row numbers (0, 1, 2, … carry nothing) and with floats rounded."""

from __future__ import annotations

import pandas as pd
from pandas.io.formats.style import Styler


def plain(frame: pd.DataFrame, precision: int = 4) -> Styler:
    """``frame`` for display: its index hidden, floats shown with ``precision`` decimals, NaN as an empty cell."""
    return frame.style.hide(axis="index").format(precision=precision, na_rep="", thousands=",")


__all__ = ["plain"]
