"""Several inits of one model: the one kept is the best on validation.

The TU Wien TREC 2019 notebook's TUW19-p1 (Hofstätter, Zlabinger, Hanbury, §3.2) is TK's "best validation
run of multiple inits": among models trained from several seeds, the one with the best value of the
measure early stopping watches.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import TypeVar

Init = TypeVar("Init", bound=Hashable)


def best_init(validation: Mapping[Init, float]) -> Init:
    """The init with the best validation value (the first on ties, in the mapping's order)."""
    if not validation:
        raise ValueError("no init to choose from: parameter 'validation' is empty")
    return max(validation, key=lambda name: (validation[name], -list(validation).index(name)))
