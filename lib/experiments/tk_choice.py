"""The TK that later chapters study: chapter 2 chooses it on validation alone, among every TK it trained.

Chapter 2 trains TK on word vectors, on static word pieces and on a BERT's first layers
(:mod:`lib.models.tk_bert`); which of them chapters 3, 4, 5, 7 and 8 study is decided by the best validation
measure (the profile's validation set, never a test year). :func:`choose_tk` makes the choice and
:func:`write_choice` records it, with every TK's validation measure, for
:func:`lib.experiments.artifacts.chosen_tk` to read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from lib.core.atomic import write_json
from lib.models.registry import model_spec


def is_tk(name: str) -> bool:
    """Whether registry model ``name`` is a TK (on word vectors, pieces or a BERT's layers): the registry names
    every TK ``tk…`` (``tk2``, ``tk2-pieces``, ``tk-bert2``, ``tk2-sparse``)."""
    return name.startswith("tk") and not model_spec(name).zero_shot


def is_sparse(name: str) -> bool:
    """Whether registry model ``name`` is a TK with TK-Sparse's stopword gate: the registry names each ``…-sparse``."""
    return is_tk(name) and name.endswith("-sparse")


def choose_tk(validation: Mapping[str, float]) -> str:
    """The TK that later chapters study: the TK of ``validation`` (model → best validation measure) with the
    highest value, by validation alone (no test year). A TK with a stopword gate (:func:`is_sparse`) is not a
    candidate: it is a compact index of its TK, studied as one (chapters 3 and 8), and later chapters read every
    term's kernels. No TK with a finite value is a ``ValueError``."""
    candidates = {
        name: value
        for name, value in validation.items()
        if is_tk(name) and not is_sparse(name) and not math.isnan(value)
    }
    if not candidates:
        raise ValueError(f"no trained TK among {sorted(validation)}: chapter 2 trains at least one to choose from")
    return max(candidates, key=lambda name: (candidates[name], name))


def write_choice(path: Path, chosen: str, validation: Mapping[str, float], metric: str) -> None:
    """Record the chosen TK (:func:`choose_tk`) and every TK's best validation ``metric`` (JSON, atomically):
    what :func:`lib.experiments.artifacts.chosen_tk` gives later chapters."""
    candidates = {name: float(value) for name, value in validation.items() if is_tk(name)}
    write_json(path, {"model": chosen, "metric": metric, "validation": candidates})
