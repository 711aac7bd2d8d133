"""The choice among inits (``lib.experiments.init_selection``)."""

from __future__ import annotations

import pytest

from lib.experiments.init_selection import best_init


def test_best_init_takes_the_best_validation_value_and_the_first_on_ties() -> None:
    assert best_init({1: 0.30, 2: 0.41, 3: 0.35}) == 2
    assert best_init({7: 0.5, 3: 0.5}) == 7
    with pytest.raises(ValueError, match="empty"):
        best_init({})
